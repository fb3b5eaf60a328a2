"""Hypothesis settings (seeded, no deadline) and fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from helpers import TRACES

settings.register_profile("sova", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("sova")


@pytest.fixture
def traces() -> Path:
    if not TRACES.exists():
        pytest.skip("the shared traces are not beside this checkout (../shared/traces)")
    return TRACES
