"""What CloudSim's migrations cost the hosts inside a step, piece by piece (``migration_model = "cloudsim"``).

CloudSim 3.0.3 (docs/cloudsim-reference.md §5.2, §6) charges a migration of duration T like this: the VM
runs on its source at 90 % of its CPU, yet the source is powered as if it ran at its full request; the
destination holds the VM from the start, allocates it 10 % of its request (counted in its power), and as it
is asked for the full request meanwhile, it violates the SLA (SLATAH) for those T seconds; at the end the VM
runs on the destination. With steps of 300 s and migrations of 10-28 s, a step is not one piece: a source
emptied at second 28 draws nothing after (CloudSim counts no energy for a host whose utilisation is zero),
and the VM's load is on its destination for the rest of the step.

``host_pieces`` replays a step's moves per touched host as a timeline, cut where a move begins or ends,
and gives each piece's length, busy cores, and whether the host held a VM (active) and gave less CPU than
asked (short: a VM migrating in, or more asked than given); the engine turns them into the host's mean busy
cores, watts, active and short seconds over the step. Hosts no move touched keep the whole-step figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_IN_SHARE = 0.1  # of its request the destination gives (and is charged for) a VM migrating in


@dataclass(frozen=True)
class Move:
    """A fixed-delay migration that ran in the step: seconds into the step it began and ended (or the step's
    length if it goes on), and whether the VM is on its destination at the end."""

    vm: int
    src: int
    dst: int
    start: float
    end: float
    moved: bool


@dataclass(frozen=True)
class StepState:
    """The step as the whole-step accounting saw it: per VM its host at the start, its CPU (cores) at its
    full allocation and what it asked, and whether it runs; per host its Dom0 cores and cores."""

    ran_on: np.ndarray
    vm_given: np.ndarray
    vm_asked: np.ndarray
    running: np.ndarray
    dom0: np.ndarray
    cores: np.ndarray


@dataclass(frozen=True)
class Pieces:
    """The touched hosts' steps cut where a move begins or ends: per piece its host, seconds, busy cores,
    and whether the host held a VM (active) and gave its VMs less than they asked (short)."""

    host: np.ndarray
    seconds: np.ndarray
    busy: np.ndarray
    active: np.ndarray
    short: np.ndarray


def _changes(moves: list[Move], state: StepState) -> dict[int, list[tuple[float, float, float, float, int, int]]]:
    """Per touched host, its changes in time: (second, busy, asked, given, VMs, migrations in) added."""
    changes: dict[int, list] = {}
    for move in moves:
        given, asked = float(state.vm_given[move.vm]), float(state.vm_asked[move.vm])
        into = changes.setdefault(move.dst, [])
        into.append((move.start, _IN_SHARE * given, asked, _IN_SHARE * given, 1, 1))
        if move.moved:  # from the end, the VM runs on its destination in full, and its source is rid of it
            into.append((move.end, (1 - _IN_SHARE) * given, 0.0, (1 - _IN_SHARE) * given, 0, -1))
            changes.setdefault(move.src, []).append((move.end, -given, -asked, -given, -1, 0))
        else:  # cancelled: the destination lets it go
            into.append((move.end, -_IN_SHARE * given, -asked, -_IN_SHARE * given, -1, -1))
    return changes


def host_pieces(moves: list[Move], state: StepState, dt: float) -> Pieces:
    """The touched hosts' step, piece by piece (see the module's docstring)."""
    changes = _changes(moves, state)
    n_hosts = len(state.cores)
    on = state.running
    at_start = np.zeros((4, n_hosts))
    for row, weights in enumerate((state.vm_given, state.vm_asked, state.vm_given, np.ones(len(state.ran_on)))):
        at_start[row] = np.bincount(state.ran_on[on], weights=weights[on], minlength=n_hosts)
    at_start[0] += state.dom0
    pieces: list[tuple[int, float, float, bool, bool]] = []
    for host, host_changes in changes.items():
        busy, asked, given, vms = at_start[:, host]
        incoming, clock = 0, 0.0
        for when, d_busy, d_asked, d_given, d_vms, d_in in [*sorted(host_changes), (dt, 0, 0, 0, 0, 0)]:
            length = min(max(when, clock), dt) - clock
            if length > 0:
                short = incoming > 0 or asked - given > 1e-6 * state.cores[host]
                pieces.append((host, length, busy, vms > 0.5, short and vms > 0.5))
                clock += length
            busy, asked, given = busy + d_busy, asked + d_asked, given + d_given
            vms, incoming = vms + d_vms, incoming + d_in
    host, seconds, busy, active, short = (np.array(column) for column in zip(*pieces, strict=True))
    return Pieces(host.astype(np.int64), seconds, busy, active.astype(bool), short.astype(bool))
