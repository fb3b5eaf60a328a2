"""The built-in data-center simulator: a time-stepped fluid model, deterministic per seed."""
