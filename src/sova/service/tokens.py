"""API tokens: bearer secrets, of which the state store keeps only a SHA-256 hash, each with a role.

Roles: ``admin`` (everything), ``operator`` (read, and decide plans), ``viewer`` (read only), ``tenant``
(only its own VMs' storage SLOs). A secret is 32 random bytes, so a plain hash is enough to make a stolen
database useless for calling the API (a slow password hash guards guessable secrets, which these are not).

A token expires (90 days after it is made unless asked otherwise): used after that it is refused and
removed. Making, revoking and the expiry of a token are each an entry in the audit trail, naming who.

Scopes say what a token may do per kind of resource: ``read`` (every GET), ``plans:approve`` (approve,
reject, cancel plans), ``hosts:drain`` (drain, release), ``hosts:fence``
(confirm a failed host is off), ``slos:write`` (set, clear SLOs), ``runs:submit``
(simulation runs). A role implies its scopes (``ROLE_SCOPES``); a token made with scopes has only those,
which must be among its role's: scopes narrow a role, never widen it. A token made without keeps NULL in
the store: its role's scopes, whatever this version says they are.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa

from sova.control.audit import AuditEntry
from sova.service.state import StateStore, tokens

ROLES = ("admin", "operator", "viewer", "tenant")
SCOPES = ("read", "plans:approve", "hosts:drain", "hosts:fence", "slos:write", "runs:submit")
ROLE_SCOPES = {
    "admin": SCOPES,
    "operator": SCOPES,
    "viewer": ("read",),
    "tenant": ("read", "slos:write"),  # its own VMs' SLOs only (the API checks the VM)
}
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PREFIX = "sova_"
LIFETIME = 90 * 86400.0  # s a token lasts unless its maker says otherwise


class TokenError(ValueError):
    """A token that cannot be made or removed as asked."""


@dataclass(frozen=True)
class Token:
    name: str
    role: str
    vms: tuple[str, ...] = ()  # a tenant's VMs
    expires: float | None = None  # time after which it is refused (None: never)
    scopes: tuple[str, ...] = ()  # what it may do: those it was made with, else its role's (ROLE_SCOPES)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenBook:
    def __init__(self, store: StateStore):
        self.store, self.engine = store, store.engine

    def create(
        self,
        name: str,
        role: str,
        vms: tuple[str, ...] = (),
        lifetime: float | None = LIFETIME,
        by: str = "admin",
        scopes: tuple[str, ...] = (),
    ) -> str:
        """A new token's secret (shown once: only its hash is kept); it lasts `lifetime` s (None: for ever).
        `by`: who made it, for the audit trail; `scopes`: only these of its role's (none: all of them)."""
        if not _NAME.match(name):
            raise TokenError(f"token name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
        if role not in ROLES:
            raise TokenError(f"role {role!r} is not one of {', '.join(ROLES)}")
        if (role == "tenant") != bool(vms):
            raise TokenError("a tenant token names its VMs (--vm), and only a tenant token does")
        if lifetime is not None and not 0 < lifetime < float("inf"):
            raise TokenError(f"a token's lifetime must be a positive number of seconds, got {lifetime!r}")
        for scope in scopes:
            if scope not in SCOPES:
                raise TokenError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
            if scope not in ROLE_SCOPES[role]:
                allowed = ", ".join(ROLE_SCOPES[role])
                raise TokenError(f"a {role} token cannot have scope {scope}: its role allows {allowed}")
        scopes = tuple(dict.fromkeys(scopes))  # each once, in the order given
        secret = PREFIX + secrets.token_urlsafe(32)
        now = time.time()
        expires = None if lifetime is None else now + lifetime
        row = {"name": name, "hash": hash_secret(secret), "role": role, "vms": json.dumps(list(vms))}
        row["scopes"] = json.dumps(list(scopes)) if scopes else None
        with self.engine.begin() as connection:
            if connection.execute(sa.select(tokens.c.name).where(tokens.c.name == name)).first() is not None:
                raise TokenError(f"a token named {name!r} exists; revoke it first")
            connection.execute(tokens.insert().values(**row, created=now, expires=expires))
        granted = list(scopes or ROLE_SCOPES[role])
        details = {"role": role, "vms": list(vms), "expires": expires, "scopes": granted, "narrowed": bool(scopes)}
        self._audit("token-created", name, f"by {by}", details)
        return secret

    def verify(self, secret: str) -> Token | None:
        """The token whose secret this is, or None."""
        if not secret.startswith(PREFIX) or len(secret) > 128:
            return None
        query = sa.select(tokens).where(tokens.c.hash == hash_secret(secret))
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        if row.expires is not None and row.expires <= time.time():
            self._remove(row.name, "token-expired", "its lifetime ended")
            return None
        return _token(row)

    def all(self) -> list[Token]:
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(tokens).order_by(tokens.c.name)).all()
        return [_token(r) for r in rows]

    def revoke(self, name: str, by: str = "admin") -> None:
        if not self._remove(name, "token-revoked", f"by {by}"):
            raise TokenError(f"no token named {name!r}")

    def _remove(self, name: str, event: str, reason: str) -> bool:
        """Delete a token and audit why; False if it was not there (another caller removed it first)."""
        with self.engine.begin() as connection:
            if connection.execute(tokens.delete().where(tokens.c.name == name)).rowcount == 0:
                return False
        self._audit(event, name, reason, {})
        return True

    def _audit(self, event: str, name: str, reason: str, details: dict) -> None:
        what = {"token-created": "made", "token-revoked": "revoked", "token-expired": "expired"}[event]
        entry = AuditEntry(time.time(), 0, event, "tokens", f"token {name} {what}", name, reason, details=details)
        self.store.append_audit([entry])


def _token(row) -> Token:
    scopes = tuple(json.loads(row.scopes)) if row.scopes is not None else ROLE_SCOPES[row.role]
    return Token(row.name, row.role, tuple(json.loads(row.vms)), row.expires, scopes)
