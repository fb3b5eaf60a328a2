"""The cluster snapshot and what-if on the manager's API.

``GET /api/v1/snapshot``: the cluster now as a scenario (`sova snapshot export --api`), made on the event loop
from the Knowledge, which only the loop touches. ``POST /api/v1/what-if``: alternatives over a horizon from that
snapshot (`sova what-if --api`), run by `sova what-if` in a child process at the lowest priority, one at a time
(``what_if_runner``); the request waits for the answer. Reading wants ``read``; a what-if is a simulation
run and wants ``runs:submit``.
No `from __future__ import annotations` here: FastAPI reads the handlers' annotations.
"""

import base64
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Query

from sova.model.cluster_snapshot import ExportSettings, SnapshotError
from sova.model.observed_demand import demand_bytes
from sova.service import api_models as M
from sova.service.manager import Manager
from sova.service.tokens import Token
from sova.service.what_if_runner import WhatIfAsk, WhatIfError

Seconds = Annotated[float, Query(ge=0.1, le=86400, allow_inf_nan=False)]
MAX_SAMPLES = 10_000  # of each VM's demand in a snapshot: window / interval
ERRORS = {409: {"model": M.ErrorBody}, 422: {"model": M.ErrorBody}, 503: {"model": M.ErrorBody}}


def add_what_if_routes(app: FastAPI, manager: Manager, caller, readers, deciders) -> None:
    """`caller(*roles, scope=...)`: the API's token check for those roles and that scope."""
    Reader = Annotated[Token, Depends(caller(*readers))]
    Submitter = Annotated[Token, Depends(caller(*deciders, scope="runs:submit"))]

    @app.get("/api/v1/snapshot", response_model=M.ClusterSnapshot, tags=["what-if"], responses=ERRORS)
    async def snapshot(
        _: Reader,
        name: Annotated[str, Query(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")] = "cluster",
        window: Seconds = 600.0,
        interval: Seconds = 10.0,
        after: Literal["last", "mean", "ar"] = "last",
        duration: Seconds = 1800.0,
    ) -> dict:
        """The cluster as a scenario file's tables and its demand file (Parquet, base64): hosts, VMs where they
        run, rules, and each VM's demand over the last `window` at `interval`; past it, `after`. Its profiles:
        doing nothing and the running one. 409 while too little has been observed."""
        settings = _settings(window, interval, after, duration)
        try:
            document, demand = manager.snapshot(settings, as_is=True, name=name)
        except SnapshotError as exc:
            raise HTTPException(409, str(exc)) from None
        return {
            "document": document,
            "demand": base64.b64encode(demand_bytes(demand)).decode(),
            "demand_file": f"{name}.demand.parquet",
        }

    @app.post("/api/v1/what-if", response_model=M.WhatIfAnswer, tags=["what-if"], responses=ERRORS)
    async def what_if(_: Submitter, request: M.WhatIfRequest) -> dict:
        """Forecast alternatives from the cluster now, each against doing nothing: the running profile (as_is),
        each host drained, each profile's policies, each VM added. Per alternative: hot-host time, the hottest
        host's CPU, storage SLO compliance, migrations and their time, energy, and the trade-off sentence. The
        answer comes once the simulator ran them all (a minute or more on a large cluster)."""
        settings = _settings(request.window, request.interval, "last", request.horizon)
        try:
            document, demand = manager.snapshot(settings, as_is=request.as_is)
        except SnapshotError as exc:
            raise HTTPException(409, str(exc)) from None
        ask = WhatIfAsk(request.horizon, tuple(request.drain), tuple(request.profiles), tuple(request.add_vms))
        try:
            return await manager.what_ifs.run(document, demand, ask, source=f"the cluster of {manager.source()}")
        except WhatIfError as exc:
            raise HTTPException(422 if exc.refused else 503, str(exc)) from None


def _settings(window: float, interval: float, after: str, duration: float) -> ExportSettings:
    """The export's settings; a window of more than MAX_SAMPLES samples is refused (422)."""
    if window / interval > MAX_SAMPLES:
        problem = f"window / interval: {window:g} s / {interval:g} s is over {MAX_SAMPLES} samples"
        raise HTTPException(422, f"{problem}; expected a longer interval or a shorter window")
    return ExportSettings(window, interval, after, duration)
