"""The cluster snapshot and what-if on the manager's API.

``GET /api/v1/snapshot``: the cluster now as a scenario (`sova snapshot export --api`), made on the event loop
from the Knowledge, which only the loop touches. ``POST /api/v1/what-if``: alternatives over a horizon from that
snapshot (`sova what-if --api`), run by `sova what-if` in a child process at the lowest priority, one at a time
(``what_if_runner``), as a job (``what_if_jobs``) that ``GET /api/v1/what-if/{id}`` follows. Reading wants
``read``; a what-if is a simulation run and wants ``runs:submit``.
No `from __future__ import annotations` here: FastAPI reads the handlers' annotations.
"""

import asyncio
import base64
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Path, Query

from sova.control.manage import BUILTIN_PROFILES
from sova.model.cluster_snapshot import ExportSettings, SnapshotError
from sova.model.observed_demand import demand_bytes
from sova.service import api_models as M
from sova.service.manager import Manager
from sova.service.tokens import Token
from sova.service.what_if_jobs import Busy
from sova.service.what_if_runner import WhatIfAsk

Seconds = Annotated[float, Query(ge=0.1, le=86400, allow_inf_nan=False)]
MAX_SAMPLES = 10_000  # of each VM's demand in a snapshot: window / interval
ERRORS = {409: {"model": M.ErrorBody}, 422: {"model": M.ErrorBody}, 429: {"model": M.ErrorBody}}


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
            document, demand = await manager.snapshot(settings, as_is=True, name=name)
        except SnapshotError as exc:
            raise HTTPException(409, str(exc)) from None
        return {
            "document": document,
            "demand": base64.b64encode(await asyncio.to_thread(demand_bytes, demand)).decode(),
            "demand_file": f"{name}.demand.parquet",
        }

    @app.post("/api/v1/what-if", response_model=M.WhatIfJob, status_code=202, tags=["what-if"], responses=ERRORS)
    async def what_if(token: Submitter, request: M.WhatIfRequest) -> dict:
        """Forecast alternatives from the cluster now, each against doing nothing: the running profile (as_is),
        each host drained, each profile's policies, each VM added. The snapshot is taken now; the simulator
        runs them in a job, which GET /api/v1/what-if/{id} follows to its answer (per alternative: hot-host
        time, the hottest host's CPU, storage SLO compliance, migrations and their time, energy, the trade-off
        sentence). 429 while 4 what-ifs wait or run."""
        settings = _settings(request.window, request.interval, "last", request.horizon)
        try:
            document, demand = await manager.snapshot(settings, as_is=request.as_is)
        except SnapshotError as exc:
            raise HTTPException(409, str(exc)) from None
        _known(document, request, manager.profile)
        ask = WhatIfAsk(request.horizon, tuple(request.drain), tuple(request.profiles), tuple(request.add_vms))
        source = manager.forecast_source()
        try:
            job = manager.what_if_jobs.submit(
                lambda started: manager.what_ifs.run(document, demand, ask, source, started), token.name
            )
        except Busy as exc:
            raise HTTPException(429, str(exc)) from None
        return job.view()

    @app.get(
        "/api/v1/what-if/{job_id}",
        response_model=M.WhatIfJob,
        tags=["what-if"],
        responses={404: {"model": M.ErrorBody}},
    )
    async def what_if_job(_: Reader, job_id: Annotated[int, Path(ge=1, le=2**31 - 1)]) -> dict:
        """A what-if job: queued, running, done (with its answer) or failed (with why)."""
        job = manager.what_if_jobs.jobs.get(job_id)
        if job is None:
            raise HTTPException(404, f"no what-if {job_id} (the last 20 ended are kept)")
        return job.view()


def _known(document: dict, request, running: str) -> None:
    """The hosts and profiles the request names are the snapshot's (422 naming those that are not)."""
    hosts = {host["name"] for host in document["hosts"]}
    problems = [f"drain: {host!r} is no host of the cluster" for host in request.drain if host not in hosts]
    profiles = {*BUILTIN_PROFILES, running}
    problems += [f"profiles: {name!r} is no profile here" for name in request.profiles if name not in profiles]
    if problems:
        raise HTTPException(422, "; ".join(problems))


def _settings(window: float, interval: float, after: str, duration: float) -> ExportSettings:
    """The export's settings; a window of more than MAX_SAMPLES samples is refused (422)."""
    if window / interval > MAX_SAMPLES:
        problem = f"window / interval: {window:g} s / {interval:g} s is over {MAX_SAMPLES} samples"
        raise HTTPException(422, f"{problem}; expected a longer interval or a shorter window")
    return ExportSettings(window, interval, after, duration)
