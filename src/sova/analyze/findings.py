"""Findings: what the Analyze stage concludes from the Knowledge, as data that plans, the audit log and
the report show.

A finding is a frozen dataclass of one kind, about a host (``host``) or one VM (``vm``, and the ``host``
it runs on). A kind registers itself by subclassing ``Finding`` with its name
(``class Hotspot(Finding, kind="hotspot")``); ``Findings``, the findings of one policy run, holds a tuple
per kind and needs no change for a new kind. A finding is *notable* when it reports a condition rather
than its absence (a hot host, not a cool one); every VM finding is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, ClassVar, TypeVar

from sova.model.actions import Action
from sova.model.snapshot import Snapshot

_KINDS: dict[str, type[Finding]] = {}


class Finding(ABC):
    """Base of every kind of finding (each a frozen dataclass with at least a ``host`` field)."""

    kind: ClassVar[str] = ""
    host: str

    def __init_subclass__(cls, kind: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind in _KINDS:
            raise ValueError(f"finding kind {kind!r} is already {_KINDS[kind].__name__}")
        cls.kind = kind
        _KINDS[kind] = cls

    @property
    def notable(self) -> bool:
        return True

    @abstractmethod
    def describe(self) -> str:
        """One line for people: what was found, with its evidence."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def vm_of(finding: Finding) -> str | None:
    """The VM a finding is about (None: it is about its host)."""
    return getattr(finding, "vm", None)


class HostColumns(Sequence[Finding]):
    """The findings of one kind about every host, held as a list per field: made into finding objects only
    when one is read. An analyzer that judges each host every round (``overload``: 800 hosts, 288 rounds
    a day) need not build objects that nobody reads; a policy reads the columns it needs."""

    def __init__(self, kind: type[Finding], columns: Mapping[str, list]):
        self.kind = kind.kind
        self.kind_type = kind
        self.columns = dict(columns)
        self.hosts: list[str] = self.columns["host"]

    def __len__(self) -> int:
        return len(self.hosts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[row] for row in range(*index.indices(len(self))))
        return self.kind_type(**{name: values[index] for name, values in self.columns.items()})

    def __eq__(self, other: object) -> bool:  # equal to the same findings held any other way
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def column(self, name: str) -> list:
        return self.columns[name]

    @cached_property
    def _row(self) -> dict[str, int]:
        return {host: row for row, host in enumerate(self.hosts)}

    def about(self, host: str) -> tuple[Finding, ...]:
        """The finding about `host`, if any (one at most: a finding per host)."""
        row = self._row.get(host)
        return () if row is None else (self[row],)


@dataclass(frozen=True)
class Hotspot(Finding, kind="hotspot"):
    """Whether a host is hot by a k-of-n rule over its last n reports, with the evidence."""

    host: str
    hot: bool
    resource: str  # the resource the rule judged: cpu, nic or mem
    load: float  # its utilisation in the last report
    above: int  # reports above the threshold, of the last n that count
    k: int
    n: int
    threshold: float
    forecast: float | None  # AR(1) forecast of the next report's load (None: the rule has no forecast)
    cpu: float  # the last report's utilisation of each resource
    nic: float
    mem: float

    @property
    def notable(self) -> bool:
        return self.hot

    def describe(self) -> str:
        forecast = "" if self.forecast is None else f", forecast {self.forecast:.0%}"
        return (
            f"{self.host} {'hot' if self.hot else 'not hot'}: {self.resource} {self.load:.0%}, above "
            f"{self.threshold:.0%} in {self.above} of the last {self.n} reports (needs {self.k}){forecast}"
        )


# The classes the Sova and SR-IOV papers sort VMs into: I/O-intensive or not (by IF or io_degree); the
# I/O-intensive ones with network traffic compete for the host's VFs, ranked by their network score (NF or
# net_degree). The others stay on their vNIC: disk-I/O-intensive or idle VMs, and CPU-intensive ones.
INTENSITY_CATEGORIES = {
    "network": "I/O-intensive with network traffic",
    "io": "I/O-intensive without network traffic",
    "cpu": "not I/O-intensive",
}


@dataclass(frozen=True)
class IntensityClass(Finding, kind="intensity"):
    """The intensity class of a VM that may hold a VF, with the scores it was judged by."""

    vm: str
    host: str
    category: str  # a key of INTENSITY_CATEGORIES
    measures: str  # "IF/NF" (Sova) or "io_degree/net_degree" (SR-IOV)
    io: float
    net: float
    demand: float  # bit/s sent + received, mean over the window
    peak: float  # bit/s in the busiest sample of the window

    def describe(self) -> str:
        io_name, net_name = self.measures.split("/")
        return (
            f"{self.vm} on {self.host}: {INTENSITY_CATEGORIES[self.category]} ({io_name} {self.io:.3g}, "
            f"{net_name} {self.net:.3g}, {self.demand / 1e9:.2f} Gb/s)"
        )


def per_host(found: Sequence[Finding], hosts: Sequence[str], name: str) -> list:
    """Field `name` of the finding about each of `hosts`, in their order (read from the column itself when
    `found` is a HostColumns of those hosts in that order)."""
    if isinstance(found, HostColumns) and found.hosts == list(hosts):
        return found.column(name)
    by_host = {f.host: f for f in found}
    return [getattr(by_host[host], name) for host in hosts]


F = TypeVar("F", bound=Finding)


@dataclass(frozen=True)
class Findings:
    """The findings one policy run plans from, a tuple per kind (kinds in the order they were defined)."""

    time: float
    by_kind: dict[str, Sequence[Finding]] = field(default_factory=dict)  # a tuple or a HostColumns

    @classmethod
    def collect(cls, time: float, found: Iterable[Finding | HostColumns]) -> Findings:
        """Grouped by kind; a HostColumns stays as it is when no other finding is of its kind."""
        groups: dict[str, list[Finding | HostColumns]] = {}
        for f in found:
            groups.setdefault(f.kind, []).append(f)
        return cls(time, {kind: _joined(groups[kind]) for kind in _KINDS if kind in groups})

    def of(self, kind: type[F]) -> Sequence[F]:
        return self.by_kind.get(kind.kind, ())  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Finding]:
        for found in self.by_kind.values():
            yield from found

    def __len__(self) -> int:
        return sum(len(found) for found in self.by_kind.values())

    def _objects(self) -> Iterator[Finding]:
        """The findings held as objects (not in HostColumns)."""
        for found in self.by_kind.values():
            if not isinstance(found, HostColumns):
                yield from found

    @cached_property
    def _by_host(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {}
        for f in self._objects():
            out.setdefault(f.host, []).append(f)
        return out

    @cached_property
    def _by_vm(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {}
        for f in self._objects():  # HostColumns are about hosts alone
            vm = vm_of(f)
            if vm is not None:
                out.setdefault(vm, []).append(f)
        return out

    def for_host(self, host: str) -> tuple[Finding, ...]:
        """The findings about the host and about the VMs on it, kinds in order."""
        out: list[Finding] = []
        objects = self._by_host.get(host, ())
        for kind, found in self.by_kind.items():
            out += found.about(host) if isinstance(found, HostColumns) else [f for f in objects if f.kind == kind]
        return tuple(out)

    def for_vm(self, vm: str) -> tuple[Finding, ...]:
        return tuple(self._by_vm.get(vm, ()))

    def behind(self, actions: Sequence[Action], snapshot: Snapshot) -> tuple[Finding, ...]:
        """The findings a plan of `actions` rests on: those about a VM it acts on, and the notable ones
        about a host it acts on or that such a VM runs on (its host being hot, not a cool host's load)."""
        vms = {a.vm for a in actions if hasattr(a, "vm")}
        hosts = {a.host for a in actions if hasattr(a, "host")}
        hosts |= {snapshot.hosts[snapshot.vm_host[snapshot.vm_position[v]]] for v in vms if v in snapshot.vm_position}
        about_vms = [f for vm in sorted(vms) for f in self.for_vm(vm)]
        about_hosts = [f for h in sorted(hosts) for f in self.for_host(h) if vm_of(f) is None and f.notable]
        return tuple(about_hosts + about_vms)

    def describe(self) -> str:
        if not len(self):
            return f"no findings at {self.time:g} s"
        counts = ", ".join(f"{len(found)} {kind}" for kind, found in self.by_kind.items())
        return "\n".join([f"findings at {self.time:g} s: {counts}", *(f"  {f.describe()}" for f in self)])

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, **{kind: [f.to_dict() for f in found] for kind, found in self.by_kind.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Findings:
        unknown = set(data) - {"time"} - set(_KINDS)
        if unknown:
            raise ValueError(f"unknown finding kind(s) {', '.join(sorted(unknown))}; known: {', '.join(_KINDS)}")
        return cls.collect(data["time"], (_KINDS[kind](**f) for kind in _KINDS for f in data.get(kind, ())))


def _joined(parts: list[Finding | HostColumns]) -> Sequence[Finding]:
    """One kind's findings: a HostColumns alone as it is, anything else as one tuple."""
    if len(parts) == 1 and isinstance(parts[0], HostColumns):
        return parts[0]
    out: list[Finding] = []
    for part in parts:
        out += part if isinstance(part, HostColumns) else [part]
    return tuple(out)
