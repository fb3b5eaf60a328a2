"""``sova host list|drain|release|fenced``: the hosts of a running service, maintenance, and an operator's
confirmation that a failed host is off, through its REST API; or, with ``--socket``, those of a running
`sova manage`, through its control socket."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sova.cli.common import ask_manage, described, error, number, out, refusal

DEFAULT_URL = "http://127.0.0.1:8421"


def add_parser(sub) -> None:
    h = sub.add_parser(
        "host",
        help="list the service's hosts; drain one for maintenance, or release it; confirm a failed one is off",
        **described(
            "Through the manager's REST API (`sova manager` or `sova serve`): list the hosts with their load "
            "and whether they are in maintenance; drain a host (its VMs move away within the placement rules "
            "and capacity, VFs given back and asked for again on the destinations, and nothing is placed on "
            "it), or release it; confirm that a failed host is off (fenced) when its fence failed, so its VMs "
            "start elsewhere. The token is an operator's or admin's (`sova token add`). With --socket, the same "
            "for a running `sova manage` (its control socket; whoever may open it is its operator).",
            [
                "sova host list --token sova_...",
                "sova host drain hv3 --wait          (SOVA_API and SOVA_TOKEN from the environment)",
                "sova host release hv3 --api https://sova.example:8421 --token sova_...",
                "sova host fenced hv5          (hv5 failed; you made sure it is powered off)",
                "sova host drain node3 --wait --socket /run/user/0/sova-manage-0.sock      (a sova manage)",
            ],
        ),
    )
    verbs = h.add_subparsers(dest="verb", metavar="list|drain|release|fenced", required=True)
    for verb, text in (
        ("list", "the hosts, their load and maintenance"),
        ("drain", "put a host into maintenance: its VMs move away"),
        ("release", "end a host's maintenance"),
        ("fenced", "confirm that a failed host is off: its VMs start elsewhere"),
    ):
        v = verbs.add_parser(verb, help=text, description=text)
        if verb != "list":
            v.add_argument("host", metavar="HOST", help="the host's name, as its agent reports it")
        v.add_argument(
            "--api",
            default=os.environ.get("SOVA_API", DEFAULT_URL),
            metavar="URL",
            help="the manager's API (default: $SOVA_API, else %(default)s)",
        )
        v.add_argument("--token", default=os.environ.get("SOVA_TOKEN"), help="an API token (default: $SOVA_TOKEN)")
        v.add_argument(
            "--socket",
            type=Path,
            default=None,
            metavar="PATH",
            help="a running sova manage's control socket instead of the API (see its --control-socket)",
        )
        v.add_argument("--json", action="store_true", help="print the answer as JSON")
        if verb == "drain":
            v.add_argument("--wait", action="store_true", help="wait until the host holds no VM")
            v.add_argument(
                "--timeout",
                type=number("seconds > 0", lo=0, lo_open=True),
                default=600.0,
                help="with --wait: give up after this long (%(default)g s)",
            )


def command(args) -> int:
    import httpx

    if args.socket is not None:
        return _through_socket(args)
    if not args.token:
        error("no API token: give --token or set SOVA_TOKEN (an operator's token from `sova token add`)")
        return 2
    headers = {"Authorization": f"Bearer {args.token}"}
    try:
        with httpx.Client(base_url=args.api, headers=headers, timeout=30) as client:
            if args.verb == "list":
                return _list(client, args.json)
            answer = _call(client, "post", f"/api/v1/hosts/{args.host}/{args.verb}")
            if args.json and not getattr(args, "wait", False):
                out.print(json.dumps(answer, indent=2), markup=False)
            else:
                out.print(_said(answer), markup=False)
            if getattr(args, "wait", False):
                return _wait(client, args.host, args.timeout)
            return 0
    except _ApiError as exc:
        error(str(exc))
        return 2
    except httpx.HTTPError as exc:
        error(f"cannot reach the API at {args.api}: {exc}")
        return 2


def _said(answer: dict) -> str:
    """A drain's, release's or fence confirmation's answer in a line."""
    if answer.get("fenced"):
        return f"{answer['host']} fenced as {answer['by']} confirmed; its {answer['vms']} VM(s) start elsewhere"
    state = "in maintenance" if answer["maintenance"] else "released"
    return f"{answer['host']} {state} by {answer['by']}; {answer['vms']} VM(s) on it"


class _ApiError(RuntimeError):
    pass


def _call(client, method: str, path: str):
    response = getattr(client, method)(path)
    if response.status_code >= 400:
        raise _ApiError(refusal(response, method, path))
    return response.json()


def _list(client, as_json: bool) -> int:
    hosts = _call(client, "get", "/api/v1/hosts")
    if as_json:
        out.print(json.dumps(hosts, indent=2), markup=False)
        return 0
    from rich.table import Table

    table = Table("host", "VMs", "CPU", "VFs", "maintenance")
    for host in hosts:
        cpu = "" if host["cpu_utilization"] is None else f"{host['cpu_utilization']:.0%}"
        vfs = f"{host['vfs_used']}/{host['vfs_total']}"
        table.add_row(host["name"], str(host["vms"]), cpu, vfs, "yes" if host["maintenance"] else "")
    out.print(table)
    return 0


def _wait(client, host: str, timeout: float) -> int:
    return _wait_rows(lambda: _call(client, "get", "/api/v1/hosts"), host, timeout)


def _wait_rows(rows, host: str, timeout: float) -> int:
    """Poll the hosts (`rows()`) until `host` holds no VM; a line each time the count changes."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        row = next((h for h in rows() if h["name"] == host), None)
        if row is None:
            error(f"{host} no longer reports")
            return 2
        if row["vms"] != last:
            last = row["vms"]
            out.print(f"{host}: {last} VM(s) left", markup=False)
        if last == 0:
            return 0
        if time.monotonic() > deadline:
            error(f"{host} still holds {last} VM(s) after {timeout:g} s; see the audit log for what stops them")
            return 1
        time.sleep(1.0)


def _through_socket(args) -> int:
    """The same verbs against a running `sova manage`'s control socket."""
    from sova.control.slo_service import ask

    request = {"op": "hosts"} if args.verb == "list" else {"op": args.verb, "host": args.host}
    answer = ask_manage(args.socket, request, args.json)
    if answer is None:
        return 2
    if not args.json and args.verb == "list":
        for row in answer["hosts"]:
            flag = "  maintenance" if row["maintenance"] else ""
            out.print(f"{row['name']:20} {row['vms']:4d} VM(s){flag}", markup=False)
    elif not args.json:
        out.print(_said(answer), markup=False)
    if not getattr(args, "wait", False):
        return 0

    def rows():
        reply = ask(args.socket, {"op": "hosts"})
        if not reply.get("ok"):
            raise _ApiError(reply.get("error", "refused"))
        return reply["hosts"]

    try:
        return _wait_rows(rows, args.host, args.timeout)
    except _ApiError as exc:
        error(str(exc))
        return 2
