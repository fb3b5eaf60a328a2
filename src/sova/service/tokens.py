"""API tokens: bearer secrets, of which the state store keeps only a SHA-256 hash, each with a role.

Roles: ``admin`` (everything), ``operator`` (read, and decide plans), ``viewer`` (read only), ``tenant``
(only its own VMs' storage SLOs). A secret is 32 random bytes, so a plain hash is enough to make a stolen
database useless for calling the API (a slow password hash guards guessable secrets, which these are not).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa

from sova.service.state import StateStore, tokens

ROLES = ("admin", "operator", "viewer", "tenant")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PREFIX = "sova_"


class TokenError(ValueError):
    """A token that cannot be made or removed as asked."""


@dataclass(frozen=True)
class Token:
    name: str
    role: str
    vms: tuple[str, ...] = ()  # a tenant's VMs


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenBook:
    def __init__(self, store: StateStore):
        self.engine = store.engine

    def create(self, name: str, role: str, vms: tuple[str, ...] = ()) -> str:
        """A new token's secret (shown once: only its hash is kept)."""
        if not _NAME.match(name):
            raise TokenError(f"token name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
        if role not in ROLES:
            raise TokenError(f"role {role!r} is not one of {', '.join(ROLES)}")
        if (role == "tenant") != bool(vms):
            raise TokenError("a tenant token names its VMs (--vm), and only a tenant token does")
        secret = PREFIX + secrets.token_urlsafe(32)
        row = {"name": name, "hash": hash_secret(secret), "role": role, "vms": json.dumps(list(vms))}
        with self.engine.begin() as connection:
            if connection.execute(sa.select(tokens.c.name).where(tokens.c.name == name)).first() is not None:
                raise TokenError(f"a token named {name!r} exists; revoke it first")
            connection.execute(tokens.insert().values(**row, created=time.time()))
        return secret

    def verify(self, secret: str) -> Token | None:
        """The token whose secret this is, or None."""
        if not secret.startswith(PREFIX) or len(secret) > 128:
            return None
        query = sa.select(tokens).where(tokens.c.hash == hash_secret(secret))
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None else Token(row.name, row.role, tuple(json.loads(row.vms)))

    def all(self) -> list[Token]:
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(tokens).order_by(tokens.c.name)).all()
        return [Token(r.name, r.role, tuple(json.loads(r.vms))) for r in rows]

    def revoke(self, name: str) -> None:
        with self.engine.begin() as connection:
            if connection.execute(tokens.delete().where(tokens.c.name == name)).rowcount == 0:
                raise TokenError(f"no token named {name!r}")
