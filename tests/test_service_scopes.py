"""Token scopes at the manager's API: a token made with some of its role's scopes may do only what they
cover, and a 403 names the scope it lacks. A real manager, its API and a simulated cluster's agents on a
real nats-server."""

from __future__ import annotations

import asyncio

import httpx

from service_stack import Stack, wait_for
from sova.service.tokens import TokenBook

SCENARIO = '[scenario]\nname = "s"\nduration = 60\n\n[[hosts]]\nname = "h1"\n'


def test_each_changing_path_wants_its_scope_and_the_refusal_names_it(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="approve")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        book = TokenBook(stack.store)
        secrets = {
            "approver": book.create("approver", "operator", scopes=("read", "plans:approve")),
            "drainer": book.create("drainer", "operator", scopes=("hosts:drain",)),
            "watcher": book.create("watcher", "tenant", ("v1",), scopes=("read",)),
        }
        as_ = {name: {"Authorization": f"Bearer {secret}"} for name, secret in secrets.items()}
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                await wait_for(lambda: stack.manager.store.plans(state="pending")[1] >= 1)
                plan = stack.manager.store.plans(state="pending")[0][0].id
                answers = {
                    "approver reads": await client.get("/api/v1/plans", headers=as_["approver"]),
                    "approver approves": await client.post(f"/api/v1/plans/{plan}/approve", headers=as_["approver"]),
                    "approver drains": await client.post("/api/v1/hosts/h2/drain", headers=as_["approver"]),
                    "approver sets an SLO": await client.put(
                        "/api/v1/slos/v1", json={"throughput": [1, 2]}, headers=as_["approver"]
                    ),
                    "approver submits a run": await client.post(
                        "/api/v1/runs", json={"scenario": SCENARIO, "profiles": []}, headers=as_["approver"]
                    ),
                    "drainer reads": await client.get("/api/v1/hosts", headers=as_["drainer"]),
                    "drainer rejects": await client.post(f"/api/v1/plans/{plan}/reject", headers=as_["drainer"]),
                    "drainer drains": await client.post("/api/v1/hosts/h2/drain", headers=as_["drainer"]),
                    "drainer releases": await client.post("/api/v1/hosts/h2/release", headers=as_["drainer"]),
                    "watcher reads its SLO": await client.get("/api/v1/slos", headers=as_["watcher"]),
                    "watcher sets its SLO": await client.put(
                        "/api/v1/slos/v1", json={"throughput": [1, 2]}, headers=as_["watcher"]
                    ),
                    "dashboard login without read": await client.post(
                        "/login", content=f"token={secrets['drainer']}".encode()
                    ),
                }
                trail, _ = stack.manager.store.audit(limit=1000)
                return plan, answers, trail
        finally:
            await stack.stop_all()

    plan, answers, trail = asyncio.run(run())
    codes = {name: answer.status_code for name, answer in answers.items()}
    assert codes == {
        "approver reads": 200,
        "approver approves": 200,
        "approver drains": 403,
        "approver sets an SLO": 403,
        "approver submits a run": 403,
        "drainer reads": 403,
        "drainer rejects": 403,
        "drainer drains": 200,
        "drainer releases": 200,
        "watcher reads its SLO": 200,
        "watcher sets its SLO": 403,
        "dashboard login without read": 401,
    }
    detail = {name: answer.json()["detail"] for name, answer in answers.items() if answer.status_code == 403}
    assert detail["approver drains"] == "token approver lacks the scope hosts:drain (it has read, plans:approve)"
    assert "lacks the scope slos:write" in detail["approver sets an SLO"]
    assert "lacks the scope runs:submit" in detail["approver submits a run"]
    assert detail["drainer reads"] == "token drainer lacks the scope read (it has hosts:drain)"
    assert "lacks the scope plans:approve" in detail["drainer rejects"]
    assert "lacks the scope slos:write" in detail["watcher sets its SLO"]
    assert "without the scope read" in answers["dashboard login without read"].text
    approvals = [e["message"] for e in trail if e["plan"] == plan and e["event"] == "approved"]
    assert approvals == ["approved by approver"]
    notes = [e["reason"] for e in trail if e["event"] == "note" and e["target"] == "h2"]
    assert notes == ["h2 put into maintenance by drainer", "h2 released from maintenance by drainer"]
