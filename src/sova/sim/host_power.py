"""Host power states: a host with no VM can be put to sleep (ACPI S3) or switched off (S5), and is woken
on demand, paying the time and energy its wake-up costs.

A host asleep or off draws its ``sleep_power`` or ``off_power``; waking takes ``sleep_wake_time`` or
``off_wake_time``, during which it draws ``wake_power`` (by default its full-load power: a server booting
runs its fans and disks at full speed) and can run nothing. A migration to a host that is not on wakes it
and waits for it; a VM cannot be created on it until it is on. Going down is taken as instant: the host is
empty, and what it draws while suspending is a few seconds of idle power.

A part of ``Simulator`` (sim/engine.py).
"""

from __future__ import annotations

import numpy as np

from sova.model.power_models import power_at
from sova.sim.records import SimError

ON, SLEEP, OFF, WAKING = 0, 1, 2, 3
STATE_NAMES = ("on", "sleep", "off", "waking")


class HostPower:
    """The hosts' power states and what they draw."""

    def _init_host_power(self, hosts) -> None:
        self.host_state = np.full(self.n_hosts, ON, dtype=np.int64)
        self.host_awake_at = np.zeros(self.n_hosts)  # while waking: when the host is on
        self.sleep_power = np.array([h.sleep_power for h in hosts], dtype=float)
        self.off_power = np.array([h.off_power for h in hosts], dtype=float)
        self.wake_time = np.array([[h.sleep_wake_time for h in hosts], [h.off_wake_time for h in hosts]])
        full = self.power_curve[:, -1]
        self.wake_power = np.array([h.wake_power or f for h, f in zip(hosts, full, strict=True)], dtype=float)
        self.host_wakes = np.zeros(self.n_hosts, dtype=np.int64)  # how often each host was woken
        self.host_shutdowns = np.zeros(self.n_hosts, dtype=np.int64)  # how often each went to sleep or off
        self.host_migrations = np.zeros(self.n_hosts, dtype=np.int64)  # migrations from or to each, under way

    def host_power_state(self, host: int) -> str:
        return STATE_NAMES[self.host_state[host]]

    def set_host_power(self, host: int, state: str) -> None:
        """Put an empty host to sleep or off, or wake one; refuses a host with VMs or migrations."""
        name = self.host_names[host]
        current = self.host_state[host]
        if self.host_failed[host]:
            raise SimError(f"{name} has crashed; it comes back when it is repaired")
        if state == "on":
            if current in (SLEEP, OFF):
                self._wake(host)
            return
        target = {"sleep": SLEEP, "off": OFF}.get(state)
        if target is None:
            raise SimError(f"unknown power state {state!r}; expected on, sleep or off")
        if current == WAKING:
            raise SimError(f"{name} is waking up; it can go down once it is on")
        if self.host_migrations[host] or ((self.vm_host == host) & self.vm_present).any():
            raise SimError(f"{name} still has VMs (or a migration under way); only an empty host can go down")
        if current != target:
            self.host_state[host] = target
            self.host_shutdowns[host] += 1

    def require_host_on(self, host: int) -> None:
        if self.host_state[host] != ON:
            raise SimError(f"{self.host_names[host]} is {self.host_power_state(host)}; wake it first")

    def wake_for_migration(self, host: int) -> float:
        """Seconds until the host can take a migration: 0 when on, else the rest of its wake-up (begun now)."""
        if self.host_state[host] in (SLEEP, OFF) and not self.host_failed[host]:
            self._wake(host)
        return max(self.host_awake_at[host] - self.t, 0.0) if self.host_state[host] == WAKING else 0.0

    def _wake(self, host: int) -> None:
        wake = self.wake_time[0 if self.host_state[host] == SLEEP else 1, host]
        self.host_state[host] = WAKING
        self.host_awake_at[host] = self.t + wake
        self.host_wakes[host] += 1

    def _advance_host_power(self, t: float) -> None:
        """Hosts whose wake-up is over are on."""
        woke = (self.host_state == WAKING) & (self.host_awake_at <= t + 1e-9)
        self.host_state[woke] = ON

    def _host_power(self, util: np.ndarray, dt: float) -> np.ndarray:
        """Mean watts of each host over a step of dt from now: its curve (or full power when power does not
        follow load) while on, its sleep or off power, and wake power for the part of the step it wakes."""
        running = power_at(self.power_curve, util) if self.params["power_follows_load"] else self.power_curve[:, -1]
        power = np.where(
            self.host_state == SLEEP, self.sleep_power, np.where(self.host_state == OFF, self.off_power, running)
        )
        waking = self.host_state == WAKING
        if waking.any():
            share = np.clip((self.host_awake_at[waking] - self.t) / dt, 0.0, 1.0)
            power[waking] = share * self.wake_power[waking] + (1 - share) * running[waking]
        return power
