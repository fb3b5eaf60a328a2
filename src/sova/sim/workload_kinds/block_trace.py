"""block-trace: a real block-IO trace (CloudPhysics, MSR Cambridge, SYSTOR'17, Tencent CBS; read by
``sim/block_traces.py``) replayed as a VM's disk IO, at the trace's own pace or as fast as the storage goes.

- ``pace = "own"``: open loop, as the trace happened. Each step offers the requests whose arrival falls in
  it, the trace's clock running ``speed`` times the simulated one and looping at the trace's end; what
  the device or a limiter does not take is not issued (the open-loop stream of sim/storage_epochs.py).
- ``pace = "fast"``: a replayer with ``iodepth`` requests outstanding, taking the trace's requests in
  order as fast as the storage completes them (a closed loop); the trace's position moves on by what the
  storage served, so the mix of reads and sizes is the trace's whatever the device's speed.

Streams. At its own pace a VM offers two open streams per step, its reads and its writes, each with the
mean size of its requests in the step, sequential when most of them start where the request before them
(of either kind) ended: the storage model gives a stream one size and one read share, so separate
streams keep each kind's size, access time and sequentiality, and the block counters' read and write
bytes are the trace's. Fast, it offers one closed stream with the mix of the requests it is about to
take: the storage model shares a busy device among streams max-min fairly in device time, so a read and a
write stream would each get half of it and be served in inverse ratio to their costs, not in the trace's
mix (a replayer's outstanding requests are the next ones in the trace, whatever their kind). Its transfer time is that of the mean size, exact
where reads and writes move at one bandwidth (the default).

Which requests a fast replay is about to take is not known before the storage serves them. It takes as
many as the device time it got in the last step buys at the device's nominal cost per request (access
time, random or sequential, plus transfer; at first, ``min(iodepth, parallelism)`` units' worth), so a
stretch of cheap sequential requests is taken whole rather than at the last stretch's count, but no fewer
than it was served in the last step (a rate limiter, not the device, may be what holds it); and its
stream is offered at most GROWTH times that many, so that it can speed up by a quarter a step when the
device frees up but never serves far past the requests whose mix it offered. What the served requests
held and what the stream was counted with still differ a little: the difference in reads and bytes is
carried into the next steps' mix, so the block counters follow the trace over a run.

One limit of one stream: the storage model gives a stream one access time per step, the sequential one
when most of its requests are sequential and the random one otherwise, so a step that mixes both is
served at the majority's (on a disk array, whose seek is 80 times its sequential access, such a step's
rate can be several times off; on an SSD, 5 times at most for the smallest requests and little for
large ones).

``start`` (s) is where in the trace a VM begins; the VMs of an entry with ``stagger`` (the default) begin
evenly spread over one loop of the trace after it, so that several VMs replaying one file are not in
lockstep. A step's work is a few searchsorted calls per distinct trace over running sums of the trace's
requests, not a loop over requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sova.model.scenario import StorageSpec
from sova.sim.block_traces import BlockTrace, read_block_trace
from sova.sim.traces import TraceError
from sova.sim.workload_kinds.base import IOStreams, WorkloadKind, register_kind

GROWTH = 1.25  # a fast replay serves at most this many times the requests it expects in a step (chosen)
IDLE_SIZE = 4096.0  # bytes per IO of a stream with no request in the step (any positive size: it offers 0)
# rows of a Replay's running sums
READS, READ_BYTES, READ_SEQUENTIAL, WRITES, WRITE_BYTES, WRITE_SEQUENTIAL = range(6)

TraceKey = tuple[str, str, int]  # (file, format, volume)


class Replay:
    """A trace's requests as running sums (count, bytes, sequential requests; of reads and of writes; the
    device time they take on a server), so the requests of any stretch of an endlessly looping trace are
    a few lookups away. Positions are 'unwrapped': request k of loop m is m * n + k; a time t of loop m
    is m * duration + t."""

    def __init__(self, trace: BlockTrace):
        n = len(trace)
        sequential = np.zeros(n, dtype=bool)
        sequential[1:] = trace.offset[1:] == trace.offset[:-1] + trace.size[:-1]
        read, size = trace.read, trace.size
        per_request = np.stack([read, read * size, read & sequential, ~read, ~read * size, ~read & sequential])
        self.sums = _running(per_request.astype(float))
        self.trace, self.sequential = trace, sequential
        self.time, self.duration, self.n = trace.time, trace.duration, n
        self._cost: dict[StorageSpec, np.ndarray] = {}

    def index_at(self, clock: np.ndarray) -> np.ndarray:
        """The first request at or after each (unwrapped) time."""
        return _unwrapped_search(self.time, self.duration, self.n, clock)

    def time_at(self, index: np.ndarray) -> np.ndarray:
        """The arrival time of each (unwrapped) request."""
        loops, k = self._split(np.floor(index))
        return loops * self.duration + self.time[k]

    def between(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per row of the running sums and per position pair: the sum over the requests [lo, hi)."""
        return self._sum(self.sums, hi) - self._sum(self.sums, lo)

    def device_time(self, server: StorageSpec, index: np.ndarray) -> np.ndarray:
        """The device time (s, one unit of `server`) the requests before each (unwrapped) one take."""
        return self._sum(self.cost(server), index)[0]

    def index_after(self, server: StorageSpec, device_time: np.ndarray) -> np.ndarray:
        """The first request the given device time (from the trace's start, unwrapped) does not cover."""
        cost = self.cost(server)[0]
        return _unwrapped_search(cost[1:], cost[-1], self.n, device_time)

    def cost(self, server: StorageSpec) -> np.ndarray:
        """Running sum of each request's service time on `server` (as sim/storage_epochs.py times one at
        the device's nominal speed: access time, random or sequential, plus transfer), as a (1, n + 1) row."""
        if server not in self._cost:
            read, size = self.trace.read, self.trace.size
            random_access = np.where(read, server.access_time, server.write_access_time)
            access = np.where(self.sequential, server.sequential_access_time, random_access)
            transfer = size * 8 / np.where(read, server.bandwidth, server.write_bandwidth)
            self._cost[server] = _running((access + transfer)[None, :])
        return self._cost[server]

    def _sum(self, sums: np.ndarray, index: np.ndarray) -> np.ndarray:
        loops, k = self._split(index)
        return loops * sums[:, -1:] + sums[:, k]

    def _split(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loops = np.floor(index / self.n)
        return loops, (index - loops * self.n).astype(np.int64)


def _running(values: np.ndarray) -> np.ndarray:
    """Running sums along each row, from 0 (one column more than `values`)."""
    return np.concatenate([np.zeros((len(values), 1)), np.cumsum(values, axis=1)], axis=1)


def _unwrapped_search(ascending: np.ndarray, period: float, n: int, x: np.ndarray) -> np.ndarray:
    """The first unwrapped position whose value is at least x, for values that repeat every `period` with
    n positions a period (arrival times; running sums of cost, less their leading 0)."""
    loops = np.floor(x / period)
    return loops * n + np.searchsorted(ascending, x - loops * period, side="left")


@dataclass
class Replays:
    """A group's traces, each read once, and the trace each row's position refers to."""

    by_key: dict[TraceKey, Replay] = field(default_factory=dict)
    key: list[TraceKey] = field(default_factory=list)
    _rows: list[tuple[Replay, np.ndarray]] | None = None

    def rows_by_trace(self) -> list[tuple[Replay, np.ndarray]]:
        """Each trace the rows replay, with its rows."""
        if self._rows is None:
            rows: dict[TraceKey, list[int]] = {}
            for r, key in enumerate(self.key):
                rows.setdefault(key, []).append(r)
            self._rows = [(self.by_key[key], np.array(r)) for key, r in rows.items()]
        return self._rows

    def switch(self, row: int, key: TraceKey, replay: Replay) -> None:
        """Row `row` replays another trace from now on."""
        self.by_key[key], self.key[row], self._rows = replay, key, None


def trace_keys(params: dict[str, np.ndarray]) -> list[TraceKey]:
    """Each row's (file, format, volume): what it replays now (a phase may change format or volume)."""
    return [
        (str(f), str(fmt), int(v)) for f, fmt, v in zip(params["file"], params["format"], params["volume"], strict=True)
    ]


def load(key: TraceKey, where: str) -> Replay:
    """A trace ready to replay; an error names the scenario entry that asked for it."""
    try:
        return Replay(read_block_trace(*key))
    except TraceError as exc:
        raise TraceError(f"{where or 'a workload'}.file: {exc}") from None


def _mean(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Mean bytes per request, at least one byte (a request of no data, a flush, is one byte to the
    device); IDLE_SIZE where the count is 0."""
    return np.where(count > 0, np.maximum(total / np.maximum(count, 1.0), 1.0), IDLE_SIZE)


def _by_server(sim, group, rows: np.ndarray) -> list[tuple[StorageSpec, np.ndarray]]:
    """The rows' storage servers, each with the positions (into `rows`) of the rows on it."""
    server = sim.vms.storage[group.vm[rows]]
    return [(sim.scenario.storage[s], np.flatnonzero(server == s)) for s in np.unique(server)]


@register_kind
class BlockTraceReplay(WorkloadKind):
    name = "block-trace"
    order = 67
    does_io = True

    def split_entry(self, spec, names):
        vms = len(names)
        if vms < 2 or not spec.stagger:
            return None
        p = spec.params
        duration = load((p["file"], p["format"], int(p["volume"])), spec.where).duration
        return [{"start": p["start"] + k * duration / vms} for k in range(vms)]

    def prepare(self, group, specs, step) -> None:
        model = Replays(key=trace_keys(group.params))
        for key, s in zip(model.key, group.spec_index, strict=True):
            if key not in model.by_key:
                model.by_key[key] = load(key, specs[s].where)
        group.model = model
        n = len(group)
        group.state["clock"] = group.params["start"].astype(float)  # trace time (s), unwrapped
        group.state["position"] = np.zeros(n)  # trace request (unwrapped), fractions carried
        # fast: device time (unit-seconds per second) its requests took last step (0: not served yet),
        # the mix it offers, and the reads and bytes the requests served held beyond what was counted
        for key in ("busy", "taken", "offered_read", "offered_size", "owed_reads", "owed_bytes"):
            group.state[key] = np.zeros(n)
        for replay, rows in model.rows_by_trace():
            group.state["position"][rows] = replay.index_at(group.state["clock"][rows])

    def io(self, group, sim, t, dt) -> IOStreams:
        p, state = group.params, group.state
        self._follow_phases(group, sim)
        fast = p["pace"] == "fast"
        lo, hi = np.zeros(len(group)), np.zeros(len(group))
        window = np.zeros((6, len(group)))
        for replay, rows in group.model.rows_by_trace():
            clock = state["clock"][rows]
            lo[rows], hi[rows] = replay.index_at(clock), replay.index_at(clock + dt * p["speed"][rows])
            for server, at in _by_server(sim, group, rows[fast[rows]]):
                r = rows[fast[rows]][at]
                # fast: the next requests, as many as last step's device time buys (at first: its depth's),
                # and at least as many as it served (a limiter, not the device, may have held it back)
                busy = np.where(state["busy"][r] > 0, state["busy"][r], np.minimum(p["iodepth"][r], server.parallelism))
                lo[r] = np.floor(state["position"][r])
                done = replay.device_time(server, lo[r]) + busy * dt
                hi[r] = np.maximum(replay.index_after(server, done), lo[r] + np.maximum(state["taken"][r], 1))
            window[:, rows] = replay.between(lo[rows], hi[rows])
        reads, writes = window[READS], window[WRITES]
        requests, own = reads + writes, ~fast
        # fast: the window's mix, with what earlier steps' served requests held beyond it (see advance)
        state["offered_read"] = np.clip((reads + state["owed_reads"]) / np.maximum(requests, 1.0), 0.0, 1.0)
        state["offered_size"] = _mean(window[READ_BYTES] + window[WRITE_BYTES] + state["owed_bytes"], requests)
        mixed_sequential = 2 * (window[READ_SEQUENTIAL] + window[WRITE_SEQUENTIAL]) > requests
        # one stream per row (own pace: its reads; fast: its whole mix), then own pace's writes
        n_own = int(own.sum())
        return IOStreams(
            np.concatenate([group.vm, group.vm[own]]),
            np.concatenate([np.where(fast, GROWTH * requests / dt, reads / dt), writes[own] / dt]),
            np.concatenate(
                [
                    np.where(fast, state["offered_size"], _mean(window[READ_BYTES], reads)),
                    _mean(window[WRITE_BYTES], writes)[own],
                ]
            ),
            np.concatenate([np.where(fast, state["offered_read"], 1.0), np.zeros(n_own)]),
            np.concatenate([np.where(fast, p["iodepth"], 0.0), np.zeros(n_own)]),
            np.concatenate(
                [
                    np.where(fast, mixed_sequential, 2 * window[READ_SEQUENTIAL] > reads),
                    (2 * window[WRITE_SEQUENTIAL] > writes)[own],
                ]
            ),
        )

    def advance(self, group, sim, step) -> None:
        p, state = group.params, group.state
        fast = p["pace"] == "fast"
        served = sim.storage.served(self.name)
        served = np.where(fast, served[: len(group)], 0.0) if served is not None else np.zeros(len(group))
        for replay, rows in group.model.rows_by_trace():
            f = fast[rows]
            # own pace: the trace's clock runs on; fast: its position moves on by what was served
            clock = state["clock"][rows] + step.dt * p["speed"][rows]
            taken = served[rows] * step.dt
            before, position = state["position"][rows], state["position"][rows] + taken
            state["clock"][rows] = np.where(f, replay.time_at(position), clock)
            state["position"][rows] = np.where(f, position, replay.index_at(clock))
            # fast: what the served requests held beyond the mix they were counted with, owed to the next steps
            held = replay.between(np.floor(before), np.floor(position))
            owed_reads = state["owed_reads"][rows] + held[READS] - taken * state["offered_read"][rows]
            owed_bytes = state["owed_bytes"][rows] + held[READ_BYTES] + held[WRITE_BYTES]
            owed_bytes -= taken * state["offered_size"][rows]
            state["taken"][rows] = np.where(f, taken, 0.0)
            state["owed_reads"][rows] = np.where(f, owed_reads, 0.0)
            state["owed_bytes"][rows] = np.where(f, owed_bytes, 0.0)
            for server, at in _by_server(sim, group, rows[f]):
                r = rows[f][at]
                spent = replay.device_time(server, np.floor(position[f][at]))
                busy = (spent - replay.device_time(server, np.floor(before[f][at]))) / step.dt
                state["busy"][r] = np.minimum(busy, server.parallelism)  # no more than the whole device
            state["busy"][rows[~f]] = 0.0

    def _follow_phases(self, group, sim) -> None:
        """Rows whose format or volume a phase changed go on from the same trace time in the new trace."""
        model: Replays = group.model
        keys = trace_keys(group.params)
        changed = [r for r, (old, new) in enumerate(zip(model.key, keys, strict=True)) if old != new]
        for r in changed:
            key = keys[r]
            replay = model.by_key.get(key) or load(key, sim.scenario.workloads[group.spec_index[r]].where)
            model.switch(r, key, replay)
            group.state["position"][r] = replay.index_at(group.state["clock"][r : r + 1])[0]
            for state in ("busy", "taken", "owed_reads", "owed_bytes"):  # measured on the old trace
                group.state[state][r] = 0.0
