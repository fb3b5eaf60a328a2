"""Drains of a running `sova manage` through its control socket: `sova host drain|release|list --socket`
against the real socket service, the manage loop's side played by taking the queue and publishing."""

from __future__ import annotations

import json

from helpers import make_scenario
from sova.cli import main as cli_main
from sova.control.host_control import HostControl
from sova.control.slo_service import SloService, ask
from sova.drivers.sim import SimDriver
from sova.sim.engine import Simulator


def observed():
    scenario = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "v{i}", "count": 3, "host": "h1"}, {"name": "w", "host": "h2"}],
    )
    return SimDriver(Simulator(scenario)).observe()


def test_a_drain_is_queued_for_the_loop_and_answered_with_the_hosts_vms(tmp_path, capsys):
    control = HostControl()
    service = SloService(None, control)
    path = tmp_path / "manage.sock"
    service.listen(path)
    try:
        assert ask(path, {"op": "drain", "host": "h1"}) == {
            "ok": False,
            "error": "host: expected a managed host (none observed yet), got 'h1'",
        }
        control.publish(observed(), failed=["h2"])
        assert cli_main(["host", "drain", "h1", "--socket", str(path)]) == 0
        assert "h1 in maintenance by operator; 3 VM(s) on it" in capsys.readouterr().out
        assert control.take() == [("h1", "drain")] and control.take() == []
        assert cli_main(["host", "list", "--socket", str(path), "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["hosts"]
        assert listed == [
            {"name": "h1", "vms": 3, "failed": False, "maintenance": True},
            {"name": "h2", "vms": 1, "failed": True, "maintenance": False},
        ]
        assert cli_main(["host", "fenced", "h1", "--socket", str(path)]) == 2
        assert "h1 is not declared failed; only a failed host is fenced" in capsys.readouterr().err
        assert cli_main(["host", "fenced", "h2", "--socket", str(path)]) == 0
        assert "h2 fenced as operator confirmed; its 1 VM(s) start elsewhere" in capsys.readouterr().out
        assert control.take() == [("h2", "fenced")]
        assert cli_main(["host", "release", "h2", "--socket", str(path)]) == 2
        assert "h2 is not in maintenance" in capsys.readouterr().err
        assert cli_main(["host", "drain", "h9", "--socket", str(path)]) == 2
        assert "expected a managed host (h1, h2), got 'h9'" in capsys.readouterr().err
        assert (
            ask(path, {"op": "get", "vm": "v1"})["error"]
            == "this sova manage holds no storage SLO (its profile is not see)"
        )
        assert "'drain', 'release', 'fenced', 'hosts'" in ask(path, {"op": "reboot"})["error"]
    finally:
        service.close()


def test_host_commands_say_when_no_manage_listens(tmp_path, capsys):
    assert cli_main(["host", "drain", "h1", "--socket", str(tmp_path / "none.sock")]) == 2
    assert "no sova manage is listening at" in capsys.readouterr().err
