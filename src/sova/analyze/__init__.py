"""Analyzers: turn metric history into findings (loads, hotspots, forecasts)."""
