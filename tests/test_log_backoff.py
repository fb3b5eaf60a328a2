"""A daemon's log under a repeating fault (service/log_backoff.py): the same warning at doubling
intervals with a count of those left out, and JSON lines for a log collector."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from helpers import ROOT
from sova.service.log_backoff import JsonLines, RepeatBackoff

QUICKSTART = ROOT / "scenarios" / "quickstart.toml"


def written(records_at: list[float], message: str = "round failed: %s") -> list[tuple[float, str]]:
    clock = [0.0]
    backoff = RepeatBackoff(clock=lambda: clock[0])
    out = []
    for at in records_at:
        clock[0] = at
        record = logging.LogRecord("sova.service.manager", logging.WARNING, __file__, 1, message, ("down",), None)
        if backoff.filter(record):
            out.append((at, record.getMessage()))
    return out


def test_a_warning_every_200_ms_is_written_at_doubling_intervals_with_the_count_left_out():
    lines = written([0.2 * i for i in range(220)])  # 44 s of a bus that is down
    assert [round(at, 1) for at, _ in lines] == [0.0, 1.0, 3.0, 7.0, 15.0, 31.0]
    assert lines[1][1] == "round failed: down (and 4 more like it left out)"
    assert lines[-1][1].endswith("(and 79 more like it left out)")


def test_a_warning_after_a_quiet_spell_is_written_at_once_and_info_is_never_held_back():
    lines = written([0.0, 0.5, 10.0])
    assert [at for at, _ in lines] == [0.0, 10.0]  # quiet for more than twice its interval: from the start
    backoff = RepeatBackoff(clock=lambda: 0.0)
    info = logging.LogRecord("sova", logging.INFO, __file__, 1, "report sent", (), None)
    assert all(backoff.filter(info) for _ in range(10))


def test_json_lines_carry_time_level_logger_and_message():
    record = logging.LogRecord("sova.service.agent", logging.WARNING, __file__, 1, "report not sent: %s", ("x",), None)
    line = json.loads(JsonLines().format(record))
    assert line["level"] == "warning" and line["logger"] == "sova.service.agent"
    assert line["message"] == "report not sent: x" and line["time"].endswith("Z")


def test_an_agent_that_cannot_reach_its_bus_says_so_in_json_lines_backed_off(tmp_path):
    # nothing listens on port 9: the agent retries every 200 ms until it gives up, naming the setting
    command = [sys.executable, "-m", "sova.cli", "agent", "--sim", str(QUICKSTART), "--nats", "nats://127.0.0.1:9"]
    run = subprocess.run([*command, "--log-format", "json"], capture_output=True, text=True, timeout=180)
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    assert "--nats: cannot connect to the bus" in run.stderr
    assert len(lines) >= 2 and all(line["logger"] == "sova.service.bus" for line in lines)
    assert "Connect call failed" in lines[0]["message"] and "more like it left out" in lines[1]["message"]
