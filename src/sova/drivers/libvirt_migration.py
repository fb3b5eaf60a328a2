"""Live migrations on real hosts, in the background: a VF is taken off first and given back if the
migration fails or is cancelled; poll() and cancel() report and stop them.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py), which holds the connections and state.
"""

from __future__ import annotations

import contextlib
import threading
import time

from sova.drivers.libvirt_common import _Job, _msg
from sova.drivers.vf import vf_mac
from sova.model.actions import CANCELLED, FAILED, OK, RUNNING, Action, Migrate, Outcome


class MigrationJobs:
    """Live migrations on real hosts, in the background: a VF is taken off first and given back if the"""

    def _start_migration(self, action: Migrate, host: str, dom, now: float) -> Outcome:
        if action.dst not in self.hosts:
            return Outcome(FAILED, f"no host named {action.dst!r}", now, now)
        if action.dst == host:
            return Outcome(FAILED, f"{action.vm} already runs on {action.dst}", now, now)
        job = _Job(action, now, src=host)
        self._jobs[action.vm] = job
        job.thread = threading.Thread(target=self._migrate_job, args=(job, host, dom), daemon=True)
        job.thread.start()
        return Outcome(RUNNING, f"migrating {action.vm} from {host} to {action.dst}", now)

    def _migrate_job(self, job: _Job, src: str, dom) -> None:
        vm, dst = job.action.vm, job.action.dst  # type: ignore[attr-defined]
        try:
            with contextlib.suppress(Exception):  # the source's side of the job on a connection of its own too
                sconn = self._open(self.hosts[src])
                job.conns.append(sconn)
                dom = sconn.lookupByName(vm)
            if self._has_vf(self._xml(dom), {vf_mac(self._vm[vm].index)}):
                job.reattach_rate = self._vm[vm].vf_rate
                self._detach_vf_now(src, dom, vm)  # a VF cannot migrate: unplug it first
            flags = self._flag("VIR_MIGRATE_LIVE", 1) | self._flag("VIR_MIGRATE_PERSIST_DEST", 8)
            flags |= self._flag("VIR_MIGRATE_UNDEFINE_SOURCE", 16)
            if self.unsafe_migration:
                flags |= self._flag("VIR_MIGRATE_UNSAFE", 512)
            t0 = time.monotonic()
            if dst in self.migration_uri:  # peer-to-peer: the source daemon talks to the destination's
                dom.migrateToURI3(self.migration_uri[dst], {}, flags | self._flag("VIR_MIGRATE_PEER2PEER", 2))
                new = None
            else:
                # connections of its own: a migration holds its connections' RPCs for seconds, which on
                # the monitor's connections stalled observe() for 8 s on the lab
                try:
                    dconn = self._open(self.hosts[dst])
                except Exception as e:
                    raise RuntimeError(f"destination {dst} is unreachable: {_msg(e)}") from e
                job.conns.append(dconn)
                new = dom.migrate3(dconn, {}, flags)
            job.details["duration"] = time.monotonic() - t0
            with contextlib.suppress(Exception):
                stats = (new or dom).jobStats(self._flag("VIR_DOMAIN_JOB_STATS_COMPLETED", 1))
                job.details.update(
                    {k: stats[k] for k in ("downtime", "data_processed", "memory_iteration") if k in stats}
                )
            self._where[vm] = dst
            self._vm[vm].vf_rate = 0.0
        except Exception as e:
            job.error = f"migration of {vm} from {src} to {dst} failed: {_msg(e)}"
            self._recover(job, src, vm)
        finally:
            for c in job.conns:
                with contextlib.suppress(Exception):
                    c.close()
            job.done = True

    def _recover(self, job: _Job, src: str, vm: str) -> None:
        """After a failed or cancelled migration: the VM runs on its source, with its VF back."""
        conn = self._conn(src)
        if conn is None:
            job.error += f"; source {src} unreachable, the VM's state is unknown"
            return
        try:
            dom = conn.lookupByName(vm)
            if dom.state()[0] == 3:  # paused by a stop-and-copy that did not finish
                dom.resume()
            if job.reattach_rate >= 0:
                self._attach_vf(src, dom, vm, job.reattach_rate)
                job.error += "; VF re-attached on the source"
        except Exception as e:
            job.error += f"; recovering on {src} failed: {_msg(e)}"

    def poll(self, action: Action) -> Outcome:
        vm = getattr(action, "vm", "")
        job = self._jobs.get(vm)
        now = self.now()
        if job is None or job.action is not action:
            return Outcome(OK, "done", finished=now)
        if not job.done:
            msg = "waiting for the device-removed event"
            if isinstance(action, Migrate):
                msg = self._progress(vm, job.src)
            return Outcome(RUNNING, msg, started=job.started)
        del self._jobs[vm]
        if job.cancelled:
            return Outcome(CANCELLED, f"cancelled; {job.error}", job.started, now, job.details)
        if job.error:
            return Outcome(FAILED, job.error, job.started, now, job.details)
        what = f"on {job.action.dst}" if isinstance(action, Migrate) else "VF detached"  # type: ignore[attr-defined]
        return Outcome(OK, what, job.started, now, job.details)

    def _progress(self, vm: str, src: str) -> str:
        conn = self._conns.get(src)
        try:
            st = conn.lookupByName(vm).jobStats(0)
            total, done = st.get("data_total", 0), st.get("data_processed", 0)
            return f"{done / 2**20:.0f} of {total / 2**20:.0f} MiB sent"
        except Exception:
            return "migrating"

    def cancel(self, action: Action) -> Outcome:
        vm = getattr(action, "vm", "")
        job = self._jobs.get(vm)
        now = self.now()
        if job is None or job.done or not isinstance(action, Migrate):
            return Outcome(OK, "nothing to cancel", finished=now)
        job.cancelled = True
        conn = self._conn(job.src)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.lookupByName(vm).abortJob()
        if job.thread is not None:
            job.thread.join(timeout=30)
        self._jobs.pop(vm, None)
        return Outcome(CANCELLED, f"migration aborted; {job.error or 'the VM stays on ' + job.src}", job.started, now)
