"""Where the VMs of a scenario start: hosts named in the file, and 'auto' (round-robin), 'first-fit' (the
first host in order) or 'random' (seeded) over the hosts with memory for them and that the must placement
rules allow, checked so that no host starts over-full."""

from __future__ import annotations

import numpy as np

from sova.model.placement_rules import RuleBook
from sova.model.scenario import HostSpec, VmSpec
from sova.model.scenario_fields import AUTO_HOSTS
from sova.model.schema import Reader


def place_at_load(
    reader: Reader, vms: list[VmSpec], hosts: list[HostSpec], rng: np.random.Generator, rules: RuleBook | None = None
) -> list[VmSpec]:
    """Resolve host = 'auto' (round-robin), 'first-fit' (the first host in the file's order) and 'random'
    (uniform, seeded) over hosts with memory for the VM.

    Problems are summed up, one line each: VMs larger than every host, VMs that found no room, and hosts
    whose fixed VMs need more memory than they have. A VM that arrives later is not placed here: with
    host 'auto' it gets no host ("", the admission policy places it when it comes); with a named host it
    starts there if the host has room then. With `rules`, each VM goes where its must rules allow, given the
    VMs placed before it (a VM its rules leave no host is reported with the rules that stop it)."""
    capacity = {h.name: h.memory - h.dom0_memory for h in hosts}
    index = {h.name: k for k, h in enumerate(hosts)}
    free = np.array([capacity[h.name] for h in hosts], dtype=float)
    for v in vms:
        if v.host not in AUTO_HOSTS and not v.comes_later:
            free[index[v.host]] -= v.memory
    largest = max(hosts, key=lambda h: capacity[h.name])
    too_big = [v for v in vms if v.memory > capacity[largest.name]]
    for size in sorted({v.memory for v in too_big}):
        names = [v.name for v in too_big if v.memory == size]
        reader.error(
            f"[[vms]] ({names[0]}).memory",
            f"{span(names)} {'needs' if len(names) == 1 else 'need'} {size:.0f} MiB{'' if len(names) == 1 else ' each'}, "
            "more than any host has for VMs: the largest, "
            f"{largest.name!r}, has {capacity[largest.name]:.0f} MiB ({largest.memory:.0f} MiB less "
            f"{largest.dom0_memory:.0f} MiB for Dom0)",
        )
    too_big_names = {v.name for v in too_big}
    ruled = _RuledPlacement(rules, vms, hosts) if rules else None
    out, cursor, unplaced = [], 0, []
    for v in vms:
        if v.comes_later:
            v = VmSpec(**{**v.__dict__, "host": ""}) if v.host in ("auto", "first-fit") else v
        elif v.host in AUTO_HOSTS and v.name not in too_big_names:
            first = 0 if v.host == "first-fit" else cursor
            allowed = ruled.allowed(v.name, free >= v.memory) if ruled is not None else None
            k = _host_with_room(free, v.memory, first, rng if v.host == "random" else None, allowed)
            if k is None:
                if allowed is not None and (free >= v.memory).any():
                    reader.error(f"[[vms]] ({v.name}).host", ruled.why_not(v.name))
                    continue
                unplaced.append(v)
            else:
                if v.host == "auto":
                    cursor = (k + 1) % len(hosts)
                free[k] -= v.memory
                v = VmSpec(**{**v.__dict__, "host": hosts[k].name})
                if ruled is not None:
                    ruled.place(v.name, k)
        out.append(v)
    if unplaced:
        auto = sum(1 for v in vms if v.host in AUTO_HOSTS and not v.comes_later)
        reader.error(
            f"[[vms]] ({unplaced[0].name}).host",
            f"{len(unplaced)} of {auto} VMs with host = 'auto', 'first-fit' or 'random' ({unplaced[0].name} ... "
            f"{unplaced[-1].name}: {sum(v.memory for v in unplaced):.0f} MiB) found no host with enough free "
            f"memory; the {len(hosts)} hosts have {sum(capacity.values()):.0f} MiB for VMs in all (memory less "
            "Dom0's); expected more hosts or memory, or fewer VMs",
        )
    for k in np.flatnonzero(free < 0):
        reader.error("[[vms]]", f"VMs placed on host {hosts[k].name!r} need {-free[k]:.0f} MiB more memory than it has")
    return out


class _RuledPlacement:
    """The placement so far (VMs with a named host from the start), for the rules of the VMs placed next."""

    def __init__(self, rules: RuleBook, vms: list[VmSpec], hosts: list[HostSpec]):
        names = tuple(v.name for v in vms)
        self.bound = rules.bind(names, tuple(h.name for h in hosts))
        index = {h.name: k for k, h in enumerate(hosts)}
        self.vm_host = np.array([index.get(v.host, -1) if not v.comes_later else -1 for v in vms], dtype=np.int64)

    def allowed(self, vm: str, room: np.ndarray) -> np.ndarray | None:
        """The hosts with room that keep the VM's rules (its must rules, if no host keeps them all)."""
        return self.bound.preferred(vm, self.vm_host, room) if self.bound.rules_of(vm) else None

    def place(self, vm: str, host: int) -> None:
        self.vm_host[self.bound.position[vm]] = host

    def why_not(self, vm: str) -> str:
        stopping = [
            self.bound.rules[r].describe()
            for r in self.bound.rules_of(vm)
            if self.bound.rules[r].must and not self.bound.keeps(r, vm, self.vm_host).all()
        ]
        return (
            f"{vm} found no host with room that its rules allow, given the VMs placed before it: {'; '.join(stopping)}"
        )


def _host_with_room(
    free: np.ndarray, memory: float, cursor: int, rng: np.random.Generator | None, allowed: np.ndarray | None = None
) -> int | None:
    """'random' (rng given): a uniform choice among the hosts with room; 'auto': the first host with room
    from `cursor` on, round the end. O(1) while the cursor's host has room, one vector scan otherwise.
    `allowed`: the hosts the VM's rules allow (None: all)."""
    if rng is None and free[cursor] >= memory and (allowed is None or allowed[cursor]):
        return cursor
    room = np.flatnonzero((free >= memory) & (True if allowed is None else allowed))
    if not len(room):
        return None
    if rng is not None:
        return int(rng.choice(room))
    after = room[room >= cursor]
    return int(after[0] if len(after) else room[0])


def span(names: list[str]) -> str:
    """A list of VM names, short: 'v1', 'v1 and v2', 'v1, v2, v3' or '88 VMs (v13 ... v100)'."""
    if len(names) <= 3:
        return " and ".join(names) if len(names) < 3 else ", ".join(names)
    return f"{len(names)} VMs ({names[0]} ... {names[-1]})"
