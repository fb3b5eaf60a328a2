"""Long names (hosts, VMs, services, profiles) cut to a width for plots, pages and the terminal.

Names are cut in the middle, keeping their start and end, since generated names differ at the end
("rack-12-host-07"); the page shows the whole name in a tooltip.
"""

from __future__ import annotations

NAME_WIDTH = 18


def truncate(name: str, width: int = NAME_WIDTH) -> str:
    """`name` cut to `width` characters around an ellipsis, keeping its start and its distinguishing end."""
    if len(name) <= width:
        return name
    tail = (width - 1) // 2
    return name[: width - 1 - tail] + "…" + name[len(name) - tail :]


def natural_key(name: str) -> tuple[int, str]:
    """Sort key that puts vm2 before vm10 (shorter first, then alphabetical), as the simulator numbers VMs."""
    return (len(name), name)


def join_words(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def profile_list(profiles: list[str]) -> str:
    """The profiles a plot shows, for its title: "default and threshold"."""
    return join_words([truncate(p, 24) for p in profiles])
