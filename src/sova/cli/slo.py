"""``sova slo set|get VM``: the storage tenant API (SASLO's Table 1) of a running `sova manage`."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from sova.cli.common import ask_manage, described, error, number, out, take_negative_values

# storage_slo.RANGES as `sova slo set` takes them
FLAGS = {"throughput": "--throughput", "io_size": "--io-size", "sc_rate": "--sc", "pf_ratio": "--pf"}


def _unit(parse):
    """An argparse type from one of model/units' parsers: a bad value is a usage error with its message."""

    def typed(text: str) -> float:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    typed.__name__ = parse.__name__
    return typed


def _latency(text: str) -> float:
    """--latency's type: a duration above 0; a negative one is named as such, not as a malformed duration."""
    from sova.model import units

    try:
        seconds = units.duration(text)
    except ValueError:  # units take no sign: "-20ms" is a negative latency, anything else malformed
        seconds = -1.0 if text.strip().startswith("-") else math.nan
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"a latency target must be above 0, like 20ms; got {text!r}")
    if not math.isfinite(seconds):
        raise argparse.ArgumentTypeError(f"expected a latency target like 20ms or 0.02 (seconds); got {text!r}")
    return seconds


def add_parser(sub) -> None:
    from sova.control.slo_service import default_socket
    from sova.model import units

    s = sub.add_parser(
        "slo",
        help="set or read a VM's storage SLO in a running `sova manage`",
        **described(
            "The storage tenant API (the SASLO paper's Table 1) of a running `sova manage` with an IO controller "
            "(profile see): set a VM's throughput target range, IO size limit range, the SC rate and PF ratio "
            "its tenant accepts, and a latency target; or read them with the SC rate and PF ratio last measured. "
            "A set is checked whole: one bad value and nothing changes.",
            [
                "sova slo set web1 --throughput 400 600 --sc 80 90 --pf 8 15",
                "sova slo set web1 --io-size 12KiB 32KiB --latency 20ms",
                "sova slo get web1",
                "sova slo get web1 --json --socket /run/sova/manage.sock",
            ],
        ),
    )
    verbs = s.add_subparsers(dest="verb", metavar="set|get", required=True)
    for verb in ("set", "get"):
        v = verbs.add_parser(verb, help=f"{verb} a VM's storage SLO")
        v.add_argument("vm", metavar="VM", help="the VM's name, as libvirt knows it")
        v.add_argument(
            "--socket",
            type=Path,
            default=default_socket(),
            help=f"where sova manage listens (default {default_socket()})",
        )
        v.add_argument("--json", action="store_true", help="print the answer as JSON")
        if verb == "get":
            continue
        take_negative_values(v)  # a negative latency or bound is refused by its type, not read as an option
        iops = number("a number of IOPS >= 0", lo=0)
        percent = number("a percentage (0-100)", lo=0, hi=100)
        v.add_argument("--throughput", nargs=2, type=iops, metavar=("LOW", "HIGH"), help="IOPS target range")
        v.add_argument(
            "--io-size",
            nargs=2,
            type=_unit(units.size_bytes),
            metavar=("LOW", "HIGH"),
            help="IO size limit range, e.g. 12KiB",
        )
        v.add_argument("--sc", nargs=2, type=percent, metavar=("LOW", "HIGH"), help="SC rate range, per cent")
        v.add_argument("--pf", nargs=2, type=percent, metavar=("LOW", "HIGH"), help="PF ratio range, per cent")
        v.add_argument("--latency", type=_latency, metavar="TIME", help="mean latency target, e.g. 20ms")


def command(args) -> int:
    request: dict = {"op": args.verb, "vm": args.vm}
    if args.verb == "set":
        given = {"throughput": args.throughput, "io_size": args.io_size, "sc_rate": args.sc, "pf_ratio": args.pf}
        request.update({k: list(v) for k, v in given.items() if v is not None})
        if args.latency is not None:
            request["latency"] = args.latency
        if len(request) == 2:
            error("nothing to set: give --throughput, --io-size, --sc, --pf or --latency")
            return 2
        problem = _local_problem(args.vm, request)
        if problem:
            error(problem)
            return 2
    answer = ask_manage(args.socket, request, args.json)
    if answer is None:
        return 2
    if not args.json:
        _show(answer)
    return 0


def _local_problem(vm: str, request: dict) -> str:
    """What manage would refuse in a set, found before it is sent (as the storage SLO model checks it), with
    the option it came from; "" when there is nothing."""
    from sova.model.storage_slo import SloError, checked_range

    for key, flag in FLAGS.items():
        if key in request:
            try:
                checked_range(vm, key, *request[key])
            except SloError as exc:
                return f"{flag}: {exc}"
    return ""


def _show(answer: dict) -> None:
    slo, status = answer["slo"], answer["status"]

    def span(key: str, unit: str = "", scale: float = 1.0) -> str:
        value = slo.get(key)
        if value is None:
            return "not set"
        return f"{value[0] * scale:g}-{value[1] * scale:g}{unit}"

    out.print(f"{answer['vm']}:", markup=False)
    if slo.get("throughput") is None:
        out.print("  not under SLO control until it has a throughput range (--throughput)", markup=False)
    out.print(f"  throughput   {span('throughput', ' IOPS')}", markup=False)
    out.print(f"  IO size      {span('io_size', ' KiB', 1 / 1024)}", markup=False)
    out.print(f"  SC rate      {span('sc_rate', ' %')}", markup=False)
    out.print(f"  PF ratio     {span('pf_ratio', ' %')}", markup=False)
    latency = slo.get("latency")
    out.print(f"  latency      {'not set' if latency is None else f'{latency * 1e3:g} ms'}", markup=False)
    measured = status.get("sc_rate")
    if measured is None:
        out.print("  measured     nothing yet", markup=False)
    else:
        out.print(f"  measured     SC {measured:.1f} %, PF {status['pf_ratio']:.1f} % (last interval)", markup=False)
