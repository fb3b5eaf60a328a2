"""Running a command on a host: the SR-IOV rate setting and the bridge's flow counters both need it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class HostCommand:
    """Runs a command on a host: locally, or behind a prefix (``ssh root@node1``, ``ip netns exec NS``)."""

    prefix: tuple[str, ...] = ()
    timeout: float = 30.0

    def __call__(self, cmd: list[str], stdin: str | None = None) -> str:
        full = [*self.prefix, *cmd]
        try:
            r = subprocess.run(full, input=stdin, capture_output=True, text=True, timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RuntimeError(f"{' '.join(full)}: {e}") from None
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(full)}: {r.stderr.strip() or f'exit status {r.returncode}'}")
        return r.stdout
