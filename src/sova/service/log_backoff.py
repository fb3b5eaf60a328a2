"""A daemon's log under a fault that repeats: a warning that comes again and again (a round failing every
200 ms while the bus is down) is written at doubling intervals, 1 s up to a minute, each time with how
many like it were left out; quiet for twice its interval, it starts over at once. And the log's format:
a line of text, or one JSON object per line for a log collector (``--log-format json``).
"""

from __future__ import annotations

import json
import logging
import time

FIRST, MOST = 1.0, 60.0  # s between two lines of the same warning: at first, at most


class RepeatBackoff(logging.Filter):
    """Lets a warning (or worse) through at doubling intervals per (logger, message template)."""

    def __init__(self, clock=time.monotonic):
        super().__init__()
        self.clock = clock
        self.state: dict[tuple[str, str], list[float]] = {}  # key -> [next allowed, interval, left out, last]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        key = (record.name, str(record.msg))
        state = self.state.get(key)
        if state is None or now - state[3] > 2 * state[1]:  # new, or quiet for a while: from the start
            self.state[key] = [now + FIRST, FIRST, 0, now]
            return True
        state[3] = now
        if now < state[0]:
            state[2] += 1
            return False
        if state[2]:
            record.msg = f"{record.msg} (and {int(state[2])} more like it left out)"
        state[1] = min(2 * state[1], MOST)
        state[0], state[2] = now + state[1], 0
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
