"""Each guest's memory dirty rate, for the migration model: libvirt's dirty-rate calculation (a 1 s sample)
started every ``dirty_rate_every`` seconds, and read back from the domain stats once it completes. Never
started on a domain in a job (a migration): the call would wait for the job's end, and the observation
with it.
"""

from __future__ import annotations

import contextlib


class DirtyRates:
    def _dirty_rate(self, name: str, dom, st: dict, now: float) -> float:
        rate, started = self._dirty.get(name, (0.0, -1e9))
        if "dirtyrate.megabytes_per_second" in st and st.get("dirtyrate.calc_status") == 2:
            rate = st["dirtyrate.megabytes_per_second"] * 2**20
        if self.dirty_rate_every > 0 and now - started >= self.dirty_rate_every and not self._in_a_job(name, dom):
            with contextlib.suppress(Exception):
                dom.startDirtyRateCalc(1, 0)
                started = now
        self._dirty[name] = (rate, started)
        return rate

    def _in_a_job(self, name: str, dom) -> bool:
        """A domain in a job (a migration, ours or anyone's): a dirty-rate calculation would wait for its end."""
        job = self._jobs.get(name)
        if job is not None and not job.done:
            return True
        try:
            return dom.jobInfo()[0] != 0  # VIR_DOMAIN_JOB_NONE
        except Exception:
            return False
