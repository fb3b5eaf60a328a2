"""Whether a manager can do its work now (``/readyz``), check by check, each saying what fails.

``/healthz`` says only that the process answers; a load balancer or an operator asks ``/readyz``: the
bus connected, the state store answering (within ``STORE_SECONDS``, off the event loop: a database that
hangs must not hang the API), the leader's lease held by this manager or, on a standby, its view of the
hosts kept, and at least one host's report recent (within the manager's ``stale_after``).
"""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

STORE_SECONDS = 2.0  # s the store has to answer a ping


def _ping(engine) -> None:
    with engine.connect() as connection:
        connection.execute(sa.text("SELECT 1"))


async def checks(manager) -> dict[str, dict]:
    """Each check: {"ok": bool, "detail": what holds or what fails}."""
    out = {}
    connected = manager.bus.client.is_connected
    out["bus"] = {"ok": connected, "detail": "connected" if connected else "not connected to NATS"}
    try:
        await asyncio.wait_for(asyncio.to_thread(_ping, manager.store.engine), STORE_SECONDS)
        out["store"] = {"ok": True, "detail": "answers"}
    except TimeoutError:
        out["store"] = {"ok": False, "detail": f"no answer within {STORE_SECONDS:g} s"}
    except Exception as err:  # any database error: it is what the operator needs to read
        out["store"] = {"ok": False, "detail": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
    leading = manager.leading and manager.is_leader()
    lease = "held: this manager leads" if leading else "standby: another manager leads"
    out["lease"] = {"ok": leading or not manager.leading, "detail": lease}
    hosts = len(manager.collector.fresh())
    out["reports"] = {
        "ok": hosts > 0,
        "detail": f"{hosts} host(s) reported within {manager.collector.stale_after:g} s",
    }
    return out
