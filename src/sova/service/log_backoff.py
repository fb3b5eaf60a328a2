"""A daemon's log under a fault that repeats: a warning that comes again and again (a round failing every
200 ms while the bus is down) is written at doubling intervals, 1 s up to a minute, each time with how
many like it were left out; quiet for twice its interval, it starts over at once. And the log's format:
a line of text, or one JSON object per line for a log collector (``--log-format json``).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

FIRST, MOST = 1.0, 60.0  # s between two lines of the same warning: at first, at most


@dataclass
class _Repeats:
    """One warning's back-off: when it may be written next, the interval, how many were left out since the
    last line, and when it last came."""

    next_at: float
    interval: float
    left_out: int
    last: float


class RepeatBackoff(logging.Filter):
    """Lets a warning (or worse) through at doubling intervals per (logger, message template)."""

    def __init__(self, clock=time.monotonic):
        super().__init__()
        self.clock = clock
        self.repeats: dict[tuple[str, str], _Repeats] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        key = (record.name, str(record.msg))
        seen = self.repeats.get(key)
        if seen is None or now - seen.last > 2 * seen.interval:  # new, or quiet for a while: from the start
            self.repeats[key] = _Repeats(now + FIRST, FIRST, 0, now)
            return True
        seen.last = now
        if now < seen.next_at:
            seen.left_out += 1
            return False
        if seen.left_out:
            record.msg = f"{record.msg} (and {seen.left_out} more like it left out)"
        seen.interval = min(2 * seen.interval, MOST)
        seen.next_at, seen.left_out = now + seen.interval, 0
        return True


class JsonLines(logging.Formatter):
    """One JSON object per record: time (ISO 8601, UTC), level, logger, message."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def set_up(log_format: str = "text") -> None:
    """The root logger of a daemon: INFO and up to stderr in `log_format` ("text" or "json"), repeats
    backed off."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonLines())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(RepeatBackoff())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
