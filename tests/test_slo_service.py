"""The storage tenant API of a running `sova manage`: the SLO service's requests, its Unix socket, the
`sova slo` command against it, and a manage loop whose SEE follows a target a tenant set."""

from __future__ import annotations

import json
import socket
import time

import pytest

from fake_libvirt import Cluster, make
from helpers import managing_see
from sova.cli import main
from sova.control.slo_service import SloService, ask
from sova.model.storage_slo import SloBook


def service() -> SloService:
    book = SloBook(["vm1", "vm2"])
    book.set_throughput("vm1", 400, 600)
    return SloService(book)


def test_a_set_changes_the_slo_and_is_picked_up_once():
    slos = service()
    answer = slos.handle({"op": "set", "vm": "vm1", "throughput": [500, 700], "sc_rate": [80, 90], "latency": 0.02})
    assert answer["ok"] and answer["slo"]["throughput"] == [500, 700] and answer["slo"]["latency"] == 0.02
    assert slos.book.slo("vm1").sc_rate == (80, 90)
    assert slos.take_changed() and not slos.take_changed()


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"op": "set", "vm": "vm1", "throughput": [700, 500]}, "lower bound 700 is above the upper bound 500"),
        ({"op": "set", "vm": "vm1", "sc_rate": [80, 90], "pf_ratio": [5, 500]}, "pf_ratio upper bound"),
        ({"op": "set", "vm": "vm1", "throughput": 500}, "throughput must be [lower, upper]"),
        ({"op": "set", "vm": "vm1", "latency": -1}, "latency must be a finite number of seconds above 0"),
        ({"op": "set", "vm": "vm1", "speed": [1, 2]}, "unknown setting(s) speed"),
        ({"op": "set", "vm": "vm9", "throughput": [1, 2]}, "unknown VM 'vm9'"),
        ({"op": "get", "vm": "vm9"}, "unknown VM 'vm9'"),
        ({"op": "delete", "vm": "vm1"}, "op: expected 'set' or 'get'"),
        ({"op": "get"}, "vm: expected a VM name"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_a_bad_request_is_answered_with_what_is_wrong_and_changes_nothing(request_, message):
    slos = service()
    before = slos.book.slo("vm1")
    answer = slos.handle(request_)
    assert not answer["ok"] and message in answer["error"]
    assert slos.book.slo("vm1") == before and not slos.take_changed()


@pytest.fixture
def listening(tmp_path):
    slos = service()
    path = tmp_path / "manage.sock"
    slos.listen(path)
    yield slos, path
    slos.close()


def test_over_its_socket_the_service_answers_each_line(listening):
    _, path = listening
    assert ask(path, {"op": "set", "vm": "vm2", "throughput": [100, 200]})["ok"]
    assert ask(path, {"op": "get", "vm": "vm2"})["slo"]["throughput"] == [100, 200]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        conn.sendall(b"not json\n")
        assert "not a JSON request" in json.loads(conn.makefile("rb").readline())["error"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # owner-only


def test_the_command_sets_and_reads_a_vms_slo(listening, capsys):
    slos, path = listening
    code = main(
        ["slo", "set", "vm1", "--throughput", "450", "650", "--io-size", "12KiB", "32KiB", "--socket", str(path)]
    )
    assert code == 0 and slos.book.slo("vm1").io_size == (12288, 32768)
    assert main(["slo", "get", "vm1", "--socket", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "450-650 IOPS" in shown and "12-32 KiB" in shown and "nothing yet" in shown
    assert main(["slo", "set", "vm1", "--throughput", "650", "450", "--socket", str(path)]) == 2
    assert "above the upper bound" in capsys.readouterr().err and slos.book.slo("vm1").throughput == (450, 650)


def test_the_command_says_when_no_manage_listens_and_when_nothing_is_set(tmp_path, capsys):
    assert main(["slo", "get", "vm1", "--socket", str(tmp_path / "none.sock")]) == 2
    assert "no sova manage is listening" in capsys.readouterr().err
    assert main(["slo", "set", "vm1", "--socket", str(tmp_path / "none.sock")]) == 2
    assert "nothing to set" in capsys.readouterr().err


def test_a_stale_socket_is_replaced_and_anything_else_at_the_path_is_left_alone(tmp_path):
    stale = tmp_path / "stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()  # a socket file nobody listens on, as a manage that died leaves
    slos = service()
    slos.listen(stale)
    assert ask(stale, {"op": "get", "vm": "vm1"})["ok"]
    other = service()
    with pytest.raises(Exception, match="another sova manage is listening"):
        other.listen(stale)
    slos.close()
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me")
    with pytest.raises(Exception, match="is not a socket"):
        service().listen(mine)
    assert mine.read_text() == "keep me"


def test_a_manage_loop_follows_a_target_a_tenant_sets_while_it_runs(tmp_path):
    c = Cluster()
    for vm in ("vm1", "vm2"):
        c.add("fake://a", vm, **{"block.count": 1, "block.0.rd.reqs": 0, "block.0.rd.bytes": 0, "block.0.rd.times": 0})
    path = tmp_path / "manage.sock"
    book = SloBook(["vm1", "vm2"])
    book.set_throughput("vm1", 400, 600)
    with managing_see(make(c), book, path, {"period": 0.05}) as see:
        deadline = time.monotonic() + 20
        while "vm1" not in see.vms and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(see.vms) == ["vm1"] and list(see.target) == [400]
        assert main(["slo", "set", "vm2", "--throughput", "300", "400", "--socket", str(path)]) == 0
        while "vm2" not in see.vms and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(see.vms) == ["vm1", "vm2"] and list(see.target) == [400, 300]
        # a change to a VM already under control restarts only that VM's target
        see.target[1] = 320.0  # as if the optimizer had moved it
        assert main(["slo", "set", "vm1", "--throughput", "450", "650", "--socket", str(path)]) == 0
        while see.low[0] != 450 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(see.target) == [450, 320] and list(see.high) == [650, 400]

        def throttled():
            return [call for call in c.conns["fake://a"].doms["vm2"].calls if call[0] == "iotune"]

        while not throttled() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert throttled()  # SEE throttles vm2 through libvirt


def test_an_over_long_request_is_refused_and_the_next_one_answered(listening):
    _, path = listening
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        conn.sendall(b"x" * (200 * 1024) + b"\n" + json.dumps({"op": "get", "vm": "vm1"}).encode() + b"\n")
        answers = conn.makefile("rb")
        assert "longer than" in json.loads(answers.readline())["error"]
        assert json.loads(answers.readline())["slo"]["throughput"] == [400, 600]
