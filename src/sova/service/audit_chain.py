"""The audit trail's hash chain: each row carries the SHA-256 of its own fields and of the row before it,
so a row changed, removed or moved after it was written breaks the chain at that row.

A row's hash is SHA-256 over one JSON object (keys sorted, no spaces, UTF-8): its id, time, wall_time
(null in rows from before it was kept), plan, event, policy, action, target, reason, status, message,
details (the stored JSON text) and ``prev_hash``, the hash of the row before it (64 zeros for the first).
The id is in it, so renumbering breaks the chain too. This format is a contract with every store written
so far (migration 0008 chained the rows before it):
changing it needs a migration that chains the trail again.

What the chain cannot tell: rows cut off the end, or a whole trail rewritten from some row on. The store's
one-row ``audit_head`` keeps the last id and hash, which ``verify`` compares, so a cut at the end shows
unless the head was rewritten too; a copy of the head's hash kept elsewhere guards the rest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GENESIS = "0" * 64  # the prev_hash of the first row
TEXT_FIELDS = ("event", "policy", "action", "target", "reason", "status", "message", "details")


def row_hash(row: Mapping, prev_hash: str) -> str:
    """The hash of an audit row (its stored values: `details` as the JSON text kept) after `prev_hash`."""
    fields = {"id": int(row["id"]), "time": float(row["time"]), "plan": int(row["plan"]), "prev_hash": prev_hash}
    fields["wall_time"] = _wall(row)
    fields |= {name: str(row[name]) for name in TEXT_FIELDS}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def chained(rows: list[dict], last_id: int, last_hash: str) -> list[dict]:
    """`rows` (without id) as the rows that follow the head (`last_id`, `last_hash`): each with its id,
    prev_hash and hash, and its values as the store keeps them (what the hash was made from)."""
    out = []
    for offset, row in enumerate(rows, start=1):
        stored = {"id": last_id + offset, "time": float(row["time"]), "plan": int(row["plan"]), "wall_time": _wall(row)}
        stored |= {name: str(row[name]) for name in TEXT_FIELDS}
        stored |= {"prev_hash": last_hash, "hash": row_hash(stored, last_hash)}
        last_hash = stored["hash"]
        out.append(stored)
    return out


def _wall(row: Mapping) -> float | None:
    wall_time = row.get("wall_time")
    return None if wall_time is None else float(wall_time)


@dataclass(frozen=True)
class ChainBreak:
    row: int  # the id of the first row that does not hold
    problem: str


@dataclass(frozen=True)
class ChainCheck:
    rows: int  # rows that held, in id order, before the break (all of them when there is none)
    broken: ChainBreak | None
    last_hash: str


def verify(rows: Iterable[Mapping], last_id: int, last_hash: str) -> ChainCheck:
    """Walk `rows` (in id order, up to the head's `last_id`) and say where the chain first breaks."""
    prev_id, prev_hash, count = 0, GENESIS, 0
    for row in rows:
        if row["prev_hash"] != prev_hash:
            if row["id"] != prev_id + 1 and prev_id:
                problem = f"row(s) missing before it: the ids jump from {prev_id} to {row['id']}"
            elif row["id"] != 1 and not prev_id:
                problem = f"row(s) missing before it: the trail starts at id {row['id']}"
            elif prev_id:
                problem = f"its prev_hash is not the hash of row {prev_id} (rows moved, or row {prev_id} rewritten)"
            else:
                problem = "its prev_hash is not the chain's start (64 zeros)"
            return ChainCheck(count, ChainBreak(row["id"], problem), prev_hash)
        if row_hash(row, prev_hash) != row["hash"]:
            problem = "its fields do not match its hash: the row was changed after it was written"
            return ChainCheck(count, ChainBreak(row["id"], problem), prev_hash)
        prev_id, prev_hash, count = row["id"], row["hash"], count + 1
    if prev_id != last_id:
        problem = f"row(s) missing at the end: the trail ends at id {prev_id}, its head says {last_id}"
        return ChainCheck(count, ChainBreak(prev_id + 1, problem), prev_hash)
    if prev_hash != last_hash:
        problem = "its hash is not the one the head recorded: the last row was rewritten"
        return ChainCheck(count - 1, ChainBreak(prev_id, problem), prev_hash)
    return ChainCheck(count, None, prev_hash)
