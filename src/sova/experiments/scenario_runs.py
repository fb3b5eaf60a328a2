"""Run a scenario on the simulator once per profile, on the same workload and seed.

Each profile gets a fresh Simulator (same seed, so the same workload), the ``sim`` driver, the
profile's policies in a Runtime, and a Recorder of outcome metrics. The summary of a profile is the
table documented in docs/outputs.md.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sova.analyze.intensity import io_degree, io_factor, net_degree, network_factor
from sova.analyze.interference import predicted_interference
from sova.analyze.samples import window_samples
from sova.control.audit import AuditLog
from sova.control.profiles import build_admission, build_policies
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.event_player import EventPlayer
from sova.experiments.measure_window import MeasureWindow
from sova.experiments.parallel import run_all
from sova.experiments.rule_watch import RuleWatch
from sova.experiments.vm_groups import vm_groups
from sova.model.actions import Action
from sova.model.knowledge import Knowledge
from sova.model.scenario import Scenario
from sova.model.slo_reader import slo_book
from sova.plan.base import controllers
from sova.plan.dsriov import VF_PARAMS
from sova.plan.storage.io_control import IoController, bind_all
from sova.sim.engine import Simulator
from sova.sim.recorder import PER_HOST_MAX, Recorder, mixture_quantile
from sova.sim.records import LifecycleRecord, MigrationRecord
from sova.sim.sla import sla_metrics

ProgressCallback = Callable[[str, float, float], None]  # (profile, simulated seconds done, of all)


@dataclass
class ProfileResult:
    profile: str
    summary: dict
    series: dict[str, np.ndarray]
    migrations: list[MigrationRecord]
    audit: AuditLog
    services: list[dict] = field(default_factory=list)
    vf_events: list[tuple[float, str, str, str]] = field(default_factory=list)
    initial_vfs: frozenset[str] = frozenset()
    slo_intervals: list[dict] = field(default_factory=list)  # IO controllers' rows per VM and 30 s

    def vf_holders(self, t: float) -> list[str]:
        """VMs holding a VF at time t (after the events up to t)."""
        held = set(self.initial_vfs)
        for when, vm, _, event in self.vf_events:
            if when > t:
                break
            (held.add if event == "attached" else held.discard)(vm)
        return sorted(held, key=lambda vm_name: (len(vm_name), vm_name))


def run_scenario(
    scenario: Scenario,
    profiles: list[str] | None = None,
    seed: int | None = None,
    progress: ProgressCallback | None = None,
) -> list[ProfileResult]:
    names = profiles or list(scenario.profiles)
    unknown = [name for name in names if name not in scenario.profiles]
    if unknown:
        raise KeyError(
            f"profile(s) {', '.join(unknown)} not in the scenario; it defines {', '.join(scenario.profiles)}"
        )
    return run_all(functools.partial(_run_named, scenario, seed, progress), names)


def _run_named(scenario: Scenario, seed: int | None, progress: ProgressCallback | None, name: str) -> ProfileResult:
    return run_profile(scenario, name, seed, progress)


@dataclass
class SweepRun:
    """The results of every profile at one value of the swept key."""

    value: object
    results: list[ProfileResult]


def run_sweep(
    scenarios: list[Scenario], values, profiles: list[str] | None = None, progress: ProgressCallback | None = None
):
    """Run every profile at every value; `scenarios` holds one scenario per value. A run that fails ends the
    sweep with RunFailed, whose items are (value, profile) pairs in this order."""
    names = profiles or list(scenarios[0].profiles)
    pairs = [(scenario, name) for scenario in scenarios for name in names]
    results = run_all(functools.partial(_run_pair, progress), pairs)
    return [
        SweepRun(value, results[value_index * len(names) : (value_index + 1) * len(names)])
        for value_index, value in enumerate(values)
    ]


def _run_pair(progress: ProgressCallback | None, pair: tuple[Scenario, str]) -> ProfileResult:
    return run_profile(pair[0], pair[1], progress=progress)


def run_study(
    scenarios: list[Scenario],
    profiles: list[str],
    workers: int = 1,
    cluster: str | None = None,
    done: Callable[[int], None] | None = None,
) -> list[list[ProfileResult]]:
    """Every profile on every scenario (the values of a sweep), each an independent run: in `workers`
    processes or on a Dask cluster (``control.parallel``); per scenario, the profiles' results in order.
    A run is deterministic for its seed, so the results are a serial run's (but for wall times)."""
    items = [(scenario, name) for scenario in scenarios for name in profiles]
    results = run_all(_run_item, items, workers, cluster, done)
    return [
        results[scenario_index * len(profiles) : (scenario_index + 1) * len(profiles)]
        for scenario_index in range(len(scenarios))
    ]


def _run_item(item: tuple[Scenario, str]) -> ProfileResult:
    return run_profile(*item)


@dataclass
class ProfileStart:
    """A profile's run set up and not yet stepped: the simulator, its driver and the MAPE-K loop over it."""

    scenario: Scenario  # as the profile runs it (its own [simulator] keys)
    policies: list
    controllers: list[IoController]
    sim: Simulator
    driver: SimDriver
    runtime: Runtime
    events: EventPlayer


def start_profile(scenario: Scenario, name: str, seed: int | None = None) -> ProfileStart:
    """Profile `name`'s run set up; `run_profile` steps it to the end, `run_until` to a time."""
    scenario = scenario.for_profile(name)  # its clock too: a profile's own storage_step ticks finer
    prof = scenario.profiles[name]
    policies = build_policies(scenario, prof)
    controllers = bind_controllers(policies, scenario)
    sim = Simulator(scenario, seed)
    driver = SimDriver(sim)
    runtime = Runtime(
        driver, policies, scenario.control, prof.mode, scenario.topology, build_admission(prof), rules=scenario.rules
    )
    return ProfileStart(
        scenario, policies, controllers, sim, driver, runtime, EventPlayer(scenario.events, runtime, sim)
    )


def run_until(
    scenario: Scenario, name: str, at: float, seed: int | None = None, progress: ProgressCallback | None = None
) -> ProfileStart:
    """Profile `name` run on the simulator to time `at` (the tick at or after it), as `run_profile` runs it."""
    run = start_profile(scenario, name, seed)
    run.runtime.tick()
    ticks = math.ceil(at / run.scenario.tick - 1e-9)
    for tick_index in range(ticks):
        run.sim.step()
        run.events.tick(run.scenario.tick)
        run.runtime.tick()
        if progress is not None:
            progress(name, (tick_index + 1) * run.scenario.tick, ticks * run.scenario.tick)
    return run


def run_profile(
    scenario: Scenario,
    name: str,
    seed: int | None = None,
    progress: ProgressCallback | None = None,
    plan: tuple[Action, ...] = (),
) -> ProfileResult:
    """Profile `name` run to the scenario's end; `plan`: actions an operator approved at the start (what-if),
    submitted as a plan once the loop has its first observation."""
    run = start_profile(scenario, name, seed)
    scenario, sim, runtime, events = run.scenario, run.sim, run.runtime, run.events
    policies, controllers, driver = run.policies, run.controllers, run.driver
    prof = scenario.profiles[name]
    initial_vfs = frozenset(sim.vm_names[vm_index] for vm_index in np.flatnonzero(sim.vms.on_vf & sim.vms.present))
    per_host = scenario.outputs.per_vm or len(sim.host_names) <= PER_HOST_MAX
    vm_names = sim.vm_names if scenario.outputs.per_vm else None
    rec = Recorder(sim.host_names, per_host, scenario.outputs.sample_every, vm_names)
    ticks = round(scenario.duration / scenario.tick)
    sensor = [driver.observe()] if scenario.outputs.intensity else None
    watch = RuleWatch(scenario.rules, sim)
    window = MeasureWindow(scenario.outputs.measure_from, scenario.outputs.measure_to)
    window.observe(sim)
    wall0 = time.perf_counter()
    runtime.tick()
    if plan:
        runtime.executor.submit(list(plan), runtime.knowledge)
    for tick_index in range(ticks):
        sim.step()
        events.tick(scenario.tick)
        runtime.tick()
        if not sim.step_ended:
            continue  # a storage epoch inside a fabric step: the loop ran, the recorder waits for the step
        rec.record(sim)
        window.observe(sim)
        watch.observe(scenario.step)
        if sensor is not None:  # one sample per step, as the Sova sensor samples every second
            sensor.append(driver.observe())
        if progress is not None:  # in simulated seconds; the last tick says the whole duration exactly
            progress(
                name,
                scenario.duration if tick_index + 1 == ticks else (tick_index + 1) * scenario.tick,
                scenario.duration,
            )
    for vm in list(sim.migrations.under_way):  # still in flight at the end of the run
        sim.cancel_migration(vm, "unfinished")
    wall = time.perf_counter() - wall0
    services = _services(sim, rec)
    summary = _summary(scenario, prof, sim, rec, runtime.audit, services, wall, window.totals(sim))
    if sensor is not None:
        summary["intensity"] = _intensity(sensor)
    counted = {policy.name: dict(policy.counts) for policy in policies if policy.counts}
    if counted:
        summary["policy_counts"] = counted
    if events.records:
        summary["events"] = [record.to_dict() for record in events.records]
    if scenario.rules:
        summary["rules"] = watch.summary()
    if scenario.outputs.groups:
        summary["groups"] = vm_groups(sim, rec, services, scenario.outputs.groups)
    if scenario.outputs.interference:
        summary["interference"] = predicted_interference(runtime.knowledge, scenario.outputs.interference)
    if scenario.slos:
        summary["slo"] = {vm: vm_slo for controller in controllers for vm, vm_slo in controller.slo_summary().items()}
    intervals = [row for controller in controllers for row in controller.intervals]
    return ProfileResult(
        profile=name,
        summary=summary,
        series=rec.series(),
        migrations=list(sim.migrations.log),
        audit=runtime.audit,
        services=services,
        vf_events=list(sim.vfs.log),
        initial_vfs=initial_vfs,
        slo_intervals=sorted(intervals, key=lambda row: row["time"]),
    )


def bind_controllers(policies: list, scenario: Scenario) -> list[IoController]:
    """Give the profile's IO controllers the scenario's storage SLOs and each VM's storage server."""
    if not controllers(policies):
        return []
    names = [vm.name for vm in scenario.vms]
    return bind_all(policies, slo_book(names, scenario.slos), {vm.name: vm.storage for vm in scenario.vms})


def _services(sim: Simulator, rec: Recorder) -> list[dict]:
    group = sim.workloads.group("httperf")
    stats = rec.service_stats()
    if group is None or stats is None:
        return []
    out = []
    for service_index in range(len(group)):
        client = int(group.params["client"][service_index])
        out.append(
            {
                "server": sim.vm_names[int(group.vm[service_index])],
                "client": sim.vm_names[client] if client >= 0 else "external",
                "rate": float(group.params["rate"][service_index]),
                "page_bytes": float(group.params["page"][service_index]),
                "served": float(stats["served"][service_index]),
                "dropped": float(stats["dropped"][service_index]),
                **_response_times(
                    stats["served"][service_index],
                    stats["mean"][service_index],
                    stats["p95"][service_index],
                    stats["p99"][service_index],
                ),
            }
        )
    return out


NO_MIGRATION = "no migration completed in the run"
NOTHING_SERVED = "no request was served in the run (every one was dropped or none was sent)"


def _response_times(served: float, mean: float, p95: float, p99: float) -> dict:
    """Response-time statistics; with nothing served they are undefined (null, and the reason why)."""
    if served > 0:
        return {"response_mean": float(mean), "response_p95": float(p95), "response_p99": float(p99)}
    keys = ("response_mean", "response_p95", "response_p99")
    return {**dict.fromkeys(keys), "undefined": dict.fromkeys(keys, NOTHING_SERVED)}


def _intensity(snapshots) -> dict[str, dict[str, float]]:
    """IF, NF, io_degree and net_degree of every VM over the whole run (with the dsriov defaults)."""
    knowledge = Knowledge(float("inf"))
    for snap in snapshots:
        knowledge.add(snap)
    samples = window_samples(knowledge, float("inf"))
    params = {name: spec.default for name, spec in VF_PARAMS.items()}
    factors = {
        "IF": io_factor(samples),
        "NF": network_factor(samples, params["eps"], params["min_packets"]),
        "io_degree": io_degree(samples),
        "net_degree": net_degree(samples, params["eps_degree"], params["min_packets"]),
    }
    names = snapshots[-1].vms
    return {
        vm: {factor: float(per_vm[vm_index]) for factor, per_vm in factors.items()} for vm_index, vm in enumerate(names)
    }


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else 0.0


def _summary(
    scenario, prof, sim: Simulator, rec: Recorder, audit: AuditLog, services, wall: float, measured: dict
) -> dict:
    """The profile's summary; `measured`: the energy and SLA counters over the measured window."""
    series = rec.series()
    out: dict = {
        "profile": prof.name,
        "policies": list(prof.policies),
        "mode": prof.mode,
        "seed": scenario.seed,
        "simulated_seconds": float(sim.t),
        "wall_seconds": wall,
        "speed": float(sim.t / max(wall, 1e-9)),
        "hosts": sim.n_hosts,
        "vms": sim.n_vms,
        "cpu": {
            "host_util_mean": float(np.mean(series["host_util_mean"])),
            "host_util_max": float(np.max(series["host_util_max"])),
            "host_util_max_p95": _pct(series["host_util_max"], 95),
            "hot_host_fraction": float(np.mean(series["host_util_max"] > 0.9)),
            "dom0_util_mean": float(np.mean(series["dom0_util_mean"])),
        },
        "network": {
            "link_util_max_mean": float(np.mean(series["link_util_max"])),
            "nic_tx_util_max_mean": float(np.mean(series["nic_tx_util_max"])),
            "nic_rx_util_max_mean": float(np.mean(series["nic_rx_util_max"])),
            "bytes_total": float(sim.sensors.flow_bytes.sum()),
            "guest_tx_gbps": float(sim.sensors.counters["guest_tx_bytes"].sum() * 8 / max(sim.t, 1e-9) / 1e9),
            "guest_rx_gbps": float(sim.sensors.counters["guest_rx_bytes"].sum() * 8 / max(sim.t, 1e-9) / 1e9),
        },
        "energy_kwh": float(measured["energy_j"].sum() / 3.6e6),
    }
    out |= sla_metrics(
        measured["host_active_s"],
        measured["host_short_s"],
        measured["vm_cpu_asked"],
        measured["vm_migration_loss"],
        out["energy_kwh"],
    )
    out |= {"host_shutdowns": int(sim.power.shutdowns.sum()), "host_wakes": int(sim.power.wakes.sum())}
    if rec.per_host:
        dom0 = sim.sensors.counters["dom0_cpu_time"] / max(sim.t, 1e-9) / sim.compute.dom0_vcpus
        out["hosts"] = {
            host: {
                "cpu_mean": float(np.mean(series[f"cpu:{host}"])),
                "nic_tx_mean": float(np.mean(series[f"nic_tx:{host}"])),
                "dom0_mean": float(dom0[host_index]),
            }
            for host_index, host in enumerate(sim.host_names)
        }
    if services:
        served = np.array([service["served"] for service in services])
        total = served.sum()
        st = rec.svc
        weights, fl, mean = (np.concatenate(st[column]) for column in ("served", "floor", "mean"))
        excess = np.maximum(mean - fl, 1e-12)
        out["services"] = {
            "count": len(services),
            "served": float(total),
            "dropped": float(sum(service["dropped"] for service in services)),
            "throughput_rps": float(total / max(sim.t, 1e-9)),
            **_response_times(
                total,
                sum(service["served"] * service["response_mean"] for service in services if service["served"] > 0)
                / max(total, 1.0),
                mixture_quantile(weights, fl, excess, 0.95) if total else np.nan,
                mixture_quantile(weights, fl, excess, 0.99) if total else np.nan,
            ),
        }
        _undefined(out, "services", out["services"].pop("undefined", {}))
    if rec.batch:
        times = np.array([job.seconds for job in rec.batch])
        out["batch"] = {
            "jobs": len(times),
            "completion_mean": float(times.mean()),
            "completion_p95": _pct(times, 95),
        }
    if rec.jobs:
        times = np.array([job.seconds for job in rec.jobs])
        out["mapreduce"] = {
            "jobs": len(times),
            "completion_mean": float(times.mean()),
            "map_mean": float(np.mean([job.map_seconds for job in rec.jobs])),
            "reduce_mean": float(np.mean([job.reduce_seconds for job in rec.jobs])),
        }
    group = sim.workloads.group("transfer")
    if group is not None:
        times = np.array([transfer.seconds for transfer in rec.transfers])
        out["transfers"] = {
            "count": len(group),
            "completed": len(times),
            "completion_mean": float(times.mean()) if len(times) else None,
            "completion_max": float(times.max()) if len(times) else None,
        }
        if not len(times):
            _undefined(out, "transfers", dict.fromkeys(("completion_mean", "completion_max"), "no transfer finished"))
    io = sim.sensors.counters["blk_rd_ops"] + sim.sensors.counters["blk_wr_ops"]
    if io.sum() > 0:
        out["storage"] = {
            "iops_mean": float(io.sum() / sim.t),
            "throughput_mean": float(
                (sim.sensors.counters["blk_rd_bytes"] + sim.sensors.counters["blk_wr_bytes"]).sum() / sim.t
            ),
            "latency_mean": float(sim.sensors.counters["blk_time"].sum() / io.sum()),
        }
    done = [migration for migration in sim.migrations.log if migration.status == "completed"]
    out["migrations"] = {
        "count": len(sim.migrations.log),
        "completed": len(done),
        "failed": len(sim.migrations.log) - len(done),
        "not_converged": sum(migration.status == "not-converged" for migration in sim.migrations.log),
        "timed_out": sum(migration.status == "timed-out" for migration in sim.migrations.log),
        "postcopy": sum(migration.mode == "postcopy" for migration in sim.migrations.log),
        "throttle_max": float(max((migration.throttle for migration in sim.migrations.log), default=0.0)),
        "time_total": float(sum(migration.finished - migration.started for migration in done)),
        "time_mean": float(np.mean([migration.finished - migration.started for migration in done])) if done else None,
        "bytes": float(sum(migration.bytes for migration in sim.migrations.log)),
        "downtime_mean": float(np.mean([migration.downtime for migration in done])) if done else None,
        "downtime_max": float(max(migration.downtime for migration in done)) if done else None,
    }
    if not done:
        _undefined(out, "migrations", dict.fromkeys(("time_mean", "downtime_mean", "downtime_max"), NO_MIGRATION))
    if sim.lifecycle.log:
        out["lifecycle"] = _lifecycle(sim.lifecycle.log, len(sim.lifecycle.waiting))
        if out["lifecycle"]["wait_mean"] is None:
            _undefined(out, "lifecycle", {"wait_mean": "no VM was placed by the admission policy"})
    out["vfs"] = {
        "attached": sum(1 for entry in sim.vfs.log if entry[3] == "attached"),
        "detached": sum(1 for entry in sim.vfs.log if entry[3] == "detached"),
        "holders_at_end": sorted(
            (sim.vm_names[vm_index] for vm_index in np.flatnonzero(sim.vms.on_vf & sim.vms.present)),
            key=lambda vm_name: (len(vm_name), vm_name),
        ),
    }
    out["actions"] = {
        "proposed": audit.count("proposed"),
        "applied": audit.count("applied"),
        "rejected": audit.count("rejected"),
        "succeeded": audit.count("finished", "ok")
        + sum(1 for entry in audit.entries if entry.event == "applied" and entry.status == "ok"),
        "failed": audit.count(status="failed") + audit.count(status="timeout"),
        "dry_run": audit.count("dry-run"),
        "pending": audit.count("pending"),
        "expired": audit.count("expired"),
    }
    return out


def _lifecycle(log: list[LifecycleRecord], still_waiting: int) -> dict:
    """Counts of VMs that came and went, and how long the ones the admission policy placed waited."""
    asked = {record.vm: record.time for record in log if record.event == "arrived"}
    waits = [record.time - asked[record.vm] for record in log if record.event == "created" and record.vm in asked]
    count = lambda event: sum(record.event == event for record in log)  # noqa: E731
    return {
        "arrived": count("arrived")
        + sum(record.event in ("created", "refused") and record.vm not in asked for record in log),
        "created": count("created"),
        "refused": count("refused"),
        "deleted": count("deleted"),
        "withdrawn": count("withdrawn"),
        "never_placed": count("withdrawn") + count("refused") + still_waiting,
        "wait_mean": float(np.mean(waits)) if waits else None,
        "wait_max": float(max(waits)) if waits else None,
    }


def _undefined(summary: dict, section: str, reasons: dict[str, str]) -> None:
    """Record why metrics of a section are null, under the summary's "undefined" (dotted path -> reason)."""
    if reasons:
        summary.setdefault("undefined", {}).update(
            {f"{section}.{metric}": reason for metric, reason in reasons.items()}
        )
