"""What every action is: plain data with the reason it was chosen, a kind name, and what it claims.

An action kind is a frozen dataclass subclassing ``Action`` with its name given in the class statement
(``class Migrate(Action, kind="migrate")``), which registers it (``ACTION_KINDS``: the names the audit log
and the service's wire use). Besides its data, a kind says, for the framework that handles every kind alike:
- ``placed_on``: the host it puts a VM on, if any (placement rules, the destination's silence, conflicts);
- ``host_marks()``: what it does to a host, by which it excludes other actions there (the arbiter);
- ``vm_host_acts``: whether it acts on its VM's current host (a restart's VM is on a failed host: it does not);
- ``moves_vm``: whether it moves a running VM away from its host (what a policy's ``pinned`` forbids);
- ``holds_vm``: whether it excludes every other policy's action on its VM (the arbiter);
- ``sets_io``: whether it sets its VM's IO limits, which an IO controller holds (the arbiter);
- ``acts_on_silent_host``: whether it is meant for a host that stopped reporting (a fence), which the
  executor's rails otherwise keep every action off.
How a driver carries a kind out is that driver's handler for it (``sova.drivers.sim_actions``,
``sova.drivers.libvirt_actions``); the executor's rails for kinds that need more than the common ones are
``sova.control.action_rails``; each of those is a ``KindTable``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, TypeVar

ACTION_KINDS: dict[str, type[Action]] = {}  # kind name -> class, for the audit log and the wire


@dataclass(frozen=True)
class Action:
    """Base of all actions: the VM or host it targets and why it was chosen."""

    reason: str = field(default="", kw_only=True)
    policy: str = field(default="", kw_only=True)

    kind: ClassVar[str] = ""
    vm_host_acts: ClassVar[bool] = True  # it acts on the host its VM runs on now
    moves_vm: ClassVar[bool] = False  # it moves a running VM to another host
    holds_vm: ClassVar[bool] = True  # no other policy's action on its VM may run beside it
    sets_io: ClassVar[bool] = False  # it sets its VM's IO rate or merge limit
    acts_on_silent_host: ClassVar[bool] = False  # meant for a host that stopped reporting (a fence)

    def __init_subclass__(cls, kind: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind:
            if kind in ACTION_KINDS:
                raise ValueError(
                    f"action kind {kind!r} is defined twice ({ACTION_KINDS[kind].__name__}, {cls.__name__})"
                )
            cls.kind = kind
            ACTION_KINDS[kind] = cls

    @property
    def target(self) -> str:
        return getattr(self, "vm", "") or getattr(self, "host", "")

    @property
    def placed_on(self) -> str | None:
        """The host this action puts its VM on (a migration's destination, where a VM is created or booted)."""
        return None

    def host_marks(self) -> tuple[tuple[str, str], ...]:
        """What it does to hosts, as (mark, host): "into" (a VM comes), "sleep", "wake", "dom0" (its weight)."""
        return (("into", self.placed_on),) if self.placed_on else ()

    def describe(self) -> str:
        return self._description

    @functools.cached_property
    def _description(self) -> str:
        """Its kind and fields as the audit log shows them; made once (an action is audited when proposed
        and again when applied, and it is frozen)."""
        args = ((k, getattr(self, k)) for k in _described_fields(type(self)))
        text = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in args)
        return f"{self.kind} {text}"


# Outcome statuses
OK, RUNNING, FAILED, REJECTED, TIMEOUT, CANCELLED, PENDING, DRY_RUN, EXPIRED = (
    "ok",
    "running",
    "failed",
    "rejected",
    "timeout",
    "cancelled",
    "pending-approval",
    "dry-run",
    "expired",
)


@dataclass(frozen=True)
class Outcome:
    """What came of an action: a status from the list above and a message saying why."""

    status: str
    message: str = ""
    started: float = 0.0
    finished: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


Entry = TypeVar("Entry")


class KindTable(Generic[Entry]):
    """One object per action kind, registered for the kind's class (a driver's handler, a kind's rails),
    and the fallback for a kind without one: how the parts that treat kinds differently find theirs."""

    def __init__(self, fallback: Entry):
        self.fallback = fallback
        self._by_kind: dict[type[Action], Entry] = {}

    def register(self, kind: type[Action]):
        """Class decorator: an instance of the class is the entry of actions of `kind`."""

        def add(cls):
            self._by_kind[kind] = cls()
            return cls

        return add

    def of(self, action: Action) -> Entry:
        """The entry of the action's kind, or the fallback."""
        return self._by_kind.get(type(action), self.fallback)


@functools.cache
def _described_fields(cls: type) -> tuple[str, ...]:
    """The fields an action's one-line description shows (all but its reason and policy), per class."""
    return tuple(f.name for f in fields(cls) if f.name not in ("reason", "policy"))
