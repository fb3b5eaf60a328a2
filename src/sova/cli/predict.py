"""``sova predict``: each VM's predicted slowdown from co-located VMs (CloudScope), and where one VM would
be slowed down least."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from sova.cli.common import add_window_argument, described, error, number, out, window_within


def add_parser(sub) -> None:
    pr = sub.add_parser(
        "predict",
        help="predicted slowdown of each VM from its neighbours (CloudScope), and what if a VM moved",
        **described(
            "Run SCENARIO for --window simulated seconds with no policy, learn each VM's loading vector (its "
            "share of time on CPU, disk and network) and each host's load from what the hosts report, and "
            "print each VM's V-slowdown (1.00: as fast as alone), slowest first. With --vm, also the slowdown "
            "that VM would have on each host. A sweep file runs one of its values (--value; default the first).",
            [
                "sova predict scenarios/quickstart.toml",
                "sova predict scenarios/quickstart.toml --vm web1 --top 5",
                "sova predict scenarios/papers/cloudscope/fig6-mixed.toml --value 11",
            ],
            "docs/policies.md (CloudScope) gives the model's equations.",
        ),
    )
    pr.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file")
    add_window_argument(pr)
    pr.add_argument("--vm", metavar="NAME", help="also show this VM's slowdown on every host")
    pr.add_argument("--value", metavar="V", help="a sweep file: the swept value to run (default: the first)")
    pr.add_argument(
        "--top",
        type=number("a whole number >= 1", lo=1, integer=True),
        default=20,
        metavar="N",
        help="rows to print (default 20)",
    )


def command(args) -> int:
    from sova.cli.run import load
    from sova.experiments.predict import predict

    sweep, runs = load(args.scenario)
    k = 0
    if sweep is not None:
        values = [str(v) for v in sweep.values]
        if args.value is not None and args.value not in values:
            error(f"--value: {args.value!r} is not one of the sweep's values of {sweep.key}: {', '.join(values)}")
            return 2
        k = values.index(args.value) if args.value is not None else 0
        out.print(f"{args.scenario.name} is a sweep: this is its run with {sweep.describe(k)}", markup=False)
    elif args.value is not None:
        error(f"--value: {args.scenario.name} has no [sweep] to take a value of")
        return 2
    window_within(args.window, runs[k], args.scenario)
    p = predict(runs[k], args.window, args.vm)
    top = int(args.top)
    table = Table(title=f"predicted slowdown on {args.scenario.name} (measured {args.window:g} s)")
    for name, justify in (("VM", "left"), ("host", "left"), ("slowdown", "right"), ("cpu/disk/net time", "right")):
        table.add_column(name, justify=justify)
    for j in p.slowdown.argsort(kind="stable")[::-1][:top]:
        b = p.loading[j]
        table.add_row(p.vms[j], p.hosts[p.vm_host[j]], f"{p.slowdown[j]:.2f}", f"{b[0]:.0%}/{b[1]:.0%}/{b[2]:.0%}")
    out.print(table)
    if p.what_if is not None:
        here = p.hosts[p.vm_host[p.vms.index(args.vm)]]
        table = Table(title=f"{args.vm} on each host (now on {here})")
        table.add_column("host")
        table.add_column("slowdown", justify="right")
        for k in p.what_if.argsort(kind="stable")[:top]:
            table.add_row(p.hosts[k] + (" (now)" if p.hosts[k] == here else ""), f"{p.what_if[k]:.2f}")
        out.print(table)
    return 0
