"""Policies (planners): turn the Knowledge into plans of typed actions."""
