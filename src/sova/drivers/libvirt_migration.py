"""Live migrations on real hosts, in the background: a VF is taken off first and given back if the
migration fails or is cancelled; poll() and cancel() report and stop them.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py): it reaches hosts and VMs through the driver's
``HostConnections`` and takes VFs off and back through its ``VfOperations``.
"""

from __future__ import annotations

import contextlib
import threading
import time

from sova.drivers.libvirt_common import Job, error_text
from sova.drivers.libvirt_hosts import HostConnections
from sova.drivers.libvirt_vfs import VfOperations
from sova.drivers.vf import vf_mac
from sova.model.actions import CANCELLED, FAILED, OK, RUNNING, Action, Migrate, Outcome


class MigrationJobs:
    def __init__(self, hosts: HostConnections, vfs: VfOperations, migration_uri: dict[str, str], unsafe: bool):
        """migration_uri: per destination host, a URI its source daemons migrate to directly (peer to
        peer); unsafe: allow a migration libvirt deems unsafe (a disk cache mode it cannot vouch for)."""
        self.hosts = hosts
        self.vfs = vfs
        self.migration_uri = migration_uri
        self.unsafe = unsafe

    def start(self, action: Migrate, host: str, dom, now: float) -> Outcome:
        """Start migrating the VM (on `host`, its domain `dom`) in the background."""
        if action.dst not in self.hosts.uris:
            return Outcome(FAILED, f"no host named {action.dst!r}", now, now)
        if action.dst == host:
            return Outcome(FAILED, f"{action.vm} already runs on {action.dst}", now, now)
        job = Job(action, now, src=host)
        self.hosts.jobs[action.vm] = job
        job.thread = threading.Thread(target=self._migrate_job, args=(job, host, dom), daemon=True)
        job.thread.start()
        return Outcome(RUNNING, f"migrating {action.vm} from {host} to {action.dst}", now)

    def _migrate_job(self, job: Job, src: str, dom) -> None:
        vm, dst = job.action.vm, job.action.dst  # type: ignore[attr-defined]
        try:
            with contextlib.suppress(Exception):  # the source's side of the job on a connection of its own too
                sconn = self.hosts.open(self.hosts.uris[src])
                job.conns.append(sconn)
                dom = sconn.lookupByName(vm)
            if self.vfs.has_vf(self.hosts.xml(dom), {vf_mac(self.hosts.vms[vm].index)}):
                job.reattach_rate = self.hosts.vms[vm].vf_rate
                self.vfs.detach_now(src, dom, vm)  # a VF cannot migrate: unplug it first
            flag = self.hosts.flag
            flags = flag("VIR_MIGRATE_LIVE", 1) | flag("VIR_MIGRATE_PERSIST_DEST", 8)
            flags |= flag("VIR_MIGRATE_UNDEFINE_SOURCE", 16)
            if self.unsafe:
                flags |= flag("VIR_MIGRATE_UNSAFE", 512)
            t0 = time.monotonic()
            if dst in self.migration_uri:  # peer-to-peer: the source daemon talks to the destination's
                dom.migrateToURI3(self.migration_uri[dst], {}, flags | flag("VIR_MIGRATE_PEER2PEER", 2))
                new = None
            else:
                # connections of its own: a migration holds its connections' RPCs for seconds, which on
                # the monitor's connections stalled observe() for 8 s on the lab
                try:
                    dconn = self.hosts.open(self.hosts.uris[dst])
                except Exception as e:
                    raise RuntimeError(f"destination {dst} is unreachable: {error_text(e)}") from e
                job.conns.append(dconn)
                new = dom.migrate3(dconn, {}, flags)
            job.details["duration"] = time.monotonic() - t0
            with contextlib.suppress(Exception):
                stats = (new or dom).jobStats(flag("VIR_DOMAIN_JOB_STATS_COMPLETED", 1))
                job.details.update(
                    {k: stats[k] for k in ("downtime", "data_processed", "memory_iteration") if k in stats}
                )
            self.hosts.where[vm] = dst
            self.hosts.vms[vm].vf_rate = 0.0
        except Exception as e:
            job.error = f"migration of {vm} from {src} to {dst} failed: {error_text(e)}"
            self._recover(job, src, vm)
        finally:
            for c in job.conns:
                with contextlib.suppress(Exception):
                    c.close()
            job.done = True

    def _recover(self, job: Job, src: str, vm: str) -> None:
        """After a failed or cancelled migration: the VM runs on its source, with its VF back."""
        conn = self.hosts.conn(src)
        if conn is None:
            job.error += f"; source {src} unreachable, the VM's state is unknown"
            return
        try:
            dom = conn.lookupByName(vm)
            if dom.state()[0] == 3:  # paused by a stop-and-copy that did not finish
                dom.resume()
            if job.reattach_rate >= 0:
                self.vfs.attach(src, dom, vm, job.reattach_rate)
                job.error += "; VF re-attached on the source"
        except Exception as e:
            job.error += f"; recovering on {src} failed: {error_text(e)}"

    def poll(self, action: Action) -> Outcome:
        """How the action's background job (a migration, a VF unplug) stands; its end, once."""
        vm = getattr(action, "vm", "")
        job = self.hosts.jobs.get(vm)
        now = self.hosts.now()
        if job is None or job.action is not action:
            return Outcome(OK, "done", finished=now)
        if not job.done:
            msg = "waiting for the device-removed event"
            if isinstance(action, Migrate):
                msg = self._progress(vm, job.src)
            return Outcome(RUNNING, msg, started=job.started)
        del self.hosts.jobs[vm]
        if job.cancelled:
            return Outcome(CANCELLED, f"cancelled; {job.error}", job.started, now, job.details)
        if job.error:
            return Outcome(FAILED, job.error, job.started, now, job.details)
        what = f"on {job.action.dst}" if isinstance(action, Migrate) else "VF detached"  # type: ignore[attr-defined]
        return Outcome(OK, what, job.started, now, job.details)

    def _progress(self, vm: str, src: str) -> str:
        conn = self.hosts.conns.get(src)
        try:
            st = conn.lookupByName(vm).jobStats(0)
            total, done = st.get("data_total", 0), st.get("data_processed", 0)
            return f"{done / 2**20:.0f} of {total / 2**20:.0f} MiB sent"
        except Exception:
            return "migrating"

    def cancel(self, action: Action) -> Outcome:
        """Abort a migration under way; the VM stays on its source."""
        vm = getattr(action, "vm", "")
        job = self.hosts.jobs.get(vm)
        now = self.hosts.now()
        if job is None or job.done or not isinstance(action, Migrate):
            return Outcome(OK, "nothing to cancel", finished=now)
        job.cancelled = True
        conn = self.hosts.conn(job.src)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.lookupByName(vm).abortJob()
        if job.thread is not None:
            job.thread.join(timeout=30)
        self.hosts.jobs.pop(vm, None)
        return Outcome(CANCELLED, f"migration aborted; {job.error or 'the VM stays on ' + job.src}", job.started, now)
