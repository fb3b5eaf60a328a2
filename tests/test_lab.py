"""`sova lab` without a lab: argument checks, the root check, state files, clear errors."""

from __future__ import annotations

import pytest

from sova.cli import main
from sova.lab import install
from sova.lab.errors import LabError
from sova.lab.lab import Lab, LabState, load_command


def test_lab_load_settings_are_checked_and_peers_resolved():
    addrs = {"vm1": "10.77.1.1", "vm2": "10.77.1.2"}
    assert load_command("vm1", ["cpu=60", "net=vm2:40", "disk=200"], addrs) == "load cpu=60 net=10.77.1.2:40 disk=200"
    assert load_command("vm1", [], addrs) == "load"
    assert load_command("vm1", ["paced=vm2:5"], addrs) == "load paced=10.77.1.2:5"
    for bad, msg in (
        (["cpu=150"], "percentage 0-100"),
        (["net=vm1:10"], "not another lab VM"),
        (["paced=vm2:0"], "rate of 1-1000 Mbit/s"),
        (["paced=vm3:5"], "not another lab VM"),
        (["disk=-3"], "positive request rate"),
        (["gpu=1"], "expected cpu=PCT"),
    ):
        with pytest.raises(LabError, match=msg):
            load_command("vm1", bad, addrs)
    with pytest.raises(LabError, match="no VM 'vm7'"):
        load_command("vm7", [], addrs)


def test_the_lab_needs_root_and_says_so(monkeypatch):
    monkeypatch.setattr(install.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="needs root"):
        install.ensure()


def test_commands_on_a_directory_without_a_lab_say_how_to_start_one(tmp_path, capsys):
    assert main(["lab", "status", "--dir", str(tmp_path)]) == 2
    assert "no lab in" in capsys.readouterr().err
    with pytest.raises(LabError, match="sova lab up --dir"):
        Lab(tmp_path).state()


def test_a_corrupt_state_file_is_named(tmp_path):
    (tmp_path / "lab.json").write_text("{not json")
    with pytest.raises(LabError, match=r"lab\.json is not a lab state file"):
        LabState.load(tmp_path)


def test_lab_up_checks_its_sizes_before_touching_anything(tmp_path):
    with pytest.raises(LabError, match="--hosts must be 1-16"):
        Lab(tmp_path / "x").up(n_hosts=0)
    assert not (tmp_path / "x").exists()


def test_down_removes_only_what_the_lab_made(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    for d in ("hosts/host1", "image", "disks"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "lab.json").write_text('{"dir": "x", "lab_id": "slxxxxxx", "fabric_ns": "n", "hosts": [], "vms": []}')
    Lab(tmp_path).down()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    (tmp_path / "notes.txt").unlink()
    Lab(tmp_path).down()  # twice is fine, and an emptied directory goes too
    assert not tmp_path.exists()
