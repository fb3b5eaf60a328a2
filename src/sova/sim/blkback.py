"""The host's side of para-virtual block IO (Xen's blkfront -> grant table -> blkback in Dom0), per host.

A guest's request goes through Dom0 whatever the VM's NIC: the guest puts it in a ring and grants Dom0
its pages; blkback (a Dom0 kernel thread) maps them, submits the request and, on completion, unmaps them
and notifies the guest. Two things of that path bound a host's IO (CloudScope §II-B, Fig. 2b):

- Dom0 CPU: `blkback_cost_per_request` seconds of Dom0 CPU per request plus `blkback_cost_per_byte` per
  byte. When the host's requests need more than Dom0 has left after its network work, they are served
  in proportion to what Dom0 can do: small blocks are Dom0-bound. The work adds to Dom0's CPU time.
- The grant table: `grant_entries` (128) entries of `grant_page` (4 KB) shared by the host's guests; an
  outstanding request of s bytes holds ceil(s / page) entries. When the outstanding requests want at
  least the whole table (W >= E), requests wait while the table is locked and refilled: each waits
  floor(W / E) refills of `grant_stall` seconds. Many concurrent large requests thus stall; the host's
  throughput tends to E * page / grant_stall however many guests read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlkbackParams:
    cost_per_request: float  # Dom0 CPU seconds per request
    cost_per_byte: float  # Dom0 CPU seconds per byte
    grant_entries: int
    grant_page: float  # bytes per entry
    grant_stall: float  # seconds a request waits per table refill

    @classmethod
    def from_params(cls, params: dict) -> BlkbackParams:
        return cls(
            params["blkback_cost_per_request"],
            params["blkback_cost_per_byte"],
            params["grant_entries"],
            params["grant_page"],
            params["grant_stall"],
        )

    def cpu_per_request(self, size: np.ndarray) -> np.ndarray:
        """Dom0 CPU seconds one request of each size costs."""
        return self.cost_per_request + size * self.cost_per_byte


def dom0_share(host: np.ndarray, iops: np.ndarray, cpu_per_request: np.ndarray, dom0_free: np.ndarray) -> np.ndarray:
    """Per stream, the share of its IOPS Dom0 can process (1 where Dom0 has the CPU for the host's IO)."""
    needed = np.bincount(host, weights=iops * cpu_per_request, minlength=len(dom0_free))
    share = np.where(needed > dom0_free, dom0_free / np.maximum(needed, 1e-300), 1.0)
    return share[host]


def grant_wait(
    host: np.ndarray, outstanding: np.ndarray, size: np.ndarray, n_hosts: int, bb: BlkbackParams
) -> np.ndarray:
    """Per stream, the seconds each request waits for the host's grant table: floor(W / E) refills."""
    entries = outstanding * np.ceil(size / bb.grant_page)
    wanted = np.bincount(host, weights=entries, minlength=n_hosts)
    refills = np.floor(wanted / bb.grant_entries + 1e-9)
    return (refills * bb.grant_stall)[host]
