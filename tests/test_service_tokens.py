"""API tokens in the state store: their lifetime, and the audit trail of who made, revoked or outlived
them; their scopes; the CLI that manages them. On SQLite (the store's engines are tested in
test_service_state.py)."""

from __future__ import annotations

import pytest

import sova.service.tokens as tokens_module
from helpers import database_at
from sova.cli import main as cli_main
from sova.service.state import StateStore
from sova.service.tokens import LIFETIME, ROLE_SCOPES, TokenBook, TokenError


def events(store: StateStore) -> list[tuple[str, str, str]]:
    rows, _ = store.audit()
    return [(r["event"], r["target"], r["reason"]) for r in rows]


def test_making_and_revoking_a_token_are_audited_with_who_did_it(tmp_path):
    store = StateStore(f"sqlite:///{tmp_path / 'm.db'}")
    book = TokenBook(store)
    secret = book.create("carol", "operator", by="ann")
    assert book.verify(secret).name == "carol"
    book.revoke("carol", by="bob")
    assert book.verify(secret) is None
    assert events(store) == [("token-created", "carol", "by ann"), ("token-revoked", "carol", "by bob")]
    created = store.audit()[0][0]["details"]
    assert created["role"] == "operator" and created["expires"] == pytest.approx(
        tokens_module.time.time() + LIFETIME, abs=60
    )


def test_a_token_past_its_lifetime_is_refused_removed_and_its_expiry_audited(tmp_path, monkeypatch):
    store = StateStore(f"sqlite:///{tmp_path / 'm.db'}")
    book = TokenBook(store)
    now = tokens_module.time.time()
    short, lasting = book.create("short", "viewer", lifetime=3600.0), book.create("lasting", "viewer", lifetime=None)
    default = book.create("default", "viewer")
    assert {t.name: t.expires for t in book.all()}["default"] == pytest.approx(now + LIFETIME, abs=60)
    monkeypatch.setattr(tokens_module.time, "time", lambda: now + 3601.0)
    assert book.verify(short) is None and book.verify(short) is None  # refused, and expired only once
    assert book.verify(lasting).name == "lasting" and book.verify(default).name == "default"
    assert [t.name for t in book.all()] == ["default", "lasting"]
    assert events(store)[-1] == ("token-expired", "short", "its lifetime ended")
    assert [e for e, _, _ in events(store)].count("token-expired") == 1


def test_a_token_made_before_tokens_expired_never_expires(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    old = "INSERT INTO tokens (name, hash, role, vms, created) VALUES ('old', 'h', 'viewer', '[]', 1)"
    database_at(url, "0004", [(old, {})])
    store = StateStore(url)
    assert [(t.name, t.expires) for t in TokenBook(store).all()] == [("old", None)]


def test_the_cli_makes_tokens_that_expire_when_told_and_refuses_a_lifetime_it_cannot_read(tmp_path, capsys):
    state = f"sqlite:///{tmp_path / 'm.db'}"
    assert cli_main(["token", "add", "dora", "--role", "viewer", "--expires", "12h", "--state", state]) == 0
    assert cli_main(["token", "add", "eve", "--role", "viewer", "--expires", "never", "--state", state]) == 0
    capsys.readouterr()
    assert cli_main(["token", "list", "--state", state]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert "expires 20" in listed[0] and listed[0].startswith("dora") and "never expires" in listed[1]
    for bad in ("0s", "soon", "-3d"):
        assert cli_main(["token", "add", "fay", "--role", "viewer", f"--expires={bad}", "--state", state]) != 0
        assert "--expires" in capsys.readouterr().err
    assert cli_main(["token", "list", "--state", state]) == 0
    assert "fay" not in capsys.readouterr().out


def test_a_token_made_with_scopes_keeps_only_those_and_its_making_audits_them(tmp_path):
    store = StateStore(f"sqlite:///{tmp_path / 'm.db'}")
    book = TokenBook(store)
    narrow = book.create("bot", "operator", by="ann", scopes=("plans:approve", "read", "plans:approve"))
    whole = book.create("olga", "operator", by="ann")
    assert book.verify(narrow).scopes == ("plans:approve", "read")
    assert book.verify(whole).scopes == ROLE_SCOPES["operator"]
    made = {r["target"]: r["details"] for r in store.audit(event="token-created")[0]}
    assert (made["bot"]["scopes"], made["bot"]["narrowed"]) == (["plans:approve", "read"], True)
    assert (made["olga"]["scopes"], made["olga"]["narrowed"]) == (list(ROLE_SCOPES["operator"]), False)


def test_a_scope_beyond_the_role_or_unknown_is_refused_and_nothing_is_made(tmp_path):
    store = StateStore(f"sqlite:///{tmp_path / 'm.db'}")
    book = TokenBook(store)
    with pytest.raises(TokenError, match="a viewer token cannot have scope hosts:drain: its role allows read"):
        book.create("vic", "viewer", scopes=("read", "hosts:drain"))
    with pytest.raises(TokenError, match="scope 'plans:delete' is not one of read, plans:approve"):
        book.create("vic", "operator", scopes=("plans:delete",))
    assert book.all() == [] and store.audit()[1] == 0


def test_a_token_made_before_scopes_has_its_roles_scopes(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    old = "INSERT INTO tokens (name, hash, role, vms, created) VALUES (:name, :name, :role, '[]', 1)"
    database_at(url, "0006", [(old, {"name": role, "role": role}) for role in ("operator", "viewer")])
    store = StateStore(url)
    assert {t.name: t.scopes for t in TokenBook(store).all()} == {
        "operator": ("read", "plans:approve", "hosts:drain", "hosts:fence", "slos:write", "runs:submit"),
        "viewer": ("read",),
    }


def test_the_cli_makes_a_scoped_token_lists_its_scopes_and_names_a_scope_it_refuses(tmp_path, capsys):
    state = f"sqlite:///{tmp_path / 'm.db'}"
    add = ["token", "add", "bot", "--role", "operator", "--scope", "plans:approve", "--state", state]
    assert cli_main(add) == 0
    assert cli_main(["token", "add", "olga", "--role", "operator", "--state", state]) == 0
    capsys.readouterr()
    assert cli_main(["token", "list", "--state", state]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("bot") and listed[0].endswith("scopes: plans:approve")
    assert listed[1].startswith("olga") and "scopes" not in listed[1]
    assert cli_main(["token", "add", "vic", "--role", "viewer", "--scope", "slos:write", "--state", state]) == 2
    assert "a viewer token cannot have scope slos:write" in capsys.readouterr().err
