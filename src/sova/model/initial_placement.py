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
    capacity = {host.name: host.memory - host.dom0_memory for host in hosts}
    index = {host.name: position for position, host in enumerate(hosts)}
    free = np.array([capacity[host.name] for host in hosts], dtype=float)
    cpu = CpuReserved(hosts)
    for vm in vms:
        if vm.host not in AUTO_HOSTS and not vm.comes_later:
            free[index[vm.host]] -= vm.memory
            cpu.take(vm, index[vm.host])
    largest = max(hosts, key=lambda host: capacity[host.name])
    too_big = [vm_spec for vm_spec in vms if vm_spec.memory > capacity[largest.name]]
    for size in sorted({vm_spec.memory for vm_spec in too_big}):
        names = [vm_spec.name for vm_spec in too_big if vm_spec.memory == size]
        reader.error(
            f"[[vms]] ({names[0]}).memory",
            f"{span(names)} {'needs' if len(names) == 1 else 'need'} {size:.0f} MiB{'' if len(names) == 1 else ' each'}, "
            "more than any host has for VMs: the largest, "
            f"{largest.name!r}, has {capacity[largest.name]:.0f} MiB ({largest.memory:.0f} MiB less "
            f"{largest.dom0_memory:.0f} MiB for Dom0)",
        )
    too_big_names = {vm_spec.name for vm_spec in too_big}
    ruled = _RuledPlacement(rules, vms, hosts) if rules else None
    out, cursor, unplaced = [], 0, []
    for vm in vms:
        if vm.comes_later:
            vm = VmSpec(**{**vm.__dict__, "host": ""}) if vm.host in ("auto", "first-fit") else vm
        elif vm.host in AUTO_HOSTS and vm.name not in too_big_names:
            first = 0 if vm.host == "first-fit" else cursor
            fits = cpu.fits(vm)  # None: memory alone
            rules_allow = ruled.allowed(vm.name, free >= vm.memory) if ruled is not None else None
            allowed = rules_allow if fits is None else (fits if rules_allow is None else rules_allow & fits)
            host_index = _host_with_room(free, vm.memory, first, rng if vm.host == "random" else None, allowed)
            if host_index is None:
                if rules_allow is not None and not rules_allow.any() and (free >= vm.memory).any():
                    reader.error(f"[[vms]] ({vm.name}).host", ruled.why_not(vm.name))
                    continue
                unplaced.append(vm)
            else:
                if vm.host == "auto":
                    cursor = (host_index + 1) % len(hosts)
                free[host_index] -= vm.memory
                cpu.take(vm, host_index)
                vm = VmSpec(**{**vm.__dict__, "host": hosts[host_index].name})
                if ruled is not None:
                    ruled.place(vm.name, host_index)
        out.append(vm)
    if unplaced:
        auto = sum(1 for vm_spec in vms if vm_spec.host in AUTO_HOSTS and not vm_spec.comes_later)
        reader.error(
            f"[[vms]] ({unplaced[0].name}).host",
            f"{len(unplaced)} of {auto} VMs with host = 'auto', 'first-fit' or 'random' ({unplaced[0].name} ... "
            f"{unplaced[-1].name}: {sum(vm_spec.memory for vm_spec in unplaced):.0f} MiB) found no host with enough free "
            f"memory (or CPU, where they reserve it); the {len(hosts)} hosts have {sum(capacity.values()):.0f} MiB for VMs in all (memory less "
            "Dom0's); expected more hosts or memory, or fewer VMs",
        )
    for host_index in np.flatnonzero(free < 0):
        reader.error(
            "[[vms]]",
            f"VMs placed on host {hosts[host_index].name!r} need {-free[host_index]:.0f} MiB more memory than it has",
        )
    return out


class CpuReserved:
    """The MIPS each host's cores have given to VMs at their creation, as CloudSim reserves a new VM's full
    MIPS: by the scenario's placement for the VMs that reserve CPU (reserve = memory-and-cpu), and by the
    simulator's least-power start for every VM."""

    def __init__(self, hosts: list[HostSpec] | tuple[HostSpec, ...]):
        self.core_mips = np.array([host.core_mips for host in hosts], dtype=float)
        self.capacity = np.array([host.cores for host in hosts], dtype=float) * self.core_mips
        self.reserved = np.zeros(len(hosts))

    def need(self, vm: VmSpec) -> tuple[np.ndarray | float, np.ndarray | float]:
        """(MIPS of one vCPU, MIPS of all of them): a vCPU of no stated MIPS takes a whole core of each host."""
        per_vcpu = vm.mips if vm.mips > 0 else self.core_mips
        return per_vcpu, per_vcpu * vm.vcpus

    def room(self, vm: VmSpec) -> np.ndarray:
        """Per host: the VM's MIPS are free, on cores at least as fast as its vCPUs."""
        per_vcpu, total = self.need(vm)
        return (self.capacity - self.reserved >= total) & (self.core_mips >= per_vcpu)

    def fits(self, vm: VmSpec) -> np.ndarray | None:
        """`room` for a VM that reserves CPU at placement (None: it reserves its memory alone)."""
        return self.room(vm) if vm.reserve == "memory-and-cpu" else None

    def reserve(self, vm: VmSpec, host: int) -> None:
        total = self.need(vm)[1]
        self.reserved[host] += total if np.isscalar(total) else total[host]

    def take(self, vm: VmSpec, host: int) -> None:
        """The VM placed on `host` by the scenario: its MIPS reserved there if it reserves CPU."""
        if vm.reserve == "memory-and-cpu":
            self.reserve(vm, host)


class _RuledPlacement:
    """The placement so far (VMs with a named host from the start), for the rules of the VMs placed next."""

    def __init__(self, rules: RuleBook, vms: list[VmSpec], hosts: list[HostSpec]):
        names = tuple(vm.name for vm in vms)
        self.bound = rules.bind(names, tuple(host.name for host in hosts))
        index = {host.name: position for position, host in enumerate(hosts)}
        self.vm_host = np.array([index.get(vm.host, -1) if not vm.comes_later else -1 for vm in vms], dtype=np.int64)

    def allowed(self, vm: str, room: np.ndarray) -> np.ndarray | None:
        """The hosts with room that keep the VM's rules (its must rules, if no host keeps them all)."""
        return self.bound.preferred(vm, self.vm_host, room) if self.bound.rules_of(vm) else None

    def place(self, vm: str, host: int) -> None:
        self.vm_host[self.bound.position[vm]] = host

    def why_not(self, vm: str) -> str:
        stopping = [
            self.bound.rules[rule_index].describe()
            for rule_index in self.bound.rules_of(vm)
            if self.bound.rules[rule_index].must and not self.bound.keeps(rule_index, vm, self.vm_host).all()
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
