"""A VM's IO rate limiter, per epoch in fluid form: QEMU's block throttle, or SASLO's time-stamp limiter.

- ``qemu`` (what libvirt's ``total_iops_sec`` sets on a KVM host, QEMU util/throttle.c): a leaky bucket
  whose level leaks at the limit L; a request passes while the level is at most L/10 (no ``iops-max``: a
  tenth of a second of the average) and adds one. So a backlogged VM gets exactly L, and one that passed
  less than L for a while (idle, or held back by its threads or the device) saves up to L/10 + 1
  requests that pass at once when it has them. Writing a new limit (throttle_config) zeroes the level:
  each write lets L/10 + 1 through at once again. Measured on qemu-storage-daemon 7.2
  (benchmarks/qemu_throttle.py, benchmarks/data/qemu_throttle.csv): bursts of L/10 + 1 at the start and
  after pauses, exactly L per 1 s epoch after them, for L from 50 to 3,200.
- ``time-stamp`` (SASLO's Eq. 4, T_q = max(T_(q-1) + 1/L, arrival_q), in Xen's Dom0 IO scheduler): a
  backlogged VM gets L and an idle one saves nothing, so no burst ever passes.

Here an epoch lets through at most L plus the bucket's room over the epoch's length, and the room moves
by what the VM's requests the device completed left of L; a limit is written when its value rounded to
whole requests/s changes, as the libvirt driver writes it.
"""

from __future__ import annotations

import numpy as np

BUCKET_SECONDS = 0.1  # util/throttle.c, throttle_compute_wait: with no *_max the bucket is avg / 10
LIMITERS = ("qemu", "time-stamp")


class RateLimiters:
    """Each VM's limiter and, for QEMU's, the requests its bucket would let through at once."""

    def __init__(self, n_vms: int, kind: str = "qemu"):
        if kind not in LIMITERS:
            raise ValueError(f"io_limiter {kind!r}: expected one of {', '.join(LIMITERS)}")
        self.bursts = kind == "qemu"
        self.room = np.zeros(n_vms)  # requests that may pass at once beyond the rate
        self.written = np.zeros(n_vms)  # the limit last written, in whole requests/s

    def allowance(self, limit: np.ndarray, length: float) -> np.ndarray:
        """Requests/s each VM's limiter lets through in an epoch of `length` s (0: no limit)."""
        if not self.bursts:
            return limit
        written = np.round(limit)
        changed = written != self.written
        if changed.any():  # throttle_config zeroes the bucket's level
            self.room = np.where(changed, self._size(limit), self.room)
            self.written = written
        return np.where(limit > 0, limit + self.room / length, 0.0)

    def account(self, limit: np.ndarray, completed: np.ndarray, length: float) -> None:
        """After an epoch: what each VM's requests used of its limit (`completed`, requests/s)."""
        if self.bursts and (limit > 0).any():
            self.room = np.clip(self.room + (limit - completed) * length, 0.0, self._size(limit))

    @staticmethod
    def _size(limit: np.ndarray) -> np.ndarray:
        """The bucket's room when empty: L/10 + 1 requests (the last one passes at a level of L/10)."""
        return np.where(limit > 0, limit * BUCKET_SECONDS + 1.0, 0.0)
