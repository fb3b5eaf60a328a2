"""The manager's REST API (FastAPI; its OpenAPI schema at /openapi.json, the reference at /docs).

Every path but /healthz wants a bearer token (``Authorization: Bearer sova_...``, or the dashboard's
cookie): viewers read, operators also decide plans, admins everything, tenants only their VMs' SLOs; and
each path wants its scope (service/tokens.py): ``read`` to read, ``plans:approve``, ``hosts:drain``,
``hosts:fence``, ``runs:submit`` (and ``slos:write``, api_slos.py) to change. A 403 names the role or scope missing.
Handlers run on the manager's event loop (``async def``), between its rounds, so what they read is
consistent. Bad input is a 4xx whose message names the field (FastAPI's 422 for parameters). Times are
wall-clock Unix times, with the cluster's own beside them (``sim_...``) where it runs apart (api_models.py).
No `from __future__ import annotations` here: FastAPI reads the handlers' annotations, some of them local.
"""

import asyncio
import json
import math
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from sova.plan.base import registry
from sova.service import api_models as M
from sova.service import readiness, views
from sova.service.api_slos import add_slo_routes
from sova.service.api_what_if import add_what_if_routes
from sova.service.dashboard import COOKIE, CSRF_HEADER, add_dashboard
from sova.service.manager import Manager, ManagerError
from sova.service.prometheus_metrics import CONTENT_TYPE, ManagerMetrics
from sova.service.request_limits import RequestLimits
from sova.service.runs import RunBook, RunError
from sova.service.tokens import Token, TokenBook

READERS = ("admin", "operator", "viewer")
DECIDERS = ("admin", "operator")
HostName = Annotated[str, Path(max_length=255, pattern=r"^[^\x00-\x1f/]+$", description="the host's name")]
PlanId = Annotated[int, Path(ge=1, le=2**31 - 1, description="the plan's number")]
Text = Annotated[str | None, Query(max_length=255, pattern=r"^[^\x00-\x1f]*$")]
ECHO_CHARS = 200  # of an invalid input, at most, in a 422's detail
_bearer = HTTPBearer(auto_error=False, description="a token from `sova token add`")


def make_app(
    manager: Manager,
    tokens: TokenBook,
    profiles: dict[str, tuple[str, ...]],
    secure_cookie: bool = False,
    runs: RunBook | None = None,
) -> FastAPI:
    """The API and the dashboard over `manager`; `secure_cookie`: served over TLS (the cookie says so);
    `runs`: where simulation runs submitted through the API go (None: no runs)."""
    app = FastAPI(
        title="Sova manager",
        version="1",
        openapi_url=None,  # served below, behind a token
        docs_url=None,
        description="Hosts, VMs, VFs, findings, plans and their approval, the audit trail, tenants' storage "
        "SLOs, simulation runs, and metrics.",
        responses={400: {"model": M.ErrorBody}, 401: {"model": M.ErrorBody}, 403: {"model": M.ErrorBody}},
    )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        """As FastAPI answers, but a 405's Allow header lists every method the path takes (Starlette's
        names only those of the one route it tried)."""
        headers = dict(error.headers or {})
        if error.status_code == 405:
            allowed = set()
            for route in app.routes:
                if isinstance(route, APIRoute) and route.path_regex.match(request.url.path):
                    allowed |= route.methods
            headers["Allow"] = ", ".join(sorted(allowed))
        return JSONResponse({"detail": error.detail}, status_code=error.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        """FastAPI's 422, but a NaN or infinity in the input is named as text (JSON cannot carry it)."""
        errors = [_clip_input(e) for e in jsonable_encoder(error.errors())]
        return JSONResponse({"detail": _json_safe(errors)}, status_code=422)

    app.add_middleware(RequestLimits)

    metrics = ManagerMetrics(manager)
    app.state.manager, app.state.tokens, app.state.metrics = manager, tokens, metrics

    def caller(*roles: str, scope: str = "read"):
        """The token check of a path that `roles` may call with `scope`."""

        async def check(
            request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
        ) -> Token:
            secret = credentials.credentials if credentials is not None else request.cookies.get(COOKIE)
            if credentials is None and secret and request.method != "GET" and CSRF_HEADER not in request.headers:
                raise HTTPException(403, f"a change made with the dashboard's cookie needs the {CSRF_HEADER} header")
            if not secret:
                raise HTTPException(401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"})
            token = tokens.verify(secret)
            if token is None:
                raise HTTPException(401, "unknown or revoked token", headers={"WWW-Authenticate": "Bearer"})
            if token.role not in roles:
                raise HTTPException(403, f"a {token.role} token may not do this (needs {' or '.join(roles)})")
            if scope not in token.scopes:
                raise HTTPException(
                    403, f"token {token.name} lacks the scope {scope} (it has {', '.join(token.scopes)})"
                )
            return token

        return check

    Reader = Annotated[Token, Depends(caller(*READERS))]
    Approver = Annotated[Token, Depends(caller(*DECIDERS, scope="plans:approve"))]
    Drainer = Annotated[Token, Depends(caller(*DECIDERS, scope="hosts:drain"))]
    Fencer = Annotated[Token, Depends(caller(*DECIDERS, scope="hosts:fence"))]
    Submitter = Annotated[Token, Depends(caller(*DECIDERS, scope="runs:submit"))]

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(_: Reader) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    async def reference(_: Reader) -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Sova manager API")

    @app.get("/healthz", response_model=M.Health, tags=["service"])
    async def healthz() -> dict:
        """Alive, whether it leads (false as soon as its lease lapsed), how many hosts report (no token)."""
        return readiness.health(manager)

    @app.get("/readyz", response_model=M.Readiness, tags=["service"], responses={503: {"model": M.Readiness}})
    async def readyz(response: Response) -> dict:
        """Ready to work: bus connected, store answering, lease held (or standing by), reports recent;
        503 with the checks that fail (no token needed)."""
        results = await readiness.checks(manager)
        ready = all(check["ok"] for check in results.values())
        response.status_code = 200 if ready else 503
        return {"ready": ready, "checks": results}

    @app.get("/metrics", tags=["service"], response_class=Response)
    async def prometheus(_: Reader) -> Response:
        """Prometheus exposition (text format 0.0.4)."""
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    @app.get("/api/v1/hosts", response_model=list[M.Host], tags=["cluster"])
    async def hosts(_: Reader) -> list[dict]:
        return views.hosts(manager.runtime.knowledge, manager.collector.received)

    @app.post(
        "/api/v1/hosts/{host}/fenced",
        response_model=M.Fenced,
        tags=["cluster"],
        responses={409: {"model": M.ErrorBody}},
    )
    async def fenced(token: Fencer, host: HostName) -> dict:
        """Confirm that a failed host is off (its fence failed, or it has none): ha-restart then starts its
        VMs elsewhere. Only for a host declared failed; the audit trail names who confirmed."""
        try:
            return await manager.confirm_fenced(host, by=token.name)
        except ManagerError as err:
            raise HTTPException(409, str(err)) from None

    @app.post(
        "/api/v1/hosts/{host}/{verb}",
        response_model=M.Maintenance,
        tags=["cluster"],
        responses={409: {"model": M.ErrorBody}},
    )
    async def maintain(token: Drainer, host: HostName, verb: Literal["drain", "release"]) -> dict:
        """drain: put the host into maintenance (its VMs move away within the placement rules and capacity;
        nothing is placed or migrated onto it); release: it takes VMs again."""
        try:
            return await manager.maintain(host, verb == "drain", by=token.name)
        except ManagerError as err:
            raise HTTPException(409, str(err)) from None

    @app.get("/api/v1/hosts/series", response_model=M.Series, tags=["cluster"])
    async def host_series(
        _: Reader, seconds: Annotated[float, Query(gt=0, le=86400, description="how far back")] = 600.0
    ) -> dict:
        """Each host's CPU utilisation over time (at most 120 points), `seconds` back on the cluster's clock."""
        return views.host_series(manager.runtime.knowledge, seconds, manager.collector.clock)

    @app.get("/api/v1/vms", response_model=list[M.Vm], tags=["cluster"])
    async def vms(_: Reader) -> list[dict]:
        return views.vms(manager.runtime.knowledge)

    @app.get("/api/v1/vfs", response_model=list[M.Vfs], tags=["cluster"])
    async def vfs(_: Reader) -> list[dict]:
        return views.vfs(manager.runtime.knowledge)

    @app.get("/api/v1/findings", response_model=list[M.FindingRow], tags=["cluster"])
    async def findings(_: Reader) -> list[dict]:
        """What each policy found at its latest round (hotspots, slow VMs, ...)."""
        return views.findings(manager.runtime.findings, manager.collector.clock)

    @app.get("/api/v1/plans", response_model=M.PlanPage, tags=["plans"])
    async def plans(
        _: Reader,
        state: M.PlanState | None = None,
        offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict:
        """Plans, newest first."""
        rows, total = manager.store.plans(state, offset, limit)
        forecasts = manager.store.forecasts([row.id for row in rows])
        return {"total": total, "items": [views.plan(r, forecasts.get(r.id)) for r in rows]}

    @app.get("/api/v1/plans/{plan_id}", response_model=M.Plan, tags=["plans"], responses={404: {"model": M.ErrorBody}})
    async def plan(_: Reader, plan_id: PlanId) -> dict:
        row = manager.store.plan(plan_id)
        if row is None:
            raise HTTPException(404, f"no plan {plan_id}")
        return views.plan(row, manager.store.forecasts([plan_id]).get(plan_id))

    @app.post(
        "/api/v1/plans/{plan_id}/{verdict}",
        response_model=M.Decision,
        tags=["plans"],
        responses={404: {"model": M.ErrorBody}, 409: {"model": M.ErrorBody}, 503: {"model": M.ErrorBody}},
    )
    async def decide(token: Approver, plan_id: PlanId, verdict: Literal["approve", "reject", "cancel"]) -> dict:
        """Approve or reject a pending plan, or cancel one (its actions not yet sent are dropped)."""
        if not (manager.leading and manager.is_leader()):
            raise HTTPException(503, "this manager is the standby; send decisions to the leader")
        if manager.store.plan(plan_id) is None:
            raise HTTPException(404, f"no plan {plan_id}")
        try:
            return await manager.decide(plan_id, verdict, by=token.name)
        except ManagerError as err:
            raise HTTPException(409, str(err)) from None

    @app.get("/api/v1/audit", response_model=M.AuditPage, tags=["audit"])
    async def audit(
        _: Reader,
        offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        event: M.AuditEvent | None = None,
        target: Text = None,
        plan: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
    ) -> dict:
        """The audit trail, oldest first, filtered by event, target (VM or host) or plan."""
        rows, total = manager.store.audit(offset, limit, event, target, plan)
        return {"total": total, "items": [views.audit_entry(row) for row in rows]}

    @app.get("/api/v1/profiles", response_model=M.Profiles, tags=["policies"])
    async def profile_list(_: Reader) -> dict:
        """The profile this manager runs, the built-in profiles, and every policy's parameters."""
        policies = [
            {
                "name": name,
                "params": [
                    {"name": key, "kind": f.kind, "default": _default(f.default), "help": f.doc}
                    for key, f in cls.schema.items()
                ],
            }
            for name, cls in sorted(registry().items())
        ]
        builtin = {name: list(names) for name, names in profiles.items()}
        return {"running": manager.profile, "mode": manager.mode, "builtin": builtin, "policies": policies}

    add_slo_routes(app, manager, caller)
    add_what_if_routes(app, manager, caller, READERS, DECIDERS)
    add_dashboard(app, tokens, secure_cookie)
    if runs is not None:
        _add_runs(app, runs, Reader, Submitter)
    return app


RunId = Annotated[str, Path(max_length=63, pattern=r"^[A-Za-z0-9-]+$", description="the run's id")]


def _add_runs(app: FastAPI, runs: RunBook, Reader, Submitter) -> None:
    """Simulation runs: submit a scenario, follow it, fetch its results."""

    @app.post(
        "/api/v1/runs", response_model=M.Run, status_code=201, tags=["runs"], responses={422: {"model": M.ErrorBody}}
    )
    async def submit(token: Submitter, request: M.RunRequest) -> dict:
        """Queue a scenario (checked first: a bad one is refused with its problems, nothing queued)."""
        try:  # reading and checking a scenario takes a while: not on the manager's loop
            record = await asyncio.to_thread(runs.submit, request.scenario, request.profiles, token.name)
        except RunError as err:
            raise HTTPException(422, "; ".join(err.problems)) from None
        runs.poll()  # starts it if there is room
        return runs.get(record["id"])

    @app.get("/api/v1/runs", response_model=list[M.Run], tags=["runs"])
    async def run_list(_: Reader) -> list[dict]:
        runs.poll()
        return runs.list()

    @app.get("/api/v1/runs/{run_id}", response_model=M.Run, tags=["runs"], responses={404: {"model": M.ErrorBody}})
    async def run(_: Reader, run_id: RunId) -> dict:
        runs.poll()
        record = runs.get(run_id)
        if record is None:
            raise HTTPException(404, f"no run {run_id}")
        return record

    @app.get(
        "/api/v1/runs/{run_id}/results/{name}",
        tags=["runs"],
        response_class=FileResponse,
        responses={404: {"model": M.ErrorBody}},
    )
    async def result(_: Reader, run_id: RunId, name: Annotated[str, Path(max_length=128)]) -> FileResponse:
        """A file of a finished run: report.html, summary.json, metrics.parquet, a plot."""
        path = runs.result(run_id, name)
        if path is None:
            raise HTTPException(404, f"run {run_id} has no result {name!r}")
        return FileResponse(path)


def _default(value):
    """A parameter's default as JSON can hold it (a required one, or an infinite one, has none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return list(value)
    return value if isinstance(value, str | int | float | bool | list | type(None)) else None


def _clip_input(error: dict) -> dict:
    """A validation error whose echoed input is long shows only its start and length."""
    if "input" in error:
        text = json.dumps(_json_safe(error["input"]))
        if len(text) > ECHO_CHARS:
            error = error | {"input": f"{text[:ECHO_CHARS]}... ({len(text)} characters)"}
    return error


def _json_safe(value):
    """`value` with every non-finite float as its text ("inf", "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value
