"""``sova token``: add, list and revoke the API's bearer tokens in a manager's state store
(service/tokens.py); each change is audited with who made it."""

from __future__ import annotations

from datetime import UTC, datetime

from sova.cli.common import described, out
from sova.cli.service import add_state_argument
from sova.model.schema import InputError, Problem
from sova.model.units import UnitError, duration


def add_parser(sub) -> None:
    t = sub.add_parser(
        "token",
        help="API tokens: add, list, revoke",
        **described(
            "Manage the API's bearer tokens in the manager's state store. A token's secret is printed once, "
            "when it is added; the store keeps only its hash. Roles: admin, operator (decides plans), viewer "
            "(reads), tenant (its own VMs' SLOs; name them with --vm). --scope narrows what a token may do to "
            "some of its role's scopes: read, plans:approve (approve, reject, cancel), hosts:drain (drain, "
            "release), hosts:fence (confirm a failed host is off), slos:write, runs:submit. A token expires after --expires (90 days unless told "
            "otherwise); making (with its scopes), revoking and expiry are in the audit trail with who did it.",
            [
                "sova token add alice --role operator",
                "sova token add grafana --role viewer --state postgresql+psycopg://sova@db/sova",
                "sova token add acme --role tenant --vm web1 --vm web2 --expires 30d",
                "sova token add approver --role operator --scope read --scope plans:approve",
                "sova token list",
                "sova token revoke alice",
            ],
        ),
    )
    t.add_argument("action", choices=["add", "list", "revoke"])
    t.add_argument("name", nargs="?", default=None, help="the token's name (add, revoke)")
    t.add_argument("--role", default=None, choices=["admin", "operator", "viewer", "tenant"])
    t.add_argument("--vm", action="append", default=[], metavar="VM", help="a tenant's VM (repeatable)")
    t.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="only this of the role's scopes (repeatable; default: all of them)",
    )
    t.add_argument(
        "--expires",
        default="90d",
        metavar="DURATION",
        help="how long the token lasts: '12h', '30d', or 'never' (default: 90d)",
    )
    add_state_argument(t)


def _lifetime(text: str) -> float | None:
    """--expires as seconds (None: never)."""
    if text == "never":
        return None
    try:
        seconds = duration(text)
    except UnitError as err:
        raise InputError([Problem("--expires", f"{err}, or 'never'")]) from None
    if not 0 < seconds < float("inf"):
        raise InputError([Problem("--expires", f"expected a positive duration, got {text!r}")])
    return seconds


def _utc(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M UTC")


def command(args) -> int:
    import getpass

    from sova.cli.service import open_store
    from sova.service.tokens import ROLE_SCOPES, TokenBook, TokenError

    store = open_store(args.state)
    book = TokenBook(store)
    try:
        if args.action == "list":
            for token in book.all():
                vms = f"  vms: {', '.join(token.vms)}" if token.vms else ""
                narrowed = token.scopes != ROLE_SCOPES[token.role]
                scopes = f"  scopes: {', '.join(token.scopes)}" if narrowed else ""
                until = "never expires" if token.expires is None else f"expires {_utc(token.expires)}"
                out.print(f"{token.name:20} {token.role:9} {until}{vms}{scopes}", markup=False, soft_wrap=True)
            return 0
        if args.name is None:
            raise InputError([Problem("name", f"`sova token {args.action}` needs the token's name")])
        if args.action == "revoke":
            book.revoke(args.name, by=getpass.getuser())
            out.print(f"revoked {args.name}", markup=False)
            return 0
        if args.role is None:
            raise InputError([Problem("--role", "expected admin, operator, viewer or tenant")])
        lifetime, scopes = _lifetime(args.expires), tuple(args.scope)
        secret = book.create(args.name, args.role, tuple(args.vm), lifetime, by=getpass.getuser(), scopes=scopes)
        out.print(secret, markup=False)
        return 0
    except TokenError as exc:
        raise InputError([Problem(f"sova token {args.action}", str(exc))]) from None
    finally:
        store.close()
