"""The bad inputs a newcomer met, closed: no run lost after its work is done, no value taken that silently
makes the results meaningless. Each case broke before (a traceback after the simulation, a hang, a number
taken without a word); now it is refused before anything runs, warned of, or run right."""

import json
import re
import socket

import pyarrow.parquet as pq
import pytest

from helpers import ROOT, SMALL
from sova.cli import main
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import InputError

BASE = SMALL.replace("duration = 120", "duration = 20").replace('kind = "lookbusy"', 'kind = "lookbusy"\nduty = 0.5')


def _file(tmp_path, text: str, name: str = "s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def _warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]


# ---------------------------------------------------------------- a profile's own settings


@pytest.mark.parametrize("storage_step", [0.3, 7])
def test_a_profiles_own_storage_step_is_checked_as_the_scenarios_is(tmp_path, capsys, storage_step):
    text = BASE + f"simulator = {{ storage_step = {storage_step} }}\n"
    assert main(["validate", str(_file(tmp_path, text))]) == 2
    (line,) = _errors(capsys)
    assert f"[profiles.threshold.simulator].storage_step: {storage_step:g} s does not divide the step" in line


def test_a_profile_with_a_finer_storage_step_runs_its_whole_duration_at_that_tick(tmp_path, capsys):
    text = BASE + "simulator = { storage_step = 0.01 }\n"
    out = tmp_path / "out"
    assert main(["run", str(_file(tmp_path, text)), "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    for profile in ("default", "threshold"):
        assert doc["profiles"][profile]["simulated_seconds"] == pytest.approx(20.0)
        assert doc["profiles"][profile]["cpu"]["host_util_mean"] > 0


def test_the_progress_counts_simulated_seconds_whatever_a_profiles_tick(tmp_path, capsys):
    text = BASE + "simulator = { storage_step = 0.025 }\n"
    progress = tmp_path / "progress.json"
    args = ["run", str(_file(tmp_path, text)), "--out", str(tmp_path / "out"), "--progress-file", str(progress)]
    assert main(args) == 0
    assert json.loads(progress.read_text()) == {"done": 40.0, "total": 40.0, "unit": "simulated seconds"}
    assert "simulated s" in capsys.readouterr().err and "sim-s" not in capsys.readouterr().err


# ---------------------------------------------------------------- trials


def _trials(tmp_path, profiles: str) -> str:
    """Virtue's web-20 with two trials of 20 s and the given profiles."""
    text = (ROOT / "scenarios/papers/virtue/web-20.toml").read_text()
    text = text.replace("count = 50", "count = 2").replace('duration = "70s"', 'duration = "20s"')
    return str(_file(tmp_path, text[: text.index("[profiles.random]")] + profiles))


def test_trials_without_a_profile_named_random_run_and_compare_with_the_random_placements(tmp_path):
    path = _trials(tmp_path, '[profiles.none]\npolicies = []\n[profiles.greedy-fill]\npolicies = ["greedy-fill"]\n')
    out = tmp_path / "out"
    assert main(["run", path, "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    stats = doc["values"][0]["stats"]
    assert set(stats) == {"none", "greedy-fill"} and stats["none"]["web"]["median_vs_random_median"] == 1.0


def test_validate_refuses_a_trials_scenario_with_a_profile_that_is_no_placement_algorithm(tmp_path, capsys):
    path = _trials(tmp_path, '[profiles.t]\npolicies = ["threshold-migration"]\n')
    assert main(["validate", path]) == 2
    (line,) = _errors(capsys)
    assert "[profiles.t].policies: a [trials] scenario compares placement algorithms" in line


# ---------------------------------------------------------------- command-line arguments


def test_a_seed_beyond_64_bits_is_refused_before_anything_runs(tmp_path, capsys):
    path = _file(tmp_path, BASE)
    with pytest.raises(SystemExit):
        main(["run", str(path), "--out", str(tmp_path / "out"), "--seed", str(2**64)])
    assert "--seed: expected a whole number from 0 to 2^63 - 1" in capsys.readouterr().err
    assert (
        main(["validate", str(_file(tmp_path, BASE.replace("duration = 20", f"duration = 20\nseed = {2**63}")))]) == 2
    )
    assert (
        "[scenario].seed: got 9223372036854775808; expected an integer >= 0 and <= 9223372036854775807"
        in (_errors(capsys)[0])
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("address", ["notaurl", "http://127.0.0.1:8786", "tcp://host", "tcp://:8786", "tcp://h:0"])
def test_a_cluster_that_is_no_dask_address_is_a_usage_error(tmp_path, capsys, address):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(_file(tmp_path, BASE)), "--cluster", address])
    assert exc.value.code == 2
    assert f"--cluster: expected a Dask scheduler's address such as tcp://HOST:8786 (tcp or tls), got {address!r}" in (
        capsys.readouterr().err
    )


def test_a_cluster_nobody_listens_at_is_an_error_saying_so_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["run", str(_file(tmp_path, BASE)), "--out", str(out), "--quiet", "--cluster", "tcp://127.0.0.1:9"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("where", ["a-directory", "no-such-directory/progress.json"])
def test_a_progress_file_that_cannot_be_written_is_refused_before_the_run_and_leaves_nothing(tmp_path, capsys, where):
    (tmp_path / "a-directory").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    target = tmp_path / where
    args = ["run", str(_file(tmp_path, BASE)), "--out", str(tmp_path / "out"), "--progress-file", str(target)]
    assert main(args) == 2
    (line,) = _errors(capsys)
    assert line.startswith(f"error: --progress-file {target}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "s.toml"])  # no .partial, no --out


def test_an_empty_out_is_refused_not_taken_as_the_current_directory(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", str(_file(tmp_path, BASE)), "--out", ""])
    assert "argument --out: expected a path, got ''" in capsys.readouterr().err


def test_serve_into_a_directory_that_cannot_be_made_says_so_and_starts_nothing(capsys):
    scenario = ROOT / "scenarios/service/moving-hotspots.toml"
    with socket.socket() as probe:  # a port nobody listens on, for the API that is never started
        probe.bind(("127.0.0.1", 0))
        api = f"127.0.0.1:{probe.getsockname()[1]}"
    assert main(["serve", "--sim", str(scenario), "--dir", "/proc/sova-cannot-be-here", "--api", api]) == 2
    (line,) = _errors(capsys)
    assert line.startswith("error: --dir /proc/sova-cannot-be-here: cannot be created")


# ---------------------------------------------------------------- the fabric


@pytest.mark.parametrize(
    "topology",
    [
        'kind = "fat-tree"\nk = 1000',
        'kind = "leaf-spine"\nleaves = 2000\nspines = 2000',
        'kind = "fat-tree"\nk = 200',
    ],
)
def test_a_fabric_of_millions_of_links_is_refused_at_once_before_it_is_built(tmp_path, capsys, topology):
    assert main(["validate", str(_file(tmp_path, BASE + f"[topology]\n{topology}\n"))]) == 2
    (line,) = _errors(capsys)
    assert re.search(r"\[topology\]: a \S+ with these sizes has [\d,]+ nodes and [\d,]+ links for 2 hosts", line)
    assert "expected at most 2,000,000 links" in line


def test_a_fabric_far_larger_than_its_hosts_is_a_warning(tmp_path, capsys):
    assert main(["validate", str(_file(tmp_path, BASE + '[topology]\nkind = "fat-tree"\nk = 60\n'))]) == 0
    (line,) = _warnings(capsys)
    assert "[topology]: a fat-tree of 54,000 host ports and" in line and "for 2 hosts: most of it is empty" in line


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("[topology]\nuplink_speed = -5", "[topology].uplink_speed: got -5.0; expected a bandwidth"),
        ("[simulator]\nprotocol_efficiency = 0", "[simulator].protocol_efficiency: got 0.0; expected a number > 0"),
        ("[simulator]\nprotocol_efficiency = -1", "[simulator].protocol_efficiency: got -1.0; expected a number > 0"),
        (
            "[simulator]\nprotocol_efficiency = 2",
            "[simulator].protocol_efficiency: got 2.0; expected a number > 0 and <= 1",
        ),
    ],
)
def test_a_number_that_would_stall_or_drop_every_flow_is_refused(tmp_path, capsys, setting, expected):
    assert main(["validate", str(_file(tmp_path, BASE + setting + "\n"))]) == 2
    (line,) = _errors(capsys)
    assert expected in line


# ---------------------------------------------------------------- validate says ok only where run works


def test_a_policy_of_an_earlier_version_is_refused_with_its_new_name(tmp_path, capsys):
    assert main(["validate", str(_file(tmp_path, BASE + '[profiles.old]\npolicies = ["sova"]\n'))]) == 2
    (line,) = _errors(capsys)
    assert "[profiles.old].policies: unknown policy 'sova' (did you mean 'dsriov-vlm'?)" in line


def test_a_profile_name_that_cannot_name_a_file_is_refused(tmp_path, capsys):
    assert main(["validate", str(_file(tmp_path, BASE + '[profiles."../../x y"]\n'))]) == 2
    (line,) = _errors(capsys)
    assert "[profiles.../../x y]: '../../x y' cannot name the profile's result files" in line


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            "[profiles.threshold.params.threshold-migration]\nhot = 0.6\ntarget = 0.8\n",
            "[profiles.threshold.params.threshold-migration].target: 0.8 is above hot = 0.6; expected at most hot",
        ),
        (
            "[profiles.threshold.params.threshold-migration]\nk = 6\nn = 5\n",
            "[profiles.threshold.params.threshold-migration].k: 6 is above n = 5",
        ),
        ('[[vms]]\nname = "x"\nblock = "3/2"\n', "[[vms]] #2 (x).block: '3/2' is read only with files"),
        ('[[hosts]]\nname = "small"\nmemory = "2GiB"\ndom0_memory = "4GiB"\n', "dom0_memory: 4,096 MiB leaves nothing"),
    ],
)
def test_a_setting_a_run_could_only_get_wrong_is_refused(tmp_path, capsys, change, expected):
    assert main(["validate", str(_file(tmp_path, BASE + change))]) == 2
    assert any(expected in line for line in _errors(capsys))


def test_a_sweep_value_given_twice_is_refused(tmp_path, capsys):
    text = BASE + '[sweep]\ntable = "workloads"\nkind = "lookbusy"\nkey = "duty"\nvalues = [0.2, 0.5, 0.2]\n'
    assert main(["validate", str(_file(tmp_path, text))]) == 2
    (line,) = _errors(capsys)
    assert "[sweep].values: 0.2 is given twice; expected each value once" in line


# ---------------------------------------------------------------- taken, with a warning


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("cores = 4", "cores = 4\ndom0_vcpus = 64"), "dom0_vcpus = 64 on 4 cores (and 1 more): more Dom0 vCPUs"),
        (('host = "h1"', 'host = "h1"\nmemory = "1GiB"\nwss = "2GiB"'), "wss 2,048 MiB of 1,024 MiB (and 3 more)"),
        (("", '[[vms]]\nname = "late"\narrive = 30\n'), "[[vms]] (late): arrive = 30 s: at or after the end"),
        (("duty = 0.5", "duty = 0.5\nphases = [{ at = 25, duty = 1.0 }]"), ".phases #1.at: 25 s is at or after"),
        (("", "[control]\nmonitor_period = 60\n"), "[control].monitor_period: 60 s is longer than the 20 s run"),
        (("", "[outputs]\ninterference = 60\n"), "[outputs].interference: 60 s is longer than the 20 s run"),
        (
            ("", '[[rules]]\nkind = "anti-affinity"\nvms = ["v1", "v2"]\n'),
            "the starting placement breaks it: rule-1 (must anti-affinity: VMs v1, v2) is broken by v1, v2 on h1",
        ),
        (
            (
                "",
                '[[storage]]\nname = "s"\n[[slos]]\nvm = "v*"\nthroughput = [10, 20]\n[[slos]]\nvm = "v2"\nthroughput = [5, 9]\n',
            ),
            "[[slos]] #2.vm: 'v2' gives v2 a second SLO, after [[slos]] #1 (v*)",
        ),
        (('host = "h1"', 'host = "h1"\nmemory = 4'), "memory: 4 MiB is outside what is typical (>= 32 MiB"),
        (("", "[topology]\nuplink_speed = 5\n"), "uplink_speed: 5 bit/s is outside what is typical (>= 1 kb/s"),
        (
            ("", '[[vms]]\nname = "n1"\n[[workloads]]\nvm = "n1"\nkind = "netperf"\npeer = "n1"\n'),
            "[[workloads]] #3.peer: is n1 itself (of 'n1'): its traffic to itself crosses no network",
        ),
    ],
    ids=["dom0", "wss", "arrive", "phase", "monitor", "interference", "rule", "slos", "memory", "uplink", "peer"],
)
def test_a_value_that_is_most_likely_not_meant_is_a_warning_and_the_run_goes_ahead(tmp_path, capsys, change, expected):
    old, new = change
    text = BASE.replace(old, new, 1) if old else BASE + new
    assert main(["validate", str(_file(tmp_path, text))]) == 0
    warnings = _warnings(capsys)
    assert len(warnings) == 1 and expected in warnings[0], warnings


# ---------------------------------------------------------------- small things


def test_an_unclosed_table_header_is_named_as_such(tmp_path, capsys):
    text = BASE.replace("[profiles.default]", "[scenario\n[profiles.default]")
    assert main(["validate", str(_file(tmp_path, text))]) == 2
    (line,) = _errors(capsys)
    assert "the table header '[scenario' is not closed: expected ']' at its end" in line


def test_one_vm_too_big_for_any_host_is_spoken_of_in_the_singular(tmp_path, capsys):
    text = BASE + '[[vms]]\nname = "web"\nmemory = "64GiB"\n'
    assert main(["validate", str(_file(tmp_path, text))]) == 2
    assert any("web needs 65536 MiB, more than any host has" in line for line in _errors(capsys))


def test_a_run_without_migrations_has_no_migration_times_and_no_empty_audit_file(tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(_file(tmp_path, BASE)), "--out", str(out), "--quiet", "--profile", "default"]) == 0
    summary = json.loads((out / "summary.json").read_text())["profiles"]["default"]
    assert summary["migrations"]["downtime_mean"] is None and summary["migrations"]["time_mean"] is None
    assert summary["undefined"]["migrations.downtime_mean"] == "no migration completed in the run"
    assert "n/a" in (out / "report.html").read_text()
    assert not (out / "audit-default.jsonl").exists()


# ---------------------------------------------------------------- a crash after the work keeps the work


def test_a_profile_that_fails_after_others_finished_keeps_theirs_and_says_what_failed(tmp_path, capsys, monkeypatch):
    import sova.experiments.scenario_runs as experiment

    run_profile = experiment.run_profile

    def failing(scenario, name, seed=None, progress=None):
        if name == "threshold":
            raise KeyError("host_util_mean")  # as a bug after the simulation would
        return run_profile(scenario, name, seed, progress)

    monkeypatch.setattr(experiment, "run_profile", failing)
    out = tmp_path / "out"
    assert main(["run", str(_file(tmp_path, BASE)), "--out", str(out), "--quiet"]) == 1
    (line,) = _errors(capsys)
    assert f"profile threshold failed: KeyError: 'host_util_mean'; the 1 of 2 runs that finished are in {out}/" in line
    doc = json.loads((out / "summary.json").read_text())
    assert doc["incomplete"]["failed"] == "profile threshold"
    assert [run["profile"] for run in doc["runs"]] == ["default"]
    assert doc["runs"][0]["summary"]["simulated_seconds"] == 20.0
    assert pq.read_table(out / "metrics.parquet").num_rows == 20
    assert "Traceback" in (out / "error.txt").read_text()


def test_a_sweep_that_fails_at_one_value_keeps_the_values_before_it(tmp_path, capsys, monkeypatch):
    import sova.experiments.scenario_runs as experiment

    run_profile = experiment.run_profile

    def failing(scenario, name, seed=None, progress=None):
        if "duty = 0.9" in scenario.source and name == "threshold":
            raise ValueError("a bug")
        return run_profile(scenario, name, seed, progress)

    monkeypatch.setattr(experiment, "run_profile", failing)
    text = BASE + '[sweep]\ntable = "workloads"\nkind = "lookbusy"\nkey = "duty"\nvalues = [0.2, 0.9]\n'
    out = tmp_path / "out"
    assert main(["run", str(_file(tmp_path, text)), "--out", str(out), "--quiet"]) == 1
    doc = json.loads((out / "summary.json").read_text())
    assert doc["incomplete"]["failed"] == "profile threshold at duty = 0.9"
    assert [(run["profile"], run["duty"]) for run in doc["runs"]] == [
        ("default", 0.2),
        ("threshold", 0.2),
        ("default", 0.9),
    ]


def test_every_number_a_scenario_or_a_policy_reads_has_a_range():
    import importlib
    import pkgutil

    import sova
    from sova.model.schema import Field
    from sova.plan.base import registry

    numeric = ("int", "float", "bandwidth", "size", "memory", "duration")
    schemas = {}
    for module in pkgutil.walk_packages(sova.__path__, "sova."):
        if not module.name.endswith("__main__"):
            for name, value in vars(importlib.import_module(module.name)).items():
                if isinstance(value, dict) and value and all(isinstance(f, Field) for f in value.values()):
                    schemas[f"{module.name}.{name}"] = value
    schemas |= {f"policy {name}": cls.schema for name, cls in registry().items() if cls.__module__.startswith("sova.")}
    unbounded = [
        f"{where}.{key}"
        for where, fields in schemas.items()
        for key, f in fields.items()
        if f.kind in numeric and f.lo is None
    ]
    assert len(schemas) > 30 and not unbounded


def test_a_scenario_with_every_key_at_its_default_reads_without_warnings():
    scenario = scenario_from_dict(
        {"scenario": {"name": "d", "duration": 60}, "hosts": [{"name": "h"}], "vms": [{"name": "v"}]}
    )
    assert scenario.warnings == ()
    with pytest.raises(InputError):
        scenario_from_dict({"scenario": {"name": "d", "duration": 60, "seed": -1}, "hosts": [{"name": "h"}]})
