"""Whether a manager is alive (``/healthz``) and can do its work now (``/readyz``), check by check.

``/healthz`` says only that the process answers; a load balancer or an operator asks ``/readyz``: the
bus connected, the state store answering (within ``STORE_SECONDS``, off the event loop: a database that
hangs must not hang the API), the leader's lease held by this manager or, on a standby, its view of the
hosts kept, and at least one host's report recent (within the manager's ``stale_after``).
Both are answered on the API's event loop and, with ``sova manager --health``, by the threads of
health_server.py: what they read of the manager (flags, a lease's deadline, a dict copied in one step)
another thread may read while the loop runs.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa

STORE_SECONDS = 2.0  # s the store has to answer a ping
_pings = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sova-store-ping")  # a hung store holds 4 at most


def health(manager) -> dict:
    """Alive; whether it leads (false as soon as its lease lapsed); how many hosts report."""
    return {
        "status": "ok",
        "leader": manager.leading and manager.is_leader(),
        "hosts_reporting": len(manager.collector.fresh()),
        "uptime_s": round(time.time() - manager.started, 3),
    }


async def checks(manager) -> dict[str, dict]:
    """Each check: {"ok": bool, "detail": what holds or what fails} (on the event loop)."""
    ping = asyncio.wrap_future(_pings.submit(_ping, manager.store.engine))
    try:
        await asyncio.wait_for(ping, STORE_SECONDS)
        store = None
    except Exception as err:  # TimeoutError, or any database error: it is what the operator needs to read
        store = err
    return _checks(manager, store)


def checks_blocking(manager) -> dict[str, dict]:
    """The same checks from a thread that may wait (the health listener's)."""
    try:
        _pings.submit(_ping, manager.store.engine).result(STORE_SECONDS)
        store = None
    except Exception as err:
        store = err
    return _checks(manager, store)


def _ping(engine) -> None:
    with engine.connect() as connection:
        connection.execute(sa.text("SELECT 1"))


def _checks(manager, store_error: BaseException | None) -> dict[str, dict]:
    out = {}
    connected = manager.bus.client.is_connected
    out["bus"] = {"ok": connected, "detail": "connected" if connected else "not connected to NATS"}
    if store_error is None:
        out["store"] = {"ok": True, "detail": "answers"}
    elif isinstance(store_error, TimeoutError):  # asyncio's and concurrent.futures' alike
        out["store"] = {"ok": False, "detail": f"no answer within {STORE_SECONDS:g} s"}
    else:
        first_line = (str(store_error).splitlines() or [""])[0][:200]
        out["store"] = {"ok": False, "detail": f"{type(store_error).__name__}: {first_line}"}
    leading = manager.leading and manager.is_leader()
    lease = "held: this manager leads" if leading else "standby: another manager leads"
    out["lease"] = {"ok": leading or not manager.leading, "detail": lease}
    hosts = len(manager.collector.fresh())
    out["reports"] = {
        "ok": hosts > 0,
        "detail": f"{hosts} host(s) reported within {manager.collector.stale_after:g} s",
    }
    return out
