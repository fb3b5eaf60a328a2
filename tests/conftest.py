"""Hypothesis settings (seeded and without deadlines, so runs are deterministic on a busy machine) and the
fixtures many test files share."""

from pathlib import Path

import pytest
from hypothesis import settings

from helpers import SMALL

settings.register_profile("sova", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("sova")


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """helpers.SMALL written to a scenario file."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path
