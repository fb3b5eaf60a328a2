"""Every decision a person makes through the manager's API is in the audit trail under the name of the
token that made it (its holder, never its role): approving, rejecting and cancelling plans (waiting or
ongoing), draining and releasing hosts, setting and clearing SLOs. A real manager, its API and a
simulated cluster's agents on a real nats-server."""

from __future__ import annotations

import asyncio

import httpx

from service_stack import Stack, wait_for


def newest_pending(stack: Stack, after: int) -> int | None:
    rows, _ = stack.manager.store.plans(state="pending")
    newer = [row.id for row in rows if row.id > after]
    return max(newer) if newer else None


async def next_pending(stack: Stack, after: int) -> int:
    await wait_for(lambda: newest_pending(stack, after) is not None)
    return newest_pending(stack, after)


def test_each_decision_through_the_api_is_audited_with_the_tokens_name(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="approve")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        ada, otto = stack.headers("admin"), stack.headers("operator")
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                rejected = await next_pending(stack, 0)
                assert (await client.post(f"/api/v1/plans/{rejected}/reject", headers=otto)).status_code == 200
                cancelled = await next_pending(stack, rejected)
                assert (await client.post(f"/api/v1/plans/{cancelled}/cancel", headers=ada)).status_code == 200
                approved = await next_pending(stack, cancelled)
                assert (await client.post(f"/api/v1/plans/{approved}/approve", headers=otto)).status_code == 200
                stopped = await client.post(f"/api/v1/plans/{approved}/cancel", headers=ada)  # ongoing now
                assert stopped.status_code == 200, stopped.text
                for verb in ("drain", "release"):
                    assert (await client.post(f"/api/v1/hosts/h2/{verb}", headers=otto)).status_code == 200
                put = await client.put("/api/v1/slos/v2", json={"throughput": [100, 200]}, headers=ada)
                assert put.status_code == 200, put.text
                assert (await client.delete("/api/v1/slos/v2", headers=otto)).status_code == 204
                await wait_for(lambda: stack.manager.store.plan(approved).state == "cancelled")
                plans = {p: stack.manager.store.plan(p) for p in (rejected, cancelled, approved)}
                trail = (await client.get("/api/v1/audit", params={"limit": 1000}, headers=ada)).json()["items"]
                return rejected, cancelled, approved, plans, trail
        finally:
            await stack.stop_all()

    rejected, cancelled, approved, plans, trail = asyncio.run(run())

    def said(plan: int, event: str) -> set[str]:
        return {e["message"] for e in trail if e["plan"] == plan and e["event"] == event}

    assert said(rejected, "rejected") == {"rejected by otto"}
    assert said(cancelled, "rejected") == {"cancelled by ada"}
    assert said(approved, "approved") == {"approved by otto"}
    assert [e["reason"] for e in trail if e["plan"] == approved and e["event"] == "note"] == ["cancelled by ada"]
    assert {p: (row.state, row.decided_by) for p, row in plans.items()} == {
        rejected: ("rejected", "otto"),
        cancelled: ("cancelled", "ada"),
        approved: ("cancelled", "otto"),  # decided (approved) by otto, then cancelled by ada
    }
    notes = [e["reason"] for e in trail if e["event"] == "note" and e["target"] == "h2"]
    assert notes == ["h2 put into maintenance by otto", "h2 released from maintenance by otto"]
    slos = [(e["event"], e["target"], e["reason"]) for e in trail if e["event"].startswith("slo-")]
    assert slos == [("slo-set", "v2", "by ada"), ("slo-cleared", "v2", "by otto")]
