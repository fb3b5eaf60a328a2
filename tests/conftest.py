"""Hypothesis settings: seeded and without deadlines, so runs are deterministic on a busy machine."""

from hypothesis import settings

settings.register_profile("sova", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("sova")
