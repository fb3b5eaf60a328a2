"""`sova serve`, `sova token`, `sova manager` and `sova agent` as a user runs them: real processes, a
real nats-server, the dashboard in Chromium; every part stopped by its PID, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from browser_helpers import log_in, rows, wait
from helpers import ROOT
from sova.service.natsd import free_port

QUICKSTART = ROOT / "scenarios" / "quickstart.toml"


def sova(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sova.cli", *args], capture_output=True, text=True, **kwargs)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.1)


def start_serve(directory: Path, port: int, *options: str, preexec_fn=None) -> subprocess.Popen:
    """`sova serve` of the quickstart at 10x in its own session, once it has written serve.json (a stack
    that could not start fails the test with its output: `make` installs nats-server)."""
    command = ["serve", "--sim", str(QUICKSTART), "--speed", "10", "--api", f"127.0.0.1:{port}"]
    serve = subprocess.Popen(
        [sys.executable, "-m", "sova.cli", *command, "--dir", str(directory), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )
    try:
        wait_until(lambda: (directory / "serve.json").exists() or serve.poll() is not None)
    except AssertionError:
        serve.kill()  # not up in time: nothing left running
        raise
    assert serve.poll() is None, serve.stdout.read()
    return serve


def ignore_sigint() -> None:
    """In the child before exec: SIGINT ignored, as a shell starts a background job (`sova serve &`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sova_serve_brings_up_the_stack_the_dashboard_shows_it_and_ctrl_c_stops_every_part(tmp_path, browser):
    port = free_port()
    directory = tmp_path / "stack"
    serve = start_serve(directory, port, "--mode", "approve")
    try:
        record = json.loads((directory / "serve.json").read_text())
        token = (directory / "admin.token").read_text().strip()
        assert oct((directory / "admin.token").stat().st_mode & 0o777) == "0o600"
        made = [directory, *directory.rglob("*")]  # database, logs, ledgers, the bus's store
        assert made and [p for p in made if p.stat().st_mode & 0o077] == []  # none readable by others
        hosts = []

        def all_hosts() -> bool:
            hosts[:] = httpx.get(f"{record['url']}/api/v1/hosts", headers={"Authorization": f"Bearer {token}"}).json()
            return len(hosts) == 4

        wait_until(all_hosts)
        browser.get(record["url"] + "/")
        log_in(browser, token)
        wait(browser, lambda: len(rows(browser, "hosts")) == 4 and len(rows(browser, "vms")) == 14)
        summary = browser.find_element("id", "summary").text
    finally:
        serve.send_signal(signal.SIGINT)  # Ctrl-C
        output = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, output
    assert sorted(h["name"] for h in hosts) == ["hm1", "hm2", "hm3", "hm4"]
    assert "profile threshold (approve)" in summary and "4 host(s) reporting" in summary
    assert set(record["pids"]) == {"nats-server", "manager", "agents"}
    bus = (directory / "nats" / "nats.conf").read_text()  # a bus user for each part, with its permissions
    assert 'user: "manager"' in bus and 'user: "agents"' in bus and '"sova.report.hm1"' in bus
    assert "Violation" not in (directory / "nats" / "nats.log").read_text()  # each part did only what it may
    assert not any(alive(pid) for pid in record["pids"].values())
    with pytest.raises(ConnectionRefusedError):  # nothing listens on the API's port any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert "stopped; its state and logs stay in" in output


def test_sova_serve_refuses_bad_input_before_starting_anything(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    used = taken.getsockname()[1]
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("a user's file")
    try:
        neither = sova("serve")
        port_taken = sova("serve", "--sim", str(QUICKSTART), "--api", f"127.0.0.1:{used}")
        not_empty = sova("serve", "--sim", str(QUICKSTART), "--api", f"127.0.0.1:{free_port()}", "--dir", str(full))
        bad_api = sova("serve", "--sim", str(QUICKSTART), "--api", "localhost")
        fresh = tmp_path / "never"
        sim = ["serve", "--sim", str(QUICKSTART), "--api", f"127.0.0.1:{free_port()}", "--dir", str(fresh)]
        bad_profile = sova(*sim, "--profile", "nope")
        bad_param = sova(*sim, "--param", "threshold-migration.nope=1")
        bad_control = sova(*sim, "--control", "hold_down=-5s")
        bad_cluster = sova(*sim, "--nats-cluster", "9")
    finally:
        taken.close()
    assert neither.returncode == 2 and "give --sim SCENARIO or --lab DIR" in neither.stderr
    assert port_taken.returncode == 2 and f"--api 127.0.0.1:{used}" in port_taken.stderr
    assert not_empty.returncode == 2 and "exists and is not empty" in not_empty.stderr
    assert (full / "keep.txt").read_text() == "a user's file" and len(list(full.iterdir())) == 1
    assert bad_api.returncode == 2 and "expected HOST:PORT" in bad_api.stderr
    refusals = ((bad_profile, "nope"), (bad_param, "nope"), (bad_control, "hold_down"), (bad_cluster, "from 1 to 7"))
    for refused, named in refusals:
        assert refused.returncode == 2 and named in refused.stderr, refused.stderr
    assert not fresh.exists()  # nothing made, nothing started


def test_sova_token_adds_lists_and_revokes_tokens_and_shows_a_secret_only_once(tmp_path):
    state = f"sqlite:///{tmp_path / 'manager.db'}"
    added = sova("token", "add", "alice", "--role", "operator", "--state", state)
    tenant = sova("token", "add", "acme", "--role", "tenant", "--vm", "web1", "--vm", "web2", "--state", state)
    listed = sova("token", "list", "--state", state)
    twice = sova("token", "add", "alice", "--role", "viewer", "--state", state)
    no_vms = sova("token", "add", "bob", "--role", "tenant", "--state", state)
    revoked = sova("token", "revoke", "alice", "--state", state)
    after = sova("token", "list", "--state", state)
    assert added.returncode == 0 and added.stdout.strip().startswith("sova_")
    assert added.stdout.strip() not in listed.stdout and "alice" in listed.stdout
    assert "acme" in listed.stdout and "web1, web2" in listed.stdout and tenant.returncode == 0
    assert twice.returncode == 2 and "exists" in twice.stderr
    assert no_vms.returncode == 2 and "--vm" in no_vms.stderr
    assert revoked.returncode == 0 and "alice" not in after.stdout


def test_the_daemons_name_the_setting_that_keeps_them_from_starting(tmp_path):
    unreachable = f"nats://127.0.0.1:{free_port()}"
    state = f"sqlite:///{tmp_path / 'manager.db'}"
    no_bus = sova("manager", "--nats", unreachable, "--state", state, "--no-api", timeout=60)
    bad_state = sova("manager", "--state", "nosuchdb://x", "--no-api", timeout=60)
    bad_profile = sova("manager", "--profile", "nonsense", "--state", state, timeout=60)
    agent_no_host = sova("agent", "--nats", unreachable, timeout=60)
    agent_bad_scheme = sova("agent", "--nats", "http://127.0.0.1:1", "--sim", str(QUICKSTART), timeout=60)
    client_ca_alone = sova("manager", "--tls-client-ca", str(QUICKSTART), "--state", state, timeout=60)
    agent_bad_list = sova("agent", "--nats", f"{unreachable},,{unreachable}", "--sim", str(QUICKSTART), timeout=60)
    assert no_bus.returncode == 2 and "--nats" in no_bus.stderr and "cannot connect" in no_bus.stderr
    assert bad_state.returncode == 2 and "--state nosuchdb://x" in bad_state.stderr
    assert bad_profile.returncode == 2 and "unknown profile 'nonsense'" in bad_profile.stderr
    assert agent_no_host.returncode == 2 and "--host" in agent_no_host.stderr
    assert agent_bad_scheme.returncode == 2 and "expected nats://" in agent_bad_scheme.stderr
    assert client_ca_alone.returncode == 2 and "--tls-client-ca: client certificates need TLS" in client_ca_alone.stderr
    assert agent_bad_list.returncode == 2 and "several separated by commas" in agent_bad_list.stderr
    assert not Path(tmp_path / "nosuchdb").exists()


def test_sova_serve_stops_on_sigint_as_a_background_job_and_sigkill_takes_its_parts_with_it(tmp_path):
    def start(directory: Path) -> tuple[subprocess.Popen, dict[str, int]]:
        serve = start_serve(directory, free_port(), preexec_fn=ignore_sigint)
        return serve, json.loads((directory / "serve.json").read_text())["pids"]

    background, pids = start(tmp_path / "background")
    background.send_signal(signal.SIGINT)
    output = background.communicate(timeout=60)[0]
    assert background.returncode == 0 and "stopped; its state and logs stay in" in output
    assert not any(alive(pid) for pid in pids.values())
    killed, pids = start(tmp_path / "killed")
    killed.kill()  # SIGKILL: no handler runs; the kernel tells the parts their parent died
    killed.communicate(timeout=30)
    wait_until(lambda: not any(alive(pid) for pid in pids.values()), timeout=60)


def test_ctrl_c_while_sova_serve_is_still_starting_stops_every_part_started_so_far(tmp_path):
    directory = tmp_path / "starting"
    command = ["serve", "--sim", str(QUICKSTART), "--api", f"127.0.0.1:{free_port()}", "--dir", str(directory)]
    serve = subprocess.Popen(
        [sys.executable, "-m", "sova.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:  # the manager is spawned, the agents not yet reporting: serve.json is not written
        wait_until(lambda: (directory / "manager.log").exists() or serve.poll() is not None)
    finally:
        serve.send_signal(signal.SIGINT)
    output = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0 and "stopped; its state and logs stay in" in output, output
    assert "Traceback" not in output
    wait_until(lambda: not _processes_naming(directory), timeout=30)


def _processes_naming(directory: Path) -> list[int]:
    """The PIDs of processes whose command line names `directory` (the stack's parts all do)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(directory).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue  # ended meanwhile
    return found


def test_sova_serve_starts_a_part_again_after_it_dies_and_counts_the_crash(tmp_path):
    directory = tmp_path / "stack"
    serve = start_serve(directory, free_port())

    def record() -> dict:
        return json.loads((directory / "serve.json").read_text())

    def healthy() -> bool:
        try:
            return httpx.get(f"{record()['url']}/healthz", timeout=2).json()["hosts_reporting"] == 4
        except (httpx.HTTPError, ValueError, KeyError):
            return False

    try:
        first = record()["pids"]
        for part in ("manager", "nats-server"):
            os.kill(record()["pids"][part], signal.SIGKILL)
            wait_until(lambda part=part: record()["crashes"][part] == 1 and alive(record()["pids"][part]))
            wait_until(healthy)  # the API answers and every host reports again
        assert record()["pids"]["manager"] != first["manager"] and serve.poll() is None
    finally:
        serve.send_signal(signal.SIGINT)
        output = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, output
    assert "manager exited (-9; crash 1); starting it again in 1 s" in output
    assert "nats-server exited (crash 1); started it again" in output


def test_sova_serve_with_a_nats_cluster_of_three_goes_on_when_one_server_dies_and_starts_it_again(tmp_path):
    directory = tmp_path / "stack"
    serve = start_serve(directory, free_port(), "--nats-cluster", "3")

    def record() -> dict:
        return json.loads((directory / "serve.json").read_text())

    token = (directory / "admin.token").read_text().strip()

    def reported_since(moment: float) -> bool:
        """Every host's latest report came after `moment` (time.monotonic())."""
        answer = httpx.get(f"{record()['url']}/api/v1/hosts", headers={"Authorization": f"Bearer {token}"})
        ages = [host["report_age_s"] for host in answer.json()]
        return len(ages) == 4 and all(age is not None and age < time.monotonic() - moment for age in ages)

    try:
        first = record()
        servers = {f"nats-server-{index}" for index in (1, 2, 3)}
        assert set(first["pids"]) == servers | {"manager", "agents"}
        assert len(first["nats"].split(",")) == 3
        killed_at = time.monotonic()
        os.kill(first["pids"]["nats-server-1"], signal.SIGKILL)
        wait_until(lambda: record()["crashes"]["nats-server-1"] == 1 and alive(record()["pids"]["nats-server-1"]))
        wait_until(lambda: reported_since(killed_at))
        after = record()
        assert after["pids"]["manager"] == first["pids"]["manager"] and after["crashes"]["manager"] == 0
        assert after["pids"]["agents"] == first["pids"]["agents"] and after["crashes"]["agents"] == 0
    finally:
        serve.send_signal(signal.SIGINT)
        output = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, output
    assert "starting a cluster of 3 nats-servers" in output
    assert "nats-server-1 exited (crash 1); started it again" in output
    assert not any(alive(pid) for pid in record()["pids"].values())
