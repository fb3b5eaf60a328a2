"""The REST API's bodies, as pydantic models: they make its OpenAPI schema (which the fuzz tests read).

Every time is a Unix time (seconds since 1970, UTC) on the wall clock; where the cluster's own clock (its
reports' times, which the control loop computes with) runs apart from it, as a simulated cluster's does,
a ``sim_`` field beside it holds that clock's time, and is null otherwise (service/cluster_clock.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PlanState = Literal[
    "pending",
    "ongoing",
    "succeeded",
    "partially-succeeded",
    "failed",
    "cancelled",
    "rejected",
    "expired",
    "superseded",
    "dry-run",
]
AuditEvent = Literal[
    "finding",
    "note",
    "proposed",
    "rejected",
    "applied",
    "failed",
    "finished",
    "dry-run",
    "pending",
    "approved",
    "expired",
    "superseded",
    "waiting",
    "slo-set",
    "slo-cleared",
    "token-created",
    "token-revoked",
    "token-expired",
]


class Health(BaseModel):
    status: Literal["ok"]
    leader: bool
    hosts_reporting: int
    uptime_s: float


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, Check]


class Host(BaseModel):
    name: str
    cores: float
    memory_mib: float
    cpu_utilization: float | None = Field(description="CPU busy / hardware threads over the last 10 s")
    vms: int
    vfs_used: int
    vfs_total: int
    report_age_s: float | None = Field(description="seconds since its agent's latest report")
    maintenance: bool = Field(description="drained: its VMs move away and it takes none until released")
    failed: bool = Field(description="declared failed: silent for the failure grace")
    fenced: bool = Field(description="failed and fenced (it runs no VM): its VMs may start elsewhere")


class Fenced(BaseModel):
    host: str
    fenced: bool
    vms: int = Field(description="VMs still on the host in the newest observation (ha-restart starts them elsewhere)")
    by: str


class Maintenance(BaseModel):
    host: str
    maintenance: bool = Field(description="whether the host is in maintenance now")
    vms: int = Field(description="VMs still on the host in the newest observation")
    by: str


class Vm(BaseModel):
    name: str
    host: str
    vcpus: float
    memory_mib: float
    cpu_cores: float | None = Field(description="CPU cores used over the last 10 s")
    nic: str = Field(description="vnic (para-virtual) or the VF it holds")
    migrating: bool


class Vfs(BaseModel):
    host: str
    total: int
    used: int
    holders: list[str]


WALL = "Unix time (UTC), wall clock"
SIM = "the cluster's own clock then, where it runs apart from the wall clock (a simulated cluster), else null"


class FindingRow(BaseModel):
    policy: str
    time: float = Field(description=f"the policy's latest round: {WALL}")
    sim_time: float | None = Field(description=SIM)
    kind: str
    host: str
    notable: bool
    text: str
    fields: dict[str, Any]


class Series(BaseModel):
    times: list[float] = Field(description=f"the end of each point's interval: {WALL}")
    sim_times: list[float] | None = Field(
        description="the same on the cluster's own clock, where it runs apart from the wall clock (a simulated "
        "cluster), else null"
    )
    hosts: dict[str, list[float | None]]


class Forecast(BaseModel):
    made: float = Field(description=WALL)
    horizon: float = Field(description="seconds of the cluster's clock the forecast looks ahead")
    answer: dict[str, Any] | None = Field(
        description="the what-if's answer (as POST /api/v1/what-if's); null if it failed"
    )
    error: str | None = Field(description="why the forecast failed")
    checked: dict[str, Any] | None = Field(
        description="once the plan ran and the horizon passed: per quantity, forecast, measured and error"
    )
    checked_at: float | None = Field(description=WALL)


class Plan(BaseModel):
    id: int
    created: float = Field(description=WALL)
    sim_created: float | None = Field(description=SIM)
    policy: str
    state: PlanState
    actions: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    decided_at: float | None = Field(description=f"approved, rejected, cancelled or expired: {WALL}")
    sim_decided_at: float | None = Field(description=SIM)
    decided_by: str | None
    forecast: Forecast | None = Field(
        None, description="approve mode: what the simulator forecast for the plan against doing nothing"
    )


Seconds = Annotated[float, Field(ge=0.1, le=86400, allow_inf_nan=False)]
ListedName = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$")]


class WhatIfRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    horizon: Annotated[float, Field(ge=10, le=86400, allow_inf_nan=False)] = Field(
        1800.0, description="seconds ahead on the cluster's clock"
    )
    as_is: bool = Field(True, strict=True, description="also the running profile, acting by itself")
    drain: list[ListedName] = Field([], max_length=16, description="an alternative per host: drained")
    profiles: list[ListedName] = Field([], max_length=16, description="an alternative per profile: its policies")
    add_vms: list[Annotated[str, Field(pattern=r"^[^:\x00-\x1f/]+:[0-9]+:[^:\x00-\x1f]+(:[0-9.]+)?$")]] = Field(
        [], max_length=16, description="an alternative per VM added now: NAME:VCPUS:MEMORY[:CPU]"
    )
    window: Seconds = Field(600.0, description="seconds of demand history the snapshot takes")
    interval: Seconds = Field(10.0, description="seconds per demand sample")


class WhatIfAnswer(BaseModel):
    source: str
    horizon: float
    baseline: str
    quantities: dict[str, str]
    alternatives: list[dict[str, Any]]


class WhatIfJob(BaseModel):
    id: int
    asked: float = Field(description=WALL)
    by: str = Field(description="the token that asked")
    state: Literal["queued", "running", "done", "failed"]
    ended: float | None = Field(description=WALL)
    answer: WhatIfAnswer | None = Field(description="once done")
    error: str | None = Field(description="once failed: why")


class ClusterSnapshot(BaseModel):
    document: dict[str, Any] = Field(description="the scenario file's tables (TOML as JSON)")
    demand: str = Field(description="the demand file (Parquet), base64")
    demand_file: str = Field(description="the name the scenario gives the demand file")


class PlanPage(BaseModel):
    total: int
    items: list[Plan]


class Decision(BaseModel):
    plan: int
    state: str
    dropped: int = Field(description="actions not yet sent that a cancel dropped")


class AuditRow(BaseModel):
    id: int
    time: float = Field(description=WALL)
    sim_time: float | None = Field(description=SIM)
    plan: int
    event: str
    policy: str
    action: str
    target: str
    reason: str
    status: str
    message: str
    details: dict[str, Any]


class AuditPage(BaseModel):
    total: int
    items: list[AuditRow]


class PolicyParam(BaseModel):
    name: str
    kind: str
    default: Any
    help: str


class Policy(BaseModel):
    name: str
    params: list[PolicyParam]


class Profiles(BaseModel):
    running: str = Field(description="the profile this manager runs")
    mode: str
    builtin: dict[str, list[str]]
    policies: list[Policy]


class ErrorBody(BaseModel):
    detail: str | list[dict[str, Any]] = Field(
        description="what was wrong; a list naming each field for bad parameters"
    )


class RunRequest(BaseModel):
    scenario: str = Field(max_length=1 << 20, description="the scenario file's text (TOML)")
    profiles: list[Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]] = Field(
        default=[], max_length=32, description="the profiles to run (default: every profile of the scenario)"
    )


class RunProgress(BaseModel):
    done: float
    total: float
    unit: str  # "simulated seconds" (of every profile), or "runs" or "trials" when they run in parallel


class Run(BaseModel):
    id: str
    scenario: str
    profiles: list[str]
    by: str
    submitted: float = Field(description=WALL)
    state: Literal["queued", "running", "done", "failed"]
    started: float | None = Field(None, description=WALL)
    ended: float | None = Field(None, description=WALL)
    error: str = ""
    progress: RunProgress | None
    report: bool = Field(description="its report.html is there: GET /api/v1/runs/{id}/results/report.html")


Finite = Annotated[float, Field(allow_inf_nan=False)]
Bounds = tuple[Finite, Finite]


class SloSettings(BaseModel):
    """A change to a VM's storage SLO (SASLO's Table 1); settings left out keep their values."""

    model_config = ConfigDict(extra="forbid")
    throughput: Bounds | None = Field(None, description="IOPS target range [low, high]; needed once")
    io_size: Bounds | None = Field(None, description="IO size limit range, bytes")
    sc_rate: Bounds | None = Field(None, description="acceptable SLO compliance rate range, per cent")
    pf_ratio: Bounds | None = Field(None, description="acceptable performance fluctuation ratio range, per cent")
    latency: Finite | None = Field(None, description="mean IO latency target, seconds")


class SloStatus(BaseModel):
    sc_rate: float | None = Field(description="SLO compliance rate over the last interval, per cent")
    pf_ratio: float | None = Field(description="performance fluctuation ratio over the last interval, per cent")
    throughput: float | None = Field(description="IOPS in the last second")
    target: float | None = Field(description="the throughput target the SLO engine holds now, IOPS")
    latency: float | None = Field(description="mean IO latency in the last second, seconds")
    host: str
    received: float = Field(description=f"when the manager got it: {WALL}")


class Slo(BaseModel):
    vm: str
    slo: dict[str, list[float] | float | None]
    set_by: str
    set_at: float = Field(description=WALL)
    status: SloStatus | None = Field(description="what the VM's host measured (null until it reports)")
