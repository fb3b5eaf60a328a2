"""Hypothesis settings (seeded and without deadlines, so runs are deterministic on a busy machine) and the
fixtures many test files share."""

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import settings

from helpers import SMALL
from postgres_server import PostgresServer, binaries
from sova.service import natsd
from sova.service.nats_cluster import NatsCluster
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
        pytest.fail("needs nats-server, which `make` installs (as root): run make test")
    server = NatsServer(tmp_path / "nats").start()
    yield server
    server.stop()
    assert server.process.poll() is not None  # stopped by its PID, nothing left running


@pytest.fixture
def nats_cluster(tmp_path):
    """Three real nats-servers as one JetStream cluster on loopback (a meta leader elected), stopped by
    their PIDs after the test (`make` installs nats-server: without it the cluster fails to start)."""
    cluster = NatsCluster(tmp_path / "nats-cluster", 3).start()
    yield cluster
    cluster.stop()
    assert all(server.process.poll() is not None for server in cluster.servers)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path):
    """Debian's Chromium, headless, driven by Selenium through chromedriver (never a downloaded one)."""
    if CHROMIUM is None or DRIVER is None:
        pytest.fail("needs Chromium and chromedriver, which `make` installs (as root): run make test")
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


_databases = itertools.count()


@pytest.fixture(scope="module")
def postgres():
    """A real PostgreSQL server, one per test module, stopped by its PID at the module's end."""
    if binaries() is None:
        pytest.fail("needs PostgreSQL's server binaries, which `make` installs (as root): run make test")
    # under /tmp itself: the server runs as the postgres user, who cannot enter pytest's root-only dirs
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="sova-pg-"))).start()
    yield server
    server.stop()
    pid_file = server.data / "postmaster.pid"
    assert not pid_file.exists()  # the server is gone, by its own account
    server.remove()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A new, empty database on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'manager.db'}"
    server = request.getfixturevalue("postgres")
    name = f"manager_{os.getpid()}_{next(_databases)}"
    engine = sa.create_engine(server.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.url.rsplit("/", 1)[0] + f"/{name}"
