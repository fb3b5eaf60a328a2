"""The storage tenant API (SASLO's Table 1) of the manager: each VM's SLO, set, read and cleared.

A tenant token sees and sets only the VMs it names; admins and operators all VMs; viewers read; setting
and clearing want the scope ``slos:write`` too (service/tokens.py). An SLO can be set for a VM some host
reports; a set is checked whole and changes nothing when a value is wrong (422, naming the VM, the
setting and what was expected). Only the leader sets (the standby 503s).
No `from __future__ import annotations` here: FastAPI reads the handlers' annotations.
"""

from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Path, Response

from sova.model.storage_slo import SloError
from sova.service import api_models as M
from sova.service.manager import Manager
from sova.service.tokens import Token

VmName = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", description="the VM")]
ERRORS = {403: {"model": M.ErrorBody}, 404: {"model": M.ErrorBody}}


def add_slo_routes(app: FastAPI, manager: Manager, caller) -> None:
    """`caller(*roles, scope=...)`: the API's token check for those roles and that scope."""
    Reader = Annotated[Token, Depends(caller("admin", "operator", "viewer", "tenant"))]
    Setter = Annotated[Token, Depends(caller("admin", "operator", "tenant", scope="slos:write"))]

    def may_touch(token: Token, vm: str) -> None:
        if token.role == "tenant" and vm not in token.vms:
            raise HTTPException(403, f"VM {vm!r} is not one of this tenant's VMs")

    def may_set() -> None:
        if not (manager.leading and manager.is_leader()):
            raise HTTPException(503, "this manager is the standby; set SLOs through the leader")

    @app.get("/api/v1/slos", response_model=list[M.Slo], tags=["slos"])
    async def slo_list(token: Reader) -> list[dict]:
        """Every VM's storage SLO with its status (a tenant's VMs only, for a tenant)."""
        return manager.slos.view(list(token.vms) if token.role == "tenant" else None)

    @app.get("/api/v1/slos/{vm}", response_model=M.Slo, tags=["slos"], responses=ERRORS)
    async def slo(token: Reader, vm: VmName) -> dict:
        """A VM's storage SLO and what its host measured (Table 1's get_Status)."""
        may_touch(token, vm)
        rows = manager.slos.view([vm])
        if not rows:
            raise HTTPException(404, f"VM {vm!r} has no storage SLO")
        return rows[0]

    @app.put(
        "/api/v1/slos/{vm}",
        response_model=M.Slo,
        tags=["slos"],
        responses=ERRORS | {422: {"model": M.ErrorBody}, 503: {"model": M.ErrorBody}},
    )
    async def set_slo(token: Setter, vm: VmName, settings: M.SloSettings) -> dict:
        """Set a VM's SLO: the settings given change, the others keep their values (set_Throughput,
        set_IOsize, set_SC, set_PF, and a latency target). Its host takes it up within a report period."""
        may_touch(token, vm)
        may_set()
        if vm not in manager.known_vms():
            raise HTTPException(404, f"no host reports a VM named {vm!r}")
        try:
            return await manager.slos.set(vm, settings.model_dump(exclude_none=True), by=token.name)
        except SloError as err:
            raise HTTPException(422, str(err)) from None

    @app.delete("/api/v1/slos/{vm}", status_code=204, tags=["slos"], responses=ERRORS | {503: {"model": M.ErrorBody}})
    async def clear_slo(token: Setter, vm: VmName) -> Response:
        """Take a VM out of SLO control: its IO is no longer throttled for it."""
        may_touch(token, vm)
        may_set()
        try:
            await manager.slos.clear(vm, by=token.name)
        except KeyError:
            raise HTTPException(404, f"VM {vm!r} has no storage SLO") from None
        return Response(status_code=204)
