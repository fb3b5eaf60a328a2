"""The ``sova`` command: run and validate scenarios, list policies.

Exit status: 0 success, 1 the run failed (its results could not be written, or a run raised: what finished is
kept, with error.txt) or, for `audit verify`, the audit trail's hash chain is broken, 2 bad input (scenario,
arguments, an output directory that cannot be used), 3 (validate) nothing wrong but absent public traces, 130
interrupted (Ctrl-C), 143 terminated (SIGTERM).
Errors are printed as one line per problem with its location; never a traceback for bad input. SIGTERM is
handled as Ctrl-C is: nothing half-written is left behind.
"""

from __future__ import annotations

import argparse
import signal
import sys

from sova import __version__
from sova.cli import (
    audit,
    bus,
    check,
    host,
    lab,
    manage,
    place,
    predict,
    run,
    serve,
    service,
    slo,
    snapshot,
    token,
    what_if,
)
from sova.cli.common import Terminated, described, err, error, print_problems
from sova.drivers.libvirt_driver import DriverError
from sova.experiments.parallel import ClusterError
from sova.lab.errors import LabError
from sova.model.schema import InputError
from sova.plan.placement.problem import PlacementError
from sova.report.result_dir import OutputError
from sova.sim.records import SimError
from sova.sim.traces import TraceError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sova",
        **described(
            "Sova: an autonomic resource manager for virtualized data centers, with a built-in data-center "
            "simulator. Runs MAPE-K policies (VF scheduling, live migration, placement, ...) against simulated "
            "or real hosts. `sova COMMAND --help` says more of each command.",
            [
                "sova validate scenarios/quickstart.toml",
                "sova run scenarios/quickstart.toml --out results/quickstart",
                "sova run scenarios/quickstart.toml --profile default --profile threshold --seed 3",
                "sova policies",
                "sova lab up --hosts 2 --vms-per-host 2        (root: a real libvirt lab on this machine)",
                "sova manage --lab /var/lib/sova-lab --profile sova",
                "sova slo set vm1 --throughput 400 600        (a running manage with --profile see)",
                "sova serve --sim scenarios/quickstart.toml  (the service: manager, agents, API, dashboard)",
                "sova lab down",
            ],
            "docs: docs/scenario-format.md (scenario files), docs/outputs.md (result files), "
            "docs/simulator.md (the model)",
        ),
    )
    p.add_argument("--version", action="version", version=f"sova {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run.add_parser(sub)
    check.add_parsers(sub)
    place.add_parser(sub)
    predict.add_parser(sub)
    lab.add_parser(sub)
    manage.add_parser(sub)
    slo.add_parser(sub)
    host.add_parser(sub)
    service.add_parsers(sub)
    token.add_parser(sub)
    audit.add_parser(sub)
    bus.add_parser(sub)
    serve.add_parser(sub)
    snapshot.add_parser(sub)
    what_if.add_parser(sub)
    return p


COMMANDS = {
    "validate": check.validate,
    "run": run.command,
    "policies": lambda args: check.policies(),
    "place": place.command,
    "predict": predict.command,
    "lab": lab.command,
    "manage": manage.command,
    "slo": slo.command,
    "host": host.command,
    "manager": service.manager_command,
    "agent": service.agent_command,
    "token": token.command,
    "audit": audit.command,
    "bus": bus.command,
    "serve": serve.command,
    "snapshot": snapshot.command,
    "what-if": what_if.command,
}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return COMMANDS[args.command](args)
    except InputError as exc:
        print_problems(exc.problems)
        return 2
    except (TraceError, SimError, LabError, DriverError, PlacementError, OutputError) as exc:
        error(str(exc))
        return 2
    except ClusterError as exc:
        error(f"{exc}; nothing was written")
        return 1
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        err.print(f"{'terminated' if signum == signal.SIGTERM else 'interrupted'}; nothing was written", markup=False)
        return 128 + signum
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame) -> None:
    """SIGTERM ends a command as Ctrl-C does: cleanly, with nothing half-written left behind."""
    raise Terminated(signum)


if __name__ == "__main__":
    sys.exit(main())
