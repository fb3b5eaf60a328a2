"""The manager's side of tenants' storage SLOs (the SASLO paper's Table 1, through the API).

The state store holds each VM's SLO; a set is checked whole (every setting, on a copy) and changes
nothing when one is wrong. Only the leader sets: it writes the store, then the bus's bucket, which the
agents follow (``slo_relay``), and adds an audit entry naming who set what. A manager that becomes
leader puts the store's SLOs in the bucket again and removes what the store no longer holds, so a
set that reached the store but not the bucket (the leader stopped between the two) still arrives.
"""

from __future__ import annotations

import time

import nats.js.errors

from sova.control.audit import AuditEntry
from sova.model.storage_slo import SloBook, SloError, StorageSlo, slo_from_settings, slo_settings, updated_slo
from sova.service.bus import Bus
from sova.service.slo_relay import SloStatusBoard, put_slo, slo_bucket, slo_key
from sova.service.state import StateStore


class SloKeeper:
    def __init__(self, bus: Bus, store: StateStore):
        self.bus, self.store = bus, store
        self.board = SloStatusBoard(bus)
        self.kv = None  # the bucket, once this manager leads

    async def start(self) -> None:
        await self.board.start()

    async def stop(self) -> None:
        await self.board.stop()

    async def take_lead(self) -> int:
        """Make the bucket hold what the store holds; how many SLOs that is."""
        self.kv = await slo_bucket(self.bus)
        kept = self.kept()
        for vm, slo in kept.items():
            await put_slo(self.kv, vm, slo)
        wanted = {slo_key(vm) for vm in kept}
        for key in await _keys(self.kv):
            if key not in wanted:
                await self.kv.delete(key)
        return len(kept)

    def kept(self) -> dict[str, StorageSlo]:
        """Every VM's SLO as the store keeps it."""
        return {vm: slo_from_settings(vm, row["settings"]) for vm, row in self.store.slos().items()}

    def book(self) -> SloBook:
        """The kept SLOs as a book (what a cluster snapshot takes)."""
        kept = self.kept()
        book = SloBook(kept)
        for vm, slo in kept.items():
            book.set_slo(vm, slo)
        return book

    async def set(self, vm: str, settings: dict, by: str) -> dict:
        """Change a VM's SLO by the given settings (SloError, and nothing changed, if one is wrong)."""
        current = self.store.slos().get(vm)
        slo = updated_slo(vm, slo_from_settings(vm, current["settings"]) if current else StorageSlo(), settings)
        if slo.throughput is None:
            raise SloError(f"VM {vm!r}: give its throughput range too: the SLO engine holds VMs with one")
        shown = slo_settings(slo)
        self.store.put_slo(vm, shown, by)
        await put_slo(self.kv, vm, slo)
        self._audit("slo-set", vm, f"set {vm}'s storage SLO", by, shown)
        return self.view([vm])[0]

    async def clear(self, vm: str, by: str) -> None:
        """Take a VM out of SLO control."""
        if vm not in self.store.slos():
            raise KeyError(vm)
        self.store.put_slo(vm, None, by)
        await put_slo(self.kv, vm, None)
        self._audit("slo-cleared", vm, f"cleared {vm}'s storage SLO", by, {})

    def _audit(self, event: str, vm: str, what: str, by: str, details: dict) -> None:
        self.store.append_audit([AuditEntry(time.time(), 0, event, "api", what, vm, f"by {by}", details=details)])

    def view(self, vms: list[str] | None = None) -> list[dict]:
        """The SLOs (of `vms` only, if given), each with who set it, when, and its latest status."""
        return [
            {"vm": vm, "status": self.board.latest.get(vm), "slo": row["settings"]}
            | {"set_by": row["set_by"], "set_at": row["set_at"]}
            for vm, row in self.store.slos().items()
            if vms is None or vm in vms
        ]


async def _keys(kv) -> list[str]:
    try:
        return await kv.keys()
    except nats.js.errors.NoKeysError:
        return []
