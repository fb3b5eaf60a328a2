"""Hypothesis settings (seeded and without deadlines, so runs are deterministic on a busy machine) and the
fixtures many test files share."""

import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from helpers import SMALL
from sova.service import natsd
from sova.service.natsd import NatsServer

settings.register_profile("sova", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("sova")


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """helpers.SMALL written to a scenario file."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


@pytest.fixture
def nats_server(tmp_path):
    """A real nats-server with JetStream, on a free port, stopped by its PID after the test."""
    if natsd.binary() is None:
        pytest.skip("needs nats-server (as root, `make` installs it)")
    server = NatsServer(tmp_path / "nats").start()
    yield server
    server.stop()
    assert server.process.poll() is not None  # stopped by its PID, nothing left running


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path):
    """Debian's Chromium, headless, driven by Selenium through chromedriver (never a downloaded one)."""
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("needs Chromium and chromedriver (as root, `make` installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium'}")
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()
