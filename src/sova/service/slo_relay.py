"""Tenants' storage SLOs between the manager and the agents.

The manager keeps each VM's SLO in its state store and puts it in JetStream's key-value bucket
``sova_slos`` (one key per VM); a manager that becomes leader puts them all again, so the bucket follows
the store (only a manager makes the bucket). An agent checks the bucket's last sequence every report
period and reads the whole bucket when it changed (``SloFollower``), so an SLO set through the API reaches
the VM's host within one period, and an agent that was away, or a bus that restarted, costs no update. Each agent sends what its storage
SLO engine measured on ``sova.slo_status.HOST`` (plain NATS: a lost status is superseded by the next),
and every manager keeps the latest of each VM (``SloStatusBoard``).
"""

from __future__ import annotations

import base64
import json
import logging
import time

import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from sova.model.storage_slo import SloError, StorageSlo, slo_from_settings, slo_settings
from sova.service.bus import Bus, BusError, Listener, host_token

log = logging.getLogger(__name__)
BUCKET = "sova_slos"
STATUS = "sova.slo_status"
STATUS_FIELDS = ("sc_rate", "pf_ratio", "throughput", "target", "latency")


def slo_key(vm: str) -> str:
    """A VM's key in the bucket: its name in URL-safe base64 (a VM name may hold what a key may not)."""
    return base64.urlsafe_b64encode(vm.encode()).decode().rstrip("=")


async def slo_bucket(bus: Bus) -> KeyValue:
    """The SLOs' bucket, made if missing (with the bus's replicas)."""
    return await bus.bucket(KeyValueConfig(bucket=BUCKET, history=1, storage=StorageType.FILE))


async def put_slo(kv: KeyValue, vm: str, slo: StorageSlo | None) -> None:
    """Give the agents a VM's SLO (None: the VM leaves SLO control)."""
    if slo is None:
        await kv.delete(slo_key(vm))
    else:
        await kv.put(slo_key(vm), json.dumps({"vm": vm, "slo": slo_settings(slo)}).encode())


class SloFollower:
    """An agent's copy of the bucket: every VM's SLO, read again whenever the bucket changed."""

    def __init__(self, bus: Bus):
        self.bus = bus
        self.kv: KeyValue | None = None
        self.seen = -1  # the bucket's last sequence when it was last read

    async def poll(self) -> dict[str, StorageSlo] | None:
        """Every VM's SLO if the bucket changed since the last call, else None (also while there is no
        bucket: the leading manager makes it, and an agent's user may not)."""
        if self.kv is None:
            try:
                self.kv = await self.bus.js.key_value(BUCKET)
            except nats.js.errors.BucketNotFoundError:  # no manager has led yet: no SLO to follow
                return None
        last = (await self.bus.js.stream_info(f"KV_{BUCKET}")).state.last_seq
        if last == self.seen:
            return None
        slos = await self._read()
        self.seen = last  # read after `last`: at least as new, and a change meanwhile is read next time
        return slos

    async def _read(self) -> dict[str, StorageSlo]:
        watcher = await self.kv.watchall(ignore_deletes=True)
        slos: dict[str, StorageSlo] = {}
        try:
            while (entry := await watcher.updates(timeout=10)) is not None:
                try:
                    raw = json.loads(entry.value)
                    slos[raw["vm"]] = slo_from_settings(raw["vm"], raw["slo"])
                except (ValueError, KeyError, TypeError, AttributeError) as err:  # SloError is a ValueError
                    log.warning("ignored a malformed SLO under key %s: %s", entry.key, err)
        finally:
            await watcher.stop()
        return slos


def status_subject(host: str) -> str:
    return f"{STATUS}.{host_token(host)}"


async def publish_status(bus: Bus, host: str, status: dict[str, dict]) -> None:
    """What the host's SLO engine measured for each of its VMs (STATUS_FIELDS; None: not measured)."""
    if status:
        await bus.client.publish(status_subject(host), json.dumps(status).encode())


class SloStatusBoard(Listener):
    """A manager's view of the SLO status: the latest each VM's host sent, with the host and when."""

    subject = f"{STATUS}.*"

    def __init__(self, bus: Bus):
        self.bus = bus
        self.latest: dict[str, dict] = {}

    async def _take(self, message) -> None:
        host = message.subject.rsplit(".", 1)[-1]
        try:
            host_token(host)
            status = json.loads(message.data)
            if not isinstance(status, dict):
                raise ValueError("not a JSON object")
            taken = {vm: _status(vm, values) for vm, values in status.items()}
        except (ValueError, BusError, SloError) as err:
            log.warning("refused an SLO status on %s: %s", message.subject, err)
            return
        now = time.time()
        for vm, values in taken.items():
            self.latest[vm] = values | {"host": host, "received": now}


def _status(vm: str, values: object) -> dict:
    """One VM's status as sent, each field a finite number or None."""
    if not isinstance(values, dict):
        raise ValueError(f"VM {vm!r}: expected an object of {', '.join(STATUS_FIELDS)}")
    out = {}
    for key in STATUS_FIELDS:
        value = values.get(key)
        if value is not None and not (isinstance(value, int | float) and abs(value) < float("inf")):
            raise ValueError(f"VM {vm!r}: {key} must be a number or null, got {value!r}")
        out[key] = value
    return out
