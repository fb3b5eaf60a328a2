"""The manager's Prometheus metrics (prometheus-client, its naming conventions: base units, ``_total``
for counters, ``_seconds`` for durations), read from the manager's state when Prometheus scrapes.

- ``sova_host_cpu_utilization_ratio{host}``, ``sova_vm_cpu_cores{vm,host}``: load over the last 10 s
- ``sova_host_vfs{host}``, ``sova_host_vfs_used{host}``, ``sova_vf_holder{host,vm}``: VFs and who holds them
- ``sova_hosts_reporting``, ``sova_reports_received_total``, ``sova_reports_refused_total``, and
  ``sova_host_last_report_timestamp_seconds{host}``: when the manager took each host's latest report (the
  wall clock; every host that reported since the manager started, a silent one included)
- ``sova_vm_io_ops_total{vm,host,op}``, ``sova_vm_io_bytes_total{vm,host,op}`` (op: read, write) and
  ``sova_vm_io_time_seconds_total{vm,host}``: each VM's block IO as its host's latest report counts it
  (libvirt's blockStats, cumulative since the domain started; the simulator's sensors likewise), for the
  fresh hosts. Exposed as reported, never summed up here: a series falls only when its source starts
  again (the domain restarted or came back to that host, or a simulated cluster started anew), which
  ``rate()`` reads as a reset; a late report older than the one taken is ignored (``ReportCollector``)
- ``sova_actions_sent_total{kind}``, ``sova_action_outcomes_total{kind,outcome}``: actions sent, and
  outcomes come back; ``sova_actions_awaiting{kind}``: sent, no outcome yet (a gauge: it falls as
  outcomes come). A counter only grows: an action's row is kept, and its outcome set once.
- ``sova_migration_outcomes_total{outcome}``: the outcomes of live migrations
- ``sova_plans{state}``: plans by state; ``sova_plans_ended_total{state}``: plans that reached an end
  state (a plan's end state is set once and its row kept, so it only grows; every end state is shown,
  0 until one comes, so that ``increase()`` sees the first)
- ``sova_decision_round_seconds``: a decision round's duration, where a policy planned (histogram)
- ``sova_bus_report_lag_seconds``: from an agent's send to the manager's receipt (histogram)
- ``sova_manager_leader``: 1 while this manager leads
- ``sova_vm_slo_target_io_ops_per_second``, ``sova_vm_slo_compliance_ratio``,
  ``sova_vm_slo_fluctuation_ratio``, ``sova_vm_io_latency_seconds``: what the agents' SLO engines
  measured of each VM under a storage SLO; ``sova_vm_slo_compliance_target_ratio{vm}``: the lower bound
  of the compliance rate its SLO accepts
- ``sova_forecast_error_ratio{quantity}``: the latest checked plan's forecast error (plan_forecasts.py says
  each quantity's ratio); ``sova_forecasts_checked_total``: plans whose forecast this manager checked;
  ``sova_what_if_running``: what-if children running now (0 or 1)
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from sova.service import views
from sova.service.manager import Manager
from sova.service.plan_book import TERMINAL
from sova.service.reporting import ReportCollector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
disable_created_metrics()  # no `_created` series: the text format shows them as gauge families of their own


class ManagerMetrics:
    def __init__(self, manager: Manager):
        self.manager = manager
        self.registry = CollectorRegistry()
        self.rounds = Histogram(
            "sova_decision_round_seconds",
            "Duration of the manager's decision rounds (monitor, analyze, plan, execute), where a policy planned",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.lag = Histogram(
            "sova_bus_report_lag_seconds",
            "Seconds from an agent's sending a host report to the manager's receiving it",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry,
        )
        self.registry.register(self)
        manager.on_round = self.rounds.observe
        manager.collector.on_lag = self.lag.observe

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)

    def describe(self):
        return []  # the families are read at each scrape (nothing to read when registering)

    def collect(self):
        """The metrics read from the manager's state (called by the registry at each scrape)."""
        manager = self.manager
        knowledge = manager.runtime.knowledge
        host_util = GaugeMetricFamily(
            "sova_host_cpu_utilization_ratio", "Host CPU busy over hardware threads (0-1)", labels=["host"]
        )
        vfs_total = GaugeMetricFamily("sova_host_vfs", "SR-IOV virtual functions of the host", labels=["host"])
        vfs_used = GaugeMetricFamily("sova_host_vfs_used", "Virtual functions in use", labels=["host"])
        for row in views.hosts(knowledge, {}):
            if row["cpu_utilization"] is not None:
                host_util.add_metric([row["name"]], row["cpu_utilization"])
            vfs_total.add_metric([row["name"]], row["vfs_total"])
            vfs_used.add_metric([row["name"]], row["vfs_used"])
        vm_cores = GaugeMetricFamily("sova_vm_cpu_cores", "CPU cores a VM uses", labels=["vm", "host"])
        for row in views.vms(knowledge):
            if row["cpu_cores"] is not None:
                vm_cores.add_metric([row["name"], row["host"]], row["cpu_cores"])
        holders = GaugeMetricFamily("sova_vf_holder", "1 for each VM that holds a VF", labels=["host", "vm"])
        for row in views.vfs(knowledge):
            for vm in row["holders"]:
                holders.add_metric([row["host"], vm], 1)
        yield from (host_util, vfs_total, vfs_used, vm_cores, holders)
        collector = manager.collector
        yield GaugeMetricFamily("sova_hosts_reporting", "Hosts whose latest report is fresh", len(collector.fresh()))
        yield CounterMetricFamily("sova_reports_received", "Host reports taken", collector.received_count)
        yield CounterMetricFamily("sova_reports_refused", "Host reports refused as malformed", collector.refused)
        reported = GaugeMetricFamily(
            "sova_host_last_report_timestamp_seconds",
            "When the manager took the host's latest report (s since the epoch)",
            labels=["host"],
        )
        for host, at in sorted(collector.received_at.items()):
            reported.add_metric([host], at)
        yield reported
        yield from _io_families(collector)
        yield from _action_families(manager.store.action_counts())
        yield from _plan_families(manager.store.plan_counts())
        yield GaugeMetricFamily("sova_manager_leader", "1 while this manager leads", 1 if manager.leading else 0)
        yield from _forecast_families(manager)
        yield from _slo_families(manager.slos.board.latest)
        yield _compliance_targets(manager.store.slos())


IO_COUNTERS = (  # (metric, help, {op label: VmCounters field}); op None: a metric without an op label
    ("sova_vm_io_ops", "Block IO operations a VM completed", {"read": "blk_rd_ops", "write": "blk_wr_ops"}),
    ("sova_vm_io_bytes", "Bytes a VM read and wrote on its disks", {"read": "blk_rd_bytes", "write": "blk_wr_bytes"}),
    ("sova_vm_io_time_seconds", "Total time of the block IOs a VM completed", {None: "blk_time"}),
)


def _io_families(collector: ReportCollector):
    """Each VM's cumulative block IO counters as its fresh host's latest report holds them."""
    for name, text, field_of_op in IO_COUNTERS:
        family = CounterMetricFamily(
            name, text, labels=["vm", "host", "op"] if None not in field_of_op else ["vm", "host"]
        )
        for host in collector.fresh():
            part = collector.latest[host][0]
            for op, counter in field_of_op.items():
                for vm, value in zip(part.vms, getattr(part.counters, counter), strict=True):
                    family.add_metric([vm, host] if op is None else [vm, host, op], float(value))
        yield family


def _action_families(counts: dict[tuple[str, str], int]):
    """Actions sent and their outcomes (counters), and those awaiting one (a gauge), per kind."""
    sent = CounterMetricFamily("sova_actions_sent", "Actions sent to agents", labels=["kind"])
    outcomes = CounterMetricFamily("sova_action_outcomes", "Outcomes of actions sent", labels=["kind", "outcome"])
    migrations = CounterMetricFamily("sova_migration_outcomes", "Outcomes of live migrations", labels=["outcome"])
    awaiting = GaugeMetricFamily("sova_actions_awaiting", "Actions sent with no outcome yet", labels=["kind"])
    by_kind: dict[str, int] = {}
    for (kind, status), count in sorted(counts.items()):
        by_kind[kind] = by_kind.get(kind, 0) + count
        if not status:
            awaiting.add_metric([kind], count)
            continue
        outcomes.add_metric([kind, status], count)
        if kind == "migrate":
            migrations.add_metric([status], count)
    for kind, count in by_kind.items():
        sent.add_metric([kind], count)
    yield from (sent, outcomes, migrations, awaiting)


def _plan_families(counts: dict[str, int]):
    """Plans by state now (a gauge), and those that reached each end state (a counter)."""
    plans = GaugeMetricFamily("sova_plans", "Plans by state", labels=["state"])
    for state, count in sorted(counts.items()):
        plans.add_metric([state], count)
    ended = CounterMetricFamily("sova_plans_ended", "Plans that reached an end state", labels=["state"])
    for state in TERMINAL:
        ended.add_metric([state], counts.get(state, 0))
    yield from (plans, ended)


def _forecast_families(manager: Manager):
    """How far the latest checked forecast was off, per quantity; how many were checked; what-ifs running."""
    errors = GaugeMetricFamily(
        "sova_forecast_error_ratio", "The latest checked plan's forecast error (a ratio)", labels=["quantity"]
    )
    forecasts = manager.forecasts
    for quantity, error in sorted((forecasts.last_error if forecasts is not None else {}).items()):
        errors.add_metric([quantity], error)
    checked = forecasts.checked if forecasts is not None else 0
    yield errors
    yield CounterMetricFamily("sova_forecasts_checked", "Plans whose forecast was checked against the cluster", checked)
    yield GaugeMetricFamily("sova_what_if_running", "What-if simulations running now", manager.what_ifs.running)


SLO_GAUGES = {  # status field: (metric, help); its last second's IOPS are the IO counters' rate
    "target": ("sova_vm_slo_target_io_ops_per_second", "The throughput target the SLO engine holds the VM to"),
    "sc_rate": ("sova_vm_slo_compliance_ratio", "SLO compliance rate over the last interval (0-1)"),
    "pf_ratio": ("sova_vm_slo_fluctuation_ratio", "Performance fluctuation ratio over the last interval (0-1)"),
    "latency": ("sova_vm_io_latency_seconds", "A VM's mean IO latency in the last second"),
}


def _slo_families(latest: dict[str, dict]):
    """The SLO engines' latest status of each VM under an SLO (ratios in 0-1, as Prometheus' units go)."""
    families = {key: GaugeMetricFamily(name, text, labels=["vm", "host"]) for key, (name, text) in SLO_GAUGES.items()}
    for vm, status in sorted(latest.items()):
        for key, family in families.items():
            if status[key] is not None:
                scale = 0.01 if key in ("sc_rate", "pf_ratio") else 1.0
                family.add_metric([vm, status["host"]], status[key] * scale)
    yield from families.values()


def _compliance_targets(slos: dict[str, dict]) -> GaugeMetricFamily:
    """The SLO compliance rate each VM's SLO accepts at the least (0-1): the alert's threshold."""
    family = GaugeMetricFamily(
        "sova_vm_slo_compliance_target_ratio", "The least SLO compliance rate the VM's SLO accepts (0-1)", labels=["vm"]
    )
    for vm, row in slos.items():
        bounds = row["settings"].get("sc_rate")  # [low, high] per cent; every SLO the API set has one
        if bounds is not None:
            family.add_metric([vm], bounds[0] * 0.01)
    return family
