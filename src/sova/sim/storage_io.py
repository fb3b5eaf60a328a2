"""The VMs' storage IO: the streams the workloads offer at each fabric step, each VM's IO controls (rate
and merge limits, an IO controller's throttles), and one epoch of the storage devices per tick
(sim/storage_epochs.py) with the block counters it adds.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state; the engine hands it the streams each
kind offers, Dom0's CPU left for blkback, and takes from it what crosses the network (the bytes each VM
read and wrote) and the CPU blkback used.
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.sim.sensors import Sensors
from sova.sim.storage_epochs import StorageEpochs, VmIoControls
from sova.sim.vm_inventory import VmInventory
from sova.sim.workload_kinds.base import IOStreams

BLOCK_ROWS = 5  # reads, writes, bytes read, bytes written, time spent: the block counters per VM


class StorageIo:
    """What the workloads ask of storage, the limits on it, and what the devices served."""

    def __init__(self, epochs: StorageEpochs, n_vms: int, n_hosts: int, sensors: Sensors):
        self.epochs, self.sensors, self.n_vms, self.n_hosts = epochs, sensors, n_vms, n_hosts
        self.controls = VmIoControls.none(n_vms)  # rate and merge limits, scheduler tags, in-flight caps
        self.blkback_cpu = np.zeros(n_hosts)  # Dom0 cores blkback used in the last epoch, per host
        self._parts: dict[str, slice] = {}  # each kind's rows among the step's IO streams
        self._last_served = None  # the last epoch's result, whose counts _epoch_counts holds
        self._count_rows: tuple[object, np.ndarray] = (None, np.zeros(0, dtype=np.int64))  # streams, their rows
        self._epoch_counts = np.zeros((BLOCK_ROWS, n_vms))

    def set_limit(self, vm: int, iops: float) -> None:
        """The VM's IO rate limit (requests/s; 0: none)."""
        self.controls.limit[vm] = iops

    def set_size(self, vm: int, size: float) -> None:
        """The VM's request-merge limit (bytes; 0: none)."""
        self.controls.size_limit[vm] = size

    def set_throttle(self, vms: np.ndarray, throttle: IoThrottle) -> None:
        """An IO controller's throttles on the VMs of those rows (``VmIoControls.set_throttle``)."""
        self.controls.set_throttle(vms, throttle)

    def served(self, kind: str) -> np.ndarray | None:
        """The IOs per second (as the kind issued them, before any split) the last epoch served each of a
        kind's streams, in the order it offered them."""
        part = self._parts.get(kind)
        io = self.sensors.gauges.get("io")
        return None if part is None or io is None else io["served_ios"][part]

    def offer(self, offered: list[tuple[str, IOStreams]], run: np.ndarray, vms: VmInventory) -> None:
        """The streams of every kind that does IO, in kind order (`offered`: each kind's name and streams);
        a VM offers IO for the part of the step it runs (`run`: none while it is not there or paused)."""
        self._parts, start = {}, 0
        for name, io in offered:
            self._parts[name] = slice(start, start + len(io.vm))
            start += len(io.vm)
        parts = [io for _, io in offered]
        if parts:
            vm, iops, size, read, depth = (
                np.concatenate([getattr(io, f) for io in parts]) for f in ("vm", "iops", "size", "read", "depth")
            )
            sequential = np.concatenate(
                [io.sequential if io.sequential is not None else np.zeros(len(io.vm), dtype=bool) for io in parts]
            )
            streams = IOStreams(vm, iops * run[vm], size, read, depth, sequential)
        else:
            empty = np.zeros(0)
            streams = IOStreams(empty.astype(np.int64), empty, empty, empty, empty, empty.astype(bool))
        self.epochs.offer(streams, vms.storage[streams.vm], vms.host[streams.vm])

    def epoch(self, dom0_vcpus: np.ndarray, netback_cpu: np.ndarray, dt: float) -> None:
        """One epoch of the devices: the block counters, and the CPU blkback used of what Dom0's vCPUs have
        left after netback (only Xen hosts have blkback: a constant elsewhere keeps the epoch cached)."""
        io = self.epochs.streams
        if io is None or not len(io.vm):
            self.blkback_cpu = np.zeros(self.n_hosts)
            return
        dom0_free = np.where(self.epochs.host_xen, dom0_vcpus - netback_cpu, dom0_vcpus)
        served = self.epochs.epoch(self.controls, dom0_free, dt)
        self.blkback_cpu = served.dom0_cpu
        self.sensors.gauges["storage_util"] = served.utilisation
        self.sensors.gauges["io"] = {
            "vm": io.vm,
            "served": served.iops,  # requests/s, after any split
            "served_ios": served.iops * served.size / io.size,
            "offered": io.iops,
            "latency": served.latency,
        }
        if served is not self._last_served:  # a new steady state: count what one of its epochs does
            # the block counters per VM in one bincount: row r of VM v at r * V + v
            if self._count_rows[0] is not io:
                self._count_rows = (io, (io.vm + self.n_vms * np.arange(BLOCK_ROWS)[:, None]).ravel())
            ops = served.iops * dt
            reads, writes = ops * io.read, ops * (1 - io.read)
            rows = (reads, writes, reads * served.size, writes * served.size, ops * served.latency)
            counts = np.bincount(self._count_rows[1], weights=np.concatenate(rows), minlength=BLOCK_ROWS * self.n_vms)
            self._epoch_counts = counts.reshape(BLOCK_ROWS, self.n_vms)
            self._last_served = served
        self.sensors.add_block(self._epoch_counts)

    def bytes_per_vm(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Bytes/s each VM read and wrote in the last epoch, which its storage flows carry (None: no IO)."""
        io, served = self.epochs.streams, self._last_served
        if io is None or not len(io.vm) or served is None:
            return None
        bytes_s = served.iops * served.size
        read = np.bincount(io.vm, weights=bytes_s * io.read, minlength=self.n_vms)
        write = np.bincount(io.vm, weights=bytes_s * (1 - io.read), minlength=self.n_vms)
        return read, write
