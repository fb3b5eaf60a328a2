"""The knowledge: scenario specs, topology and routing, snapshots, actions."""
