"""Helpers shared by tests: small scenarios built in code."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from sova.model.scenario import Scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.model.storage_slo import SloBook
from sova.model.trace_sets import public_source
from sova.sim.storage import queueing, share_device

ROOT = Path(__file__).resolve().parents[1]
# the public traces beside the checkout (../shared/traces/README.md), which a fresh clone does not have; the
# project's own excerpts are in scenarios/traces
SHARED_TRACES = ROOT.parent / "shared" / "traces"


def needs_shared_traces(*parts: str):
    """Skip a test unless SHARED_TRACES/parts is there; the reason says where those traces come from."""
    path = SHARED_TRACES.joinpath(*parts)
    source = public_source(path) or "shared/traces/README.md names each set's source"
    return pytest.mark.skipif(not path.exists(), reason=f"needs public traces not in the project, at {path}: {source}")


# two hosts, four VMs on the first (a hotspot), a web service; profiles default and threshold
SMALL = """
[scenario]
name = "small"
duration = 120

[[hosts]]
name = "h{i}"
count = 2
cores = 4

[[vms]]
name = "v{i}"
count = 4
host = "h1"

[[workloads]]
vm = "v*"
kind = "lookbusy"

[[workloads]]
vm = "v1"
kind = "httperf"
rate = 200

[profiles.default]

[profiles.threshold]
policies = ["threshold-migration"]
"""


def make_scenario(**sections) -> Scenario:
    """A scenario from keyword sections, with a one-host default and a 60 s duration."""
    raw = {"scenario": {"name": "t", "duration": 60, "seed": 1}, "hosts": [{"name": "h1"}]}
    for key, value in sections.items():
        if key == "scenario":
            raw["scenario"] = {**raw["scenario"], **value}
        else:
            raw[key] = value
    return scenario_from_dict(raw)


@contextlib.contextmanager
def managing_see(driver, book: SloBook, socket_path: Path, see_params: dict | None = None):
    """`sova manage --profile see` in a thread over `driver`, its SLO service listening at `socket_path`;
    yields the SEE policy, and stops the loop and the service on the way out."""
    from sova.control.manage import BUILTIN_PROFILES, manage
    from sova.control.profiles import check_profile
    from sova.control.slo_service import SloService
    from sova.model.scenario import ControlSpec, ProfileSpec
    from sova.model.schema import Reader

    reader = Reader("test")
    profile = ProfileSpec("see", BUILTIN_PROFILES["see"], "auto", {"see": see_params or {}})
    policies = check_profile(reader, profile)
    assert not reader.problems
    slos = SloService(book)
    slos.listen(socket_path)
    stop = threading.Event()
    kwargs = {"slos": slos, "should_stop": stop.is_set}
    loop = threading.Thread(target=manage, args=(driver, policies, ControlSpec()), kwargs=kwargs)
    loop.start()
    try:
        yield policies[0]
    finally:
        stop.set()
        loop.join(timeout=30)
        slos.close()


def serve_io(
    server: np.ndarray,
    iops: np.ndarray,
    service: np.ndarray,
    parallelism: np.ndarray,
    cv: np.ndarray | float = 1.0,
    tags: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One epoch of the device model alone (the parts storage_epochs composes, without its limiters,
    closed loops and Dom0): served IOPS and mean latency (s) per stream, and utilisation per server; service: the seconds one
    IO of the stream holds a unit of its server (access time and transfer); cv: per stream, its
    server's service-time coefficient of variation; tags: per stream, the scheduler's reservation
    (requests/s) and weight per request (both 0: untagged, weight 1 on a tagged server)."""
    n_servers = len(parallelism)
    share = service / parallelism[server]
    served = share_device(server, iops, share, n_servers, tags)
    residual = share * (1 + np.square(cv)) / 2 * np.ones(len(server))
    rho, wait = queueing(server, served, share, residual, n_servers)
    return served, service + wait[server], rho


def database_at(url: str, revision: str, rows: Iterable[tuple[str, dict]] = ()) -> None:
    """A state store's database left at an older schema `revision`, holding `rows` (SQL, parameters): what a
    manager of that revision wrote, for the tests of the upgrades that follow."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from sova.service.state import MIGRATIONS

    engine = sa.create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        for sql, parameters in rows:
            connection.execute(sa.text(sql), parameters)
    engine.dispose()
