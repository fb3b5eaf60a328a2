"""observed: a VM's demand as a cluster snapshot saw it (``model/observed_demand``), replayed, and past the
observed window a stated forecast of it: ``last`` (the last sample held), ``mean`` (the window's mean) or ``ar``
(the analyzers' AR(1) model, analyze/forecast.py: mu + phi^k (x_last - mu), k samples past the end, its
expected value). By default the run starts where the window ends (the run is the forecast); with ``replay`` it
starts at the window's start. CPU is cores wanted; disk IO a stream of the observed rate and mean size, kept
to at most as many IOs in flight as the VM was seen to have (a closed loop, as fio's iodepth: a VM that waited
for each IO does not pile a queue up where the storage is slower than it was; open loop where nothing was seen
in flight); network a flow to and from outside and one to each VM it was seen sending to."""

from __future__ import annotations

import numpy as np

from sova.analyze.forecast import ar1_parameters
from sova.model.observed_demand import VM_COLUMNS, DemandFileError, read_demand
from sova.sim.datapath import NODE, VM
from sova.sim.workload_kinds.base import Demand, IOStreams, WorkloadKind, register_kind

FORECASTS = ("last", "mean", "ar")  # past the window, as the `after` parameter names them
MIN_IO_SIZE = 512.0  # bytes: the smallest IO a disk takes, where a sample has bytes but no whole operation
IN_FLIGHT_SLACK = 0.05  # of one IO: a closed loop's measured mean in flight may exceed its depth by the
# counters' timing (blk_time and the snapshot's clock are read apart), so 1.03 in flight is a depth of 1


@register_kind
class Observed(WorkloadKind):
    name = "observed"
    order = 85
    does_io = True

    def split_entry(self, spec, vms):
        if spec.params.get("series"):
            return None
        return [{"series": name} for name in vms]

    def prepare(self, group, specs, step) -> None:
        """Each row's series. A VM that an entry without `series` names by a pattern and the file has no
        series of was not observed: it asks for nothing (the scenario reader warns of it); a `series` named
        must be in the file."""
        files = {file: read_demand(file) for file in set(group.params["file"])}
        rows = []
        for file, series, spec_index in zip(
            group.params["file"], group.params["series"], group.spec_index, strict=True
        ):
            demand = files[file]
            if not demand.has(series) and specs[spec_index].params.get("series"):
                raise DemandFileError(f"{specs[spec_index].where}.series: {file} holds no series {series!r}")
            rows.append((demand, demand.row(series) if demand.has(series) else -1))
        group.model = rows
        width = max(demand.samples for demand in files.values())
        index = np.array([row for _, row in rows], dtype=np.int64)
        for column in VM_COLUMNS:
            group.series[column] = np.zeros((len(group), width))
        for file, demand in files.items():  # each file's rows at once, held at their last sample to the width
            mine = np.flatnonzero(group.params["file"] == file)
            seen = mine[index[mine] >= 0]
            for column in VM_COLUMNS:
                block = demand.series[column][index[seen]]
                group.series[column][seen] = np.pad(block, ((0, 0), (0, width - demand.samples)), mode="edge")
        group.params["interval"] = np.array([demand.interval for demand, _ in rows])
        group.params["length"] = np.array([demand.samples for demand, _ in rows], dtype=float)
        group.params["offset"] = np.where(
            group.params["replay"] > 0, 0.0, group.params["length"] * group.params["interval"]
        )
        group.state["forecast"] = np.array([FORECASTS.index(after) for after in group.params["after"]])
        peak = group.series["io_outstanding"].max(axis=1) if width else np.zeros(len(group))
        group.state["io_depth"] = np.where(peak > 0, np.maximum(np.ceil(peak - IN_FLIGHT_SLACK), 1.0), 0.0)

    def register(self, group, sim) -> None:
        """A flow to and from outside for each VM seen sending or receiving, one per peer it was seen sending to.
        A series that is zero throughout stays zero past the window (each forecast of it is 0), so a VM never
        seen on the network gets no outside flow: a large cluster's idle VMs cost the solver nothing."""
        outside = (NODE, sim.topology.external)
        for column, name in (("tx_bits", "tx"), ("rx_bits", "rx")):
            rows = np.flatnonzero((group.series[column] != 0).any(axis=1))
            vms = [(VM, int(group.vm[row])) for row in rows]
            ends = [(vm, outside) for vm in vms] if name == "tx" else [(outside, vm) for vm in vms]
            group.flows[name] = np.array([sim.network.add_flow(*pair, "observed") for pair in ends], dtype=np.int64)
            group.state[f"{name}_rows"] = rows
        position = {name: k for k, name in enumerate(sim.vm_names)}
        ids, rows, series = [], [], []
        senders: dict[int, dict[str, list[int]]] = {}  # per demand file: sender -> its flows, made once
        for k, (vm, name) in enumerate(zip(group.vm, group.params["series"], strict=True)):
            demand, _ = group.model[k]
            if id(demand) not in senders:
                senders[id(demand)] = _flows_by_sender(demand.flow_src)
            for flow in senders[id(demand)].get(name, ()):
                peer = demand.flow_dst[flow]
                if peer not in position:
                    raise DemandFileError(f"observed flows of {name}: the peer {peer!r} is no VM of the scenario")
                ids.append(sim.network.add_flow((VM, int(vm)), (VM, position[peer]), "observed"))
                rows.append(k)
                series.append(demand.flow_bits[flow])
        group.flows["peer"] = np.array(ids, dtype=np.int64)
        group.state["peer_row"] = np.array(rows, dtype=np.int64)
        width = group.series["cpu"].shape[1]
        group.series["peer"] = _stacked(series, width) if series else np.zeros((0, width))
        group.series["cpu"] = self._workload_cpu(group, sim)
        lengths = group.params["length"]
        for column in (*VM_COLUMNS, "peer"):
            on = lengths if column != "peer" else lengths[group.state["peer_row"]]
            group.state[f"mu:{column}"], group.state[f"phi:{column}"] = _ar1(group.series[column], on)

    @staticmethod
    def _workload_cpu(group, sim) -> np.ndarray:
        """The CPU a VM was seen using included what the simulator adds to whatever a workload asks for: an
        idle guest's timer ticks (idle_guest_cpu) and its network stack (network.guest_net_cpu: guest_cost_bit
        per bit sent or received). Both are taken out here, the stack's at the rates observed (wanted, where a
        sender was held back: a slight over-count), so they are not counted twice."""
        traffic = group.series["tx_bits"] + group.series["rx_bits"]
        rows, peers = group.state["peer_row"], group.series["peer"]
        if len(rows):  # the peers' series are as wide as the VMs' (_stacked)
            np.add.at(traffic, rows, peers)
            row_of = {int(vm): k for k, vm in enumerate(group.vm)}
            dst_vm = sim.network.flow_vm_ends()[1][group.flows["peer"]]
            receiver = np.array([row_of.get(int(vm), -1) for vm in dst_vm], dtype=np.int64)
            inside = receiver >= 0
            np.add.at(traffic, receiver[inside], peers[inside])
        added = traffic * sim.network.guest_cost_bit + sim.params["idle_guest_cpu"]
        return np.maximum(group.series["cpu"] - added, 0.0)

    def demand(self, group, sim, step: Demand) -> None:
        scale, vm = group.params["scale"], group.vm
        np.add.at(step.cpu, vm, self._at(group, "cpu", step.t) * scale)
        for column, name in (("tx_bits", "tx"), ("rx_bits", "rx")):
            rows = group.state[f"{name}_rows"]
            step.flow[group.flows[name]] = self._at(group, column, step.t)[rows] * scale[rows]
        if len(group.flows["peer"]):
            rows = group.state["peer_row"]
            step.flow[group.flows["peer"]] = self._at(group, "peer", step.t, rows) * scale[rows]
        sim.vms.memory_used[vm] = np.minimum(self._at(group, "memory_used", step.t), sim.vms.memory[vm])

    def io_vms(self, group) -> np.ndarray:
        """The VMs seen doing storage IO (the others' series are zero throughout, and so is their forecast)."""
        ops = group.series["read_iops"] + group.series["write_iops"]
        moved = group.series["read_bps"] + group.series["write_bps"]
        return group.vm[((ops != 0) | (moved != 0)).any(axis=1)]

    def io(self, group, sim, t, dt) -> IOStreams:
        scale = group.params["scale"]
        reads, writes = self._at(group, "read_iops", t), self._at(group, "write_iops", t)
        size = (self._at(group, "read_bps", t) + self._at(group, "write_bps", t)) / np.maximum(reads + writes, 1e-300)
        total = (reads + writes) * scale
        return IOStreams(
            group.vm,
            total,
            np.maximum(size, MIN_IO_SIZE),
            np.where(total > 0, reads / np.maximum(reads + writes, 1e-300), 0.5),
            group.state["io_depth"],
        )

    @staticmethod
    def _at(group, column: str, t: float, rows: np.ndarray | None = None) -> np.ndarray:
        """The value of `column` (one row per instance, or per flow of `rows`) at t: the observed sample, or
        past the window the instance's forecast."""
        sample, length, past = _position(group, t, rows)
        observed = group.series[column][np.arange(len(sample)), np.minimum(sample, length - 1)]
        if not past.any():
            return observed
        kinds = group.state["forecast"] if rows is None else group.state["forecast"][rows]
        forecast = observed  # `last`: the last sample held; the others only where some row asks for them
        mu = group.state[f"mu:{column}"]
        if (kinds == FORECASTS.index("mean")).any():
            forecast = np.where(kinds == FORECASTS.index("mean"), mu, forecast)
        if (kinds == FORECASTS.index("ar")).any():
            ar = mu + np.power(group.state[f"phi:{column}"], (sample - length + 1).astype(float)) * (observed - mu)
            forecast = np.where(kinds == FORECASTS.index("ar"), np.maximum(ar, 0.0), forecast)
        return np.where(past, forecast, observed)


def _position(group, t: float, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's (or flow's, by `rows`) sample at t, its series' length, and whether t is past it; the
    instances' own kept for the step (eight columns read them)."""
    if rows is None and group.state.get("position_t") == t:
        return group.state["position"]
    picked = slice(None) if rows is None else rows
    params = group.params
    sample = ((t + params["offset"][picked]) // params["interval"][picked]).astype(np.int64)
    length = params["length"][picked].astype(np.int64)
    position = (sample, length, sample >= length)
    if rows is None:
        group.state["position_t"], group.state["position"] = t, position
    return position


def _flows_by_sender(senders) -> dict[str, list[int]]:
    """The flows each VM sent, by the flow columns' senders."""
    index: dict[str, list[int]] = {}
    for flow, sender in enumerate(senders):
        index.setdefault(sender, []).append(flow)
    return index


def _stacked(rows: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of unequal length, padded with their last value to `width` (each row reads only its own length)."""
    return np.stack([np.pad(row, (0, width - len(row)), mode="edge") for row in rows])


def _ar1(series: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AR(1) mean and lag-1 coefficient of each row over its own samples (its first `lengths`)."""
    mu, phi = np.zeros(len(series)), np.zeros(len(series))
    for length in np.unique(lengths).astype(np.int64):
        rows = lengths == length
        mu[rows], phi[rows], _ = ar1_parameters(series[rows, :length].T)
    return mu, phi
