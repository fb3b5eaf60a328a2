"""A running `sova manage` gives its cluster snapshot on its control socket: `sova snapshot export --socket` and
`sova what-if --socket` (the hosts here are fake libvirt connections; the lab test does it on real ones)."""

from __future__ import annotations

import json
import threading

import pytest

from fake_libvirt import Cluster, make
from sova.cli import main as cli_main
from sova.cli.run import load
from sova.control.host_control import HostControl
from sova.control.manage import manage
from sova.control.slo_service import SloService, ask
from sova.control.snapshot_service import SnapshotService
from sova.model.observed_demand import read_demand
from sova.model.scenario import ControlSpec


@pytest.fixture
def managed(tmp_path):
    """`sova manage` (no policy, ticks of 20 ms) over two fake hosts with a VM each, its socket listening; vm1's
    CPU time grows by 1.5 s per second of the loop's clock."""
    cluster = Cluster()
    cluster.add("fake://a", "vm1")
    cluster.add("fake://b", "vm2")
    driver = make(cluster)
    busy = cluster.conns["fake://a"].doms["vm1"]
    clock = driver.now

    def now() -> float:  # vm1 works as time goes on
        t = clock()
        busy.stats["cpu.time"] = int(2e9 + 1.5e9 * t)
        return t

    driver.now = now
    service = SloService(None, HostControl(), SnapshotService({"name": "idle", "policies": []}, {}))
    path = tmp_path / "manage.sock"
    service.listen(path)
    stop = threading.Event()
    control = ControlSpec(monitor_period=0.02)
    kwargs = {"tick": 0.02, "should_stop": stop.is_set, "slos": service}
    loop = threading.Thread(target=manage, args=(driver, [], control), kwargs=kwargs)
    loop.start()
    try:
        yield path
    finally:
        stop.set()
        loop.join(timeout=30)
        service.close()


def test_export_through_a_running_manages_socket_writes_its_hosts_vms_and_demand(managed, tmp_path):
    out = tmp_path / "c.toml"
    args = ["snapshot", "export", "--socket", str(managed), "--window", "0.4", "--interval", "0.1", "--out", str(out)]
    for _ in range(200):  # until the loop has observed the whole window
        if cli_main([*args, "--force"]) == 0 and read_demand(tmp_path / "c.demand.parquet").samples == 4:
            break
    _, (snapshot,) = load(out)
    assert {(vm.name, vm.host) for vm in snapshot.vms} == {("vm1", "a"), ("vm2", "b")}
    assert list(snapshot.profiles) == ["nothing"]  # the running profile has no policy
    demand = read_demand(tmp_path / "c.demand.parquet")
    assert demand.samples == 4 and demand.interval == pytest.approx(0.1)
    cpu = demand.series["cpu"][demand.row("vm1")]
    assert cpu == pytest.approx([1.5] * 4, rel=0.2)  # run time (cpu.time) plus the fake's fixed vCPU wait


def test_what_if_through_a_running_manages_socket_answers_a_drain(managed, capsys):
    args = ["what-if", "--socket", str(managed), "--window", "0.4", "--interval", "0.1", "--horizon", "60"]
    for _ in range(200):  # until the loop has observed two samples
        capsys.readouterr()
        if cli_main([*args, "--drain", "a", "--json"]) == 0:
            break
    reply = json.loads(capsys.readouterr().out)
    assert [alt["name"] for alt in reply["alternatives"]] == ["nothing", "drain-a"]
    assert reply["alternatives"][1]["forecast"]["migrations"] == 1 and reply["source"].startswith("sova manage at")


def test_a_bad_snapshot_request_is_refused_and_says_what_was_expected(managed):
    assert ask(managed, {"op": "snapshot", "interval": -1})["error"].startswith("interval: expected a number of")
    assert ask(managed, {"op": "snapshot", "after": "guess"})["error"].startswith("after: expected 'last'")
    assert ask(managed, {"op": "snapshot", "name": "../x"})["error"].startswith("name: expected a file name")
    assert "'snapshot'" in ask(managed, {"op": "nope"})["error"]
