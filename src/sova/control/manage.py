"""`sova manage`: the MAPE-K loop on the wall clock against real hosts.

The same Runtime, policies, executor and audit log as a simulated run; only the clock and the driver
differ. In approve mode each plan is shown to a person (the ``ask`` callback), the findings it rests on
first, who approves or rejects it; plans nobody answers expire as in simulation. Every audit entry
(findings included) is handed to ``on_entry`` as it is written (the CLI prints it and appends it to a
JSONL file).

IO controllers (profile `see`) run in the same loop, which then ticks as often as the fastest of them
asks. They are bound to the VMs the tenants gave SLOs (`--slos`, or `sova slo set` through the SLO
service), each VM's host standing for its storage server (its local disks). A changed SLO is taken up
between ticks: that VM's target starts again from its new lower bound and the others go on; a VM that
comes under SLO control (or leaves it) binds the controllers anew, every VM starting again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sova.control.audit import AuditEntry
from sova.control.runtime import Runtime
from sova.control.slo_service import SloService
from sova.drivers.base import Driver
from sova.model.placement_rules import RuleBook, hosts_failed
from sova.model.scenario import ControlSpec, TopologySpec
from sova.model.snapshot import Snapshot
from sova.model.storage_slo import SloBook
from sova.plan.base import Policy
from sova.plan.storage.io_control import IoController, bind_all

BUILTIN_PROFILES: dict[str, tuple[str, ...]] = {
    "default": (),
    "threshold": ("threshold-migration",),
    "dsriov": ("dsriov",),
    "vlm": ("sandpiper",),  # the Sova paper's VLM baseline is Sandpiper
    "sova": ("dsriov-vlm",),  # the Sova paper's framework: DSR-IOV and VLM coordinated
    "cloudscope": ("cloudscope",),  # CloudScope Algorithm 1: move VMs predicted slow
    "cloudscope-dom0": ("cloudscope-dom0",),  # CloudScope Eq. 8: raise Dom0's weight for VMs missing their SLO
    "see": ("see",),  # SASLO: each VM's storage IO held to its SLO (sova slo set)
    "virtue": ("greedy-net",),  # Virtue's Greedy Net: VMs that talk across hosts moved together (flow counters)
}


def bind_to_hosts(policies: list[Policy], book: SloBook, snapshot: Snapshot) -> list[IoController]:
    """Bind the IO controllers among the policies to the book's SLOs, each VM's host as its storage server."""
    server_of = {vm: snapshot.hosts[h] for vm, h in zip(snapshot.vms, snapshot.vm_host, strict=True)}
    return bind_all(policies, book, server_of)


def manage(
    driver: Driver,
    policies: list[Policy],
    control: ControlSpec,
    mode: str = "auto",
    duration: float | None = None,
    tick: float = 1.0,
    on_entry: Callable[[AuditEntry], None] | None = None,
    ask: Callable[[int, list[str]], bool] | None = None,
    should_stop: Callable[[], bool] | None = None,
    slos: SloService | None = None,
    rules: RuleBook | None = None,
    topology: TopologySpec | None = None,
) -> Runtime:
    """Run until `duration` seconds have passed (None: until interrupted or should_stop()); `slos`: the
    control socket's service: the tenants' SLOs, which the IO controllers among the policies hold (bound
    here to the hosts' VMs), and the operator's drains (its ``hosts``), applied between ticks;
    `rules`: the placement rules every policy and the executor keep; `topology`: the fabric the hosts
    are on, in their order (network-aware placement needs it)."""
    rt = Runtime(driver, policies, control, mode, topology, rules=rules)
    hosts = slos.hosts if slos is not None else None  # drains asked on the socket
    held = slos is not None and slos.book is not None
    layout = driver.observe() if held else None  # which VM runs on which host
    controllers = bind_to_hosts(policies, slos.book, layout) if held else []
    if controllers:
        tick = min(tick, *(c.period for c in controllers))
    start = driver.now()
    seen = 0
    while duration is None or driver.now() - start < duration:
        if should_stop is not None and should_stop():
            break
        t = time.monotonic()
        changed = slos.take_changed() if controllers else set()
        if changed and not all(c.refresh(changed) for c in controllers):  # the VMs under SLO changed
            bind_to_hosts(policies, slos.book, rt.knowledge.latest if len(rt.knowledge) else layout)
        for host, op in hosts.take() if hosts is not None else ():
            if op == "fenced":
                if host in hosts_failed(rt.knowledge.rules):  # not if it reported again meanwhile
                    rt.fenced(host, "the operator confirmed it is off")
            else:
                (rt.drain if op == "drain" else rt.release)(host, by="operator")
        rt.tick()
        if hosts is not None and len(rt.knowledge):
            hosts.publish(rt.knowledge.latest, hosts_failed(rt.knowledge.rules))
        if slos is not None and slos.snapshots is not None:
            slos.snapshots.serve(rt.knowledge)
        if mode == "approve" and ask is not None:
            for pid, plan in list(rt.executor.pending.items()):
                findings = [f"finding: {f.describe()}" for f in plan.findings]
                actions = [a.describe() + (f"  ({a.reason})" if a.reason else "") for a in plan.actions]
                if ask(pid, findings + actions):
                    rt.executor.approve(pid, rt.knowledge)
                else:
                    rt.executor.reject(pid)
        entries = rt.audit.entries
        if on_entry is not None:
            for e in entries[seen:]:
                on_entry(e)
        seen = len(entries)
        time.sleep(max(0.0, tick - (time.monotonic() - t)))
    return rt
