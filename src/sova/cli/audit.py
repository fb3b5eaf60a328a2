"""``sova audit verify``: walk the hash chain of a manager's audit trail (service/audit_chain.py) in its
state store, and say how many rows hold and which row first does not. Exit status 0 when the chain
holds, 1 when it is broken, 2 when the store cannot be opened."""

from __future__ import annotations

from sova.cli.common import described, error, out
from sova.cli.service import add_state_argument


def add_parser(sub) -> None:
    a = sub.add_parser(
        "audit",
        help="check the manager's audit trail: its hash chain",
        **described(
            "Each row of the manager's audit trail carries the SHA-256 of its fields and of the row before it. "
            "`sova audit verify` walks the chain in the state store and names the first row that does not "
            "hold: one changed after it was written, one missing (the ids jump), rows moved, or rows cut off "
            "the end. It exits 1 when the chain is broken.",
            [
                "sova audit verify",
                "sova audit verify --state postgresql+psycopg://sova@db/sova",
            ],
            "docs/service.md: the audit trail",
        ),
    )
    a.add_argument("action", choices=["verify"])
    add_state_argument(a)


def command(args) -> int:
    from sova.cli.service import open_store

    store = open_store(args.state)
    try:
        check = store.verify_audit()
    finally:
        store.close()
    if check.broken is not None:
        error(f"audit chain broken at row {check.broken.row}: {check.broken.problem}")
        out.print(f"{check.rows} row(s) before it hold", markup=False, soft_wrap=True)
        return 1
    out.print(f"audit chain holds: {check.rows} row(s), last hash {check.last_hash}", markup=False, soft_wrap=True)
    return 0
