"""``sova bus config``: the bus's users for a real cluster, one per host's agent and one for the managers,
each allowed only its subjects (service/bus_users.py), as an ``authorization`` block for nats-server and
a password file for each user."""

from __future__ import annotations

from pathlib import Path

from sova.cli.common import described, out
from sova.model.schema import InputError, Problem


def add_parser(sub) -> None:
    b = sub.add_parser(
        "bus",
        help="the bus's per-agent users and their permissions, for nats-server",
        **described(
            "Write the bus's users for a real cluster into --dir: one per host's agent (agent-HOST), allowed to "
            "publish only its own host's report, SLO status, outcomes and local audit entries and to read only "
            "its own host's actions, and one for the managers (--manager-user). Each user's password goes in "
            "DIR/USER.password and the users in DIR/authorization.conf, for nats-server's configuration to "
            "include; every file owner-only. A password file there already is kept, so adding a host changes "
            "no other's password.",
            [
                "sova bus config --hosts node1,node2,node3 --dir /etc/nats/sova",
                "sova agent --host node1 --nats-user agent-node1 --nats-password-file /etc/sova/agent-node1.password",
            ],
            "docs/service.md: per-agent credentials",
        ),
    )
    b.add_argument("action", choices=["config"])
    b.add_argument("--hosts", required=True, metavar="H1,H2,...", help="the hosts whose agents get a user")
    b.add_argument("--dir", type=Path, required=True, metavar="DIR", help="where the files go")
    b.add_argument("--manager-user", default="manager", metavar="NAME", help="the managers' user (default manager)")


def command(args) -> int:
    from sova.service.bus import BusError
    from sova.service.bus_users import write_config

    hosts = [host.strip() for host in args.hosts.split(",")]
    if not all(hosts):
        raise InputError([Problem(f"--hosts {args.hosts}", "expected host names separated by commas, e.g. n1,n2")])
    try:
        config = write_config(args.dir, hosts, args.manager_user)
    except BusError as exc:
        raise InputError([Problem("sova bus config", str(exc))]) from None
    except OSError as exc:
        raise InputError([Problem(f"--dir {args.dir}", f"cannot write there: {exc.strerror or exc}")]) from None
    files = config.password_files
    out.print(f"wrote {config.authorization} ({len(files)} users) and a password file for each:", markup=False)
    out.print(
        "  include it in nats-server's configuration by a path relative to that file, e.g. "
        f"include ./{config.authorization.parent.name}/{config.authorization.name}",
        markup=False,
        soft_wrap=True,
    )
    bus = "--nats nats://BUS:4222 --nats-user"
    manager = args.manager_user
    out.print(f"  sova manager {bus} {manager} --nats-password-file {files[manager]}", markup=False, soft_wrap=True)
    for host, user in config.agent_users.items():
        line = f"  sova agent --host {host} {bus} {user} --nats-password-file {files[user]}"
        out.print(line, markup=False, soft_wrap=True)
    return 0
