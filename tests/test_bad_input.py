"""Bad input, as a new user would give it: every case exits 2 with its location named and no traceback.

One table of scenario files (each a small change to a valid scenario) and one of command lines. NaN and
infinity are refused wherever a number goes; errors are one line each, and say where and what was expected.
"""

import json
import re
from pathlib import Path

import pytest

from sova.cli import main

BASE = """
[scenario]
name = "base"
duration = 60

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
duty = 0.5

[[workloads]]
vm = "v1"
kind = "httperf"
rate = 100

[profiles.default]

[profiles.threshold]
policies = ["threshold-migration"]
"""

# (name, change: (old, new) in BASE or text appended, expected text of the single error line)
SCENARIO_CASES = [
    ("link speed nan", ("", "[topology]\nlink_speed = nan\n"), "[topology].link_speed: got nan; expected a bandwidth"),
    ("duration nan", ("duration = 60", "duration = nan"), "[scenario].duration: got nan"),
    ("duration inf", ("duration = 60", "duration = inf"), "[scenario].duration: got inf"),
    ("step nan", ("duration = 60", "duration = 60\nstep = nan"), "[scenario].step: got nan"),
    ("duty nan", ("duty = 0.5", "duty = nan"), "[[workloads]] #1.duty: got nan"),
    ("httperf rate inf", ("rate = 100", "rate = inf"), "[[workloads]] #2.rate: got inf"),
    ("phase at nan", ("duty = 0.5", "duty = 0.5\n[[workloads.phases]]\nat = nan\nduty = 1.0"), "phases #1.at: got nan"),
    (
        "policy parameter nan",
        ("", "[profiles.threshold.params.threshold-migration]\nhot = nan\n"),
        "[profiles.threshold.params.threshold-migration].hot: got nan",
    ),
    ("control rail nan", ("", "[control]\nhold_down = nan\n"), "[control].hold_down: got nan"),
    ("name escapes results/", ('name = "base"', 'name = "../../escape"'), "[scenario].name: '../../escape' cannot"),
    ("name empty", ('name = "base"', 'name = " "'), "[scenario].name: ' ' cannot name the result directory"),
    ("name an option", ('name = "base"', 'name = "-rf"'), "[scenario].name: '-rf' cannot"),
    ("simulator constant inf", ("", "[simulator]\npv_latency = inf\n"), "[simulator].pv_latency: got inf"),
    ("memory overflowing to inf", ("cores = 4", 'cores = 4\nmemory = "1e400GiB"'), "(h{i}).memory: got '1e400GiB'"),
    ("negative cores", ("cores = 4", "cores = -1"), "(h{i}).cores: got -1; expected an integer >= 1"),
    (
        "sweep value nan",
        ("", '[sweep]\ntable = "workloads"\nkind = "lookbusy"\nkey = "duty"\nvalues = [nan]\n'),
        ".duty: got nan",
    ),
    ("unknown table", ("", "[bogus]\nx = 1\n"), "[bogus]: unknown table; a scenario has [scenario], [topology]"),
    ("unknown workload kind", ('kind = "lookbusy"', 'kind = "lookbusyy"'), "(did you mean 'lookbusy'?)"),
    (
        "too many VMs",
        ('count = 4\nhost = "h1"', 'count = 200\nhost = "auto"'),
        "80 of 200 VMs with host = 'auto', 'first-fit' or 'random' (v121 ... v200: 81920 MiB) found no host",
    ),
    (
        "VM larger than every host",
        ('host = "h1"', 'host = "auto"\nmemory = "1TiB"'),
        "4 VMs (v1 ... v4) need 1048576 MiB each, more than any host has for VMs: the largest, 'h1', has 61440 MiB",
    ),
    ("unknown policy", ('"threshold-migration"', '"threshold-migraton"'), "did you mean 'threshold-migration'?"),
]


def _scenario(tmp_path: Path, change: tuple[str, str]) -> Path:
    old, new = change
    text = BASE.replace(old, new, 1) if old else BASE + "\n" + new
    assert text != BASE
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("name", "change", "expected"), SCENARIO_CASES, ids=[c[0] for c in SCENARIO_CASES])
def test_a_bad_scenario_is_one_located_error_for_validate_and_run(tmp_path, capsys, name, change, expected):
    path = _scenario(tmp_path, change)
    for argv in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.startswith("error:")]
        assert len(lines) == 1, err
        assert expected in lines[0] and "bad.toml" in lines[0], err
        assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_byte_order_mark_is_accepted(tmp_path, capsys):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert main(["validate", str(path)]) == 0


def test_a_trace_error_names_the_scenario_entry_the_file_and_the_line(tmp_path, capsys):
    trace = tmp_path / "cpu.txt"
    trace.write_text("10\n20\nlots\n")
    change = (
        "",
        f'[[vms]]\nname = "p1"\nhost = "h2"\n[[workloads]]\nvm = "p1"\nkind = "planetlab"\nfile = "{trace}"\n',
    )
    assert main(["validate", str(_scenario(tmp_path, change))]) == 2
    err = capsys.readouterr().err
    assert f"bad.toml: [[workloads]] #3.file: {trace}: line 3: expected a CPU percentage, got 'lots'" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-5"])
def test_a_bitbrains_trace_with_a_value_that_is_not_finite_or_negative_is_refused(tmp_path, capsys, value):
    trace = tmp_path / "vm.csv"
    row = "1376314846;4;11703.99;{v};10.0;67108864;6129274.67;0.0;0.0;0.53;0.13\n"
    trace.write_text("Timestamp [ms];...\n" + row.format(v=1.0) + row.format(v=value))
    change = (
        "",
        f'[[storage]]\nname = "san"\n[[vms]]\nname = "b1"\nhost = "h2"\n'
        f'[[workloads]]\nvm = "b1"\nkind = "bitbrains"\nfile = "{trace}"\n',
    )
    assert main(["validate", str(_scenario(tmp_path, change))]) == 2
    err = capsys.readouterr().err
    assert "[[workloads]] #3.file" in err and "line 3: expected finite, non-negative numbers" in err


WARNING_CASES = [
    ("cores", ("cores = 4", "cores = 1000000000000"), "(h1): 1,000,000,000,000 cores (and 1 more): more than 4,096"),
    (
        "memory",
        ("cores = 4", 'cores = 4\nmemory = "1e30GiB"'),
        "(h1): 9.77e+26 TiB of memory (and 1 more): more memory",
    ),
    ("vcpus", ('host = "h1"', 'host = "h1"\nvcpus = 8'), "[[vms]] (v1): 8 vCPUs on h1 (4 cores) (and 3 more)"),
    ("link", ("", "[topology]\nlink_speed = 0\n"), "[topology].link_speed: 0 b/s: nothing can cross these links"),
    ("nic", ("cores = 4", "cores = 4\nnic = { bandwidth = 1e15 }"), "(h1): a 1e+06 Gb/s NIC (and 1 more): faster than"),
]


@pytest.mark.parametrize(("name", "change", "expected"), WARNING_CASES, ids=[c[0] for c in WARNING_CASES])
def test_an_implausible_value_is_a_warning_and_the_run_goes_ahead(tmp_path, capsys, name, change, expected):
    path = _scenario(tmp_path, change)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    warnings = [x for x in err.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 1 and expected in warnings[0], err


def test_a_long_run_says_how_long_before_it_starts(tmp_path, capsys):
    path = _scenario(tmp_path, ("duration = 60", 'duration = "100000d"'))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "[scenario].duration: 100,000 days of simulated time" in err
    assert "note: this run takes roughly" in err and "days" in err


def test_a_link_of_zero_gives_valid_json_with_the_reason_and_a_report_without_nan(tmp_path, capsys):
    path = _scenario(tmp_path, ("", "[topology]\nlink_speed = 0\n"))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--profile", "default"]) == 0
    assert "[topology].link_speed: 0 b/s" in capsys.readouterr().err
    text = (out / "summary.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    services = doc["profiles"]["default"]["services"]
    assert services["served"] == 0 and services["response_mean"] is None
    assert "no request was served" in doc["profiles"]["default"]["undefined"]["services.response_mean"]
    assert doc["services"]["default"][0]["response_p95"] is None
    page = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", (out / "report.html").read_text())
    assert not re.search(r"\bnan\b", page, re.IGNORECASE)


CLI_CASES = [
    (["place", "{scenario}", "--algorithm", "greedy-fill", "--window", "nan"], "--window: expected a positive number"),
    (["place", "{scenario}", "--algorithm", "greedy-fill", "--window", "-1"], "--window: expected a positive number"),
    (["run", "{scenario}", "--seed", "nan"], "--seed: expected a whole number from 0 to 2^63 - 1, got 'nan'"),
    (["run", "{scenario}", "--jobs", "0"], "--jobs: expected a positive number of processes, got '0'"),
    (["run", "{scenario}", "--profile", "nope"], "--profile nope: no such profile"),
    (["manage", "--host", "a=test:///default", "--duration", "inf"], "--duration: expected a positive number"),
    (["manage", "--host", "a=test:///default", "--control", "hold_down=nan"], "--control.hold_down: got nan"),
    (
        ["manage", "--host", "a=test:///default", "--param", "dsriov-vlm.alpha=inf"],
        "sova manage: --param dsriov-vlm.alpha: got inf",
    ),
    (["manage", "--host", "broken"], "--host: 'broken': expected NAME=URI"),
    (["lab", "up", "--hosts", "0"], "--hosts: expected a number of hosts from 1 to 16, got '0'"),
    (["lab", "up", "--vms-per-host", "nan"], "--vms-per-host: expected a number of VMs from 0 to 16"),
    (["manage", "--hosts-file", "{hosts}"], "[hosts.node1].nic_bandwidth: got nan"),
    (["manage", "--host", "a=test:///default", "--audit", "/proc/no/a.jsonl"], "--audit /proc/no/a.jsonl: cannot be"),
]


@pytest.mark.parametrize(("argv", "expected"), CLI_CASES, ids=[" ".join(c[0][:3]) for c in CLI_CASES])
def test_a_bad_command_line_is_a_located_error(tmp_path, capsys, argv, expected):
    scenario = tmp_path / "ok.toml"
    scenario.write_text(BASE)
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[hosts.node1]\nuri = "qemu+ssh://root@node1/system"\nnic_bandwidth = nan\n')
    argv = [a.format(scenario=scenario, hosts=hosts) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
