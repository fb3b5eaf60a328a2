"""The host side of the guest agent's channel over a real Unix socket: reports read as they come, and a
connection that carries nothing for STALE_SECONDS made again (a new "host connected" for the guest's port)."""

from __future__ import annotations

import socket

from sova.drivers.guest_agent import GuestChannel

REPORT = b"report 7 12.5 eth0\nlo: 1 2 0 0 0 0 0 0 3 4 0 0 0 0 0 0\nMemTotal: 100 kB\npong t1\nloads cpu=20 \nend\n"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _listening(tmp_path) -> tuple[socket.socket, str]:
    path = str(tmp_path / "agent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    return server, path


def test_a_report_is_read_whole_even_when_it_arrives_in_pieces(tmp_path):
    server, path = _listening(tmp_path)
    channel = GuestChannel(path)
    assert channel.poll() is None
    guest, _ = server.accept()
    guest.sendall(REPORT[:20])
    guest.settimeout(5)
    assert channel.poll() is None
    guest.sendall(REPORT[20:])
    report = _poll_until(channel, lambda: channel.latest is not None)
    assert (report.seq, report.loads, channel.answers) == (7, "cpu=20", ["pong t1"])


def test_a_connection_silent_past_the_stale_time_is_made_again_and_one_that_talks_is_kept(tmp_path):
    server, path = _listening(tmp_path)
    clock = Clock()
    channel = GuestChannel(path, clock)
    channel.poll()
    first, _ = server.accept()
    clock.now = GuestChannel.STALE_SECONDS - 1
    channel.poll()
    assert channel.sock is not None and channel.reconnects == 0
    clock.now = GuestChannel.STALE_SECONDS + 1  # nothing came: given up
    channel.poll()
    assert channel.sock is None and channel.reconnects == 1
    first.settimeout(5)
    assert first.recv(1) == b""  # the old connection is closed
    channel.poll()  # and a new one made
    second, _ = server.accept()
    second.sendall(REPORT)
    assert _poll_until(channel, lambda: channel.latest is not None).seq == 7
    clock.now += GuestChannel.STALE_SECONDS + 1
    second.sendall(REPORT)  # it talks: kept
    _poll_until(channel, lambda: channel._heard == clock.now)
    assert channel.reconnects == 1 and channel.sock is not None


def _poll_until(channel: GuestChannel, condition, tries: int = 500):
    """Poll until `condition` holds (the bytes sent reach the socket's buffer at once, but not before recv)."""
    import time

    for _ in range(tries):
        channel.poll()
        if condition():
            return channel.latest
        time.sleep(0.01)
    raise AssertionError("the channel never got there")
