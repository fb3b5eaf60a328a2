"""Host power states: a host with no VM can be put to sleep (ACPI S3) or switched off (S5), and is woken
on demand, paying the time and energy its wake-up costs.

A host asleep or off draws its ``sleep_power`` or ``off_power``; waking takes ``sleep_wake_time`` or
``off_wake_time``, during which it draws ``wake_power`` (by default its full-load power: a server booting
runs its fans and disks at full speed) and can run nothing. A migration to a host that is not on wakes it
and waits for it; a VM cannot be created on it until it is on. Going down is taken as instant: the host is
empty, and what it draws while suspending is a few seconds of idle power.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state: the engine asks it whether a host is on,
tells it when a host is to change state (having checked what only the engine knows: that the host is empty
and has not crashed), advances it once a step and asks what each host draws.
"""

from __future__ import annotations

import numpy as np

from sova.model.power_models import power_at
from sova.sim.records import SimError

ON, SLEEP, OFF, WAKING = 0, 1, 2, 3
STATE_NAMES = ("on", "sleep", "off", "waking")


class HostPower:
    """The hosts' power states and what they draw."""

    def __init__(self, hosts, curve: np.ndarray, follows_load: bool):
        """hosts: the scenario's host specs; curve: each host's watts at 0, 10, ..., 100 % load (hosts x 11);
        follows_load: False draws full power whenever a host is on (power_follows_load)."""
        n_hosts = len(hosts)
        self.names = [h.name for h in hosts]
        self.curve = curve
        self.follows_load = follows_load
        self.state = np.full(n_hosts, ON, dtype=np.int64)
        self.awake_at = np.zeros(n_hosts)  # while waking: when the host is on
        self.sleep_power = np.array([h.sleep_power for h in hosts], dtype=float)
        self.off_power = np.array([h.off_power for h in hosts], dtype=float)
        self.wake_time = np.array([[h.sleep_wake_time for h in hosts], [h.off_wake_time for h in hosts]])
        full = curve[:, -1]
        self.wake_power = np.array([h.wake_power or f for h, f in zip(hosts, full, strict=True)], dtype=float)
        self.wakes = np.zeros(n_hosts, dtype=np.int64)  # how often each host was woken
        self.shutdowns = np.zeros(n_hosts, dtype=np.int64)  # how often each went to sleep or off

    # ---------------------------------------------------------------- queries
    def state_name(self, host: int) -> str:
        return STATE_NAMES[self.state[host]]

    def state_names(self) -> tuple[str, ...]:
        return tuple(STATE_NAMES[state] for state in self.state)

    def is_on(self) -> np.ndarray:
        """Per host: on (not asleep, off or waking)."""
        return self.state == ON

    def require_on(self, host: int) -> None:
        if self.state[host] != ON:
            raise SimError(f"{self.names[host]} is {self.state_name(host)}; wake it first")

    def draw(self, util: np.ndarray, dt: float, now: float) -> np.ndarray:
        """Mean watts of each host over a step of dt from now: its curve (or full power when power does not
        follow load) while on, its sleep or off power, and wake power for the part of the step it wakes."""
        running = power_at(self.curve, util) if self.follows_load else self.curve[:, -1]
        power = np.where(self.state == SLEEP, self.sleep_power, np.where(self.state == OFF, self.off_power, running))
        waking = self.state == WAKING
        if waking.any():
            share = np.clip((self.awake_at[waking] - now) / dt, 0.0, 1.0)
            power[waking] = share * self.wake_power[waking] + (1 - share) * running[waking]
        return power

    def piece_watts(self, hosts: np.ndarray, util: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Watts of pieces of on hosts' steps (sim/step_moves.py): the curve (or full power) at `util` while
        the host holds a VM, its sleep power once empty (CloudSim counts nothing for a host at zero load)."""
        running = power_at(self.curve[hosts], util) if self.follows_load else self.curve[hosts, -1]
        return np.where(active, running, self.sleep_power[hosts])

    # ---------------------------------------------------------------- commands
    def set(self, host: int, state: str, now: float, empty: bool) -> None:
        """Put a host to sleep or off, or wake one; `empty`: it holds no VM and no migration under way."""
        name, current = self.names[host], self.state[host]
        if state == "on":
            if current in (SLEEP, OFF):
                self.wake(host, now)
            return
        target = {"sleep": SLEEP, "off": OFF}.get(state)
        if target is None:
            raise SimError(f"unknown power state {state!r}; expected on, sleep or off")
        if current == WAKING:
            raise SimError(f"{name} is waking up; it can go down once it is on")
        if not empty:
            raise SimError(f"{name} still has VMs (or a migration under way); only an empty host can go down")
        if current != target:
            self.state[host] = target
            self.shutdowns[host] += 1

    def wake(self, host: int, now: float) -> None:
        """Start waking a host that sleeps or is off."""
        wake = self.wake_time[0 if self.state[host] == SLEEP else 1, host]
        self.state[host] = WAKING
        self.awake_at[host] = now + wake
        self.wakes[host] += 1

    def wait_for(self, host: int, now: float) -> float:
        """Seconds until the host can take a migration: 0 when on, else the rest of its wake-up (begun now
        if it sleeps or is off)."""
        if self.state[host] in (SLEEP, OFF):
            self.wake(host, now)
        return max(self.awake_at[host] - now, 0.0) if self.state[host] == WAKING else 0.0

    def crash(self, host: int) -> None:
        """The host stopped: it draws its off power until it boots again."""
        self.state[host] = OFF

    def boot(self, host: int, now: float) -> float:
        """A recovered host boots (from off, without counting a wake-up); when it is on."""
        self.state[host] = WAKING
        self.awake_at[host] = now + self.wake_time[1, host]
        return float(self.awake_at[host])

    def advance(self, now: float) -> None:
        """Hosts whose wake-up is over are on."""
        woke = (self.state == WAKING) & (self.awake_at <= now + 1e-9)
        self.state[woke] = ON
