"""The device's queueing (sim/storage.py): one queue that every request of a server joins, M/G/1 with the
mix's residual service, and the bound a closed stream's depth sets on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import serve_io
from sova.sim.storage import RHO_MAX, closed_loop_bound, queueing


def test_one_stream_waits_its_own_service_times_rho_over_one_minus_rho_and_the_cv_term():
    service, cv = 0.004, 0.5
    served, latency, rho = serve_io(np.array([0]), np.array([150.0]), np.array([service]), np.array([1.0]), cv)
    assert served[0] == 150.0 and rho[0] == pytest.approx(0.6)
    assert latency[0] == pytest.approx(service + service * 0.6 / 0.4 * (1 + cv**2) / 2)


def test_every_request_of_a_server_waits_the_same_behind_a_mix_of_sizes():
    """Pollaczek-Khinchine for two classes: W = λ E[S²] / 2 (1 − ρ), by hand, with cv = 1 (E[S²] = 2 s²)."""
    rates, services = np.array([100.0, 20.0]), np.array([0.002, 0.020])
    served, latency, rho = serve_io(np.array([0, 0]), rates, services, np.array([1.0]), 1.0)
    wait = (rates * 2 * services**2).sum() / 2 / (1 - (rates * services).sum())
    assert served == pytest.approx(rates) and rho[0] == pytest.approx(0.6)
    assert latency == pytest.approx(services + wait)


@settings(max_examples=50, deadline=None)
@given(
    rates=st.lists(st.floats(1.0, 100.0), min_size=1, max_size=6),
    share=st.floats(1e-4, 1e-3),
    cv=st.floats(0.0, 2.0),
)
def test_requests_of_one_size_wait_as_one_stream_of_that_size_whatever_the_rates(rates, share, cv):
    n = len(rates)
    residual = np.full(n, share * (1 + cv**2) / 2)
    rho, wait = queueing(np.zeros(n, dtype=np.int64), np.array(rates), np.full(n, share), residual, 1)
    assert rho[0] == pytest.approx(sum(rates) * share)
    capped = min(rho[0], RHO_MAX)
    assert wait[0] == pytest.approx(capped / (1 - capped) * share * (1 + cv**2) / 2)


@settings(max_examples=60, deadline=None)
@given(
    streams=st.lists(
        st.tuples(st.integers(0, 2), st.floats(1.0, 3000.0), st.floats(1e-5, 1e-2), st.integers(0, 32)),
        min_size=1,
        max_size=8,
    ),
    cv=st.floats(0.0, 1.5),
)
def test_a_depth_bound_never_serves_a_stream_more_than_its_share_or_a_server_past_its_capacity(streams, cv):
    server = np.array([s[0] for s in streams])
    served = np.array([s[1] for s in streams])
    share = np.array([s[2] for s in streams])
    depth = np.array([float(s[3]) for s in streams])
    closed = depth > 0
    alone = share * 4 + 1e-4  # a unit's own time: a few times its share of the whole device, and a path
    residual = share * (1 + cv**2) / 2
    bounded, time = closed_loop_bound(server, served, share, residual, closed, depth, alone, 3)
    assert np.all(bounded <= served * (1 + 1e-12)) and np.all(bounded >= 0)
    assert np.all(time >= alone)
    assert np.array_equal(bounded[~closed], served[~closed])  # an open stream keeps what the device gave it
    # a closed stream is served at most its depth over its time; alone on its server it waits for no one
    assert np.all(bounded[closed] <= depth[closed] / time[closed] * (1 + 1e-3) + 1e-9)
    counts = np.bincount(server, minlength=3)[server]
    lone = closed & (counts == 1)
    assert bounded[lone] == pytest.approx(np.minimum(served, depth / alone)[lone])
    before = np.bincount(server, weights=served * share, minlength=3)
    after = np.bincount(server, weights=bounded * share, minlength=3)
    assert np.all(after <= before * (1 + 1e-12))


def test_two_deep_closed_streams_of_one_size_still_fill_most_of_the_device():
    """Each waits behind the other's requests, yet with eight each outstanding on a device of 16 units
    the pair keeps it over 90 % busy (the device's shares give each half)."""
    service, units = 5.7e-3, 16
    share = np.full(2, service / units)
    served = np.full(2, units / service / 2)
    bounded, time = closed_loop_bound(
        np.zeros(2, dtype=np.int64),
        served,
        share,
        share,  # the residual service with cv 1: E[S²] / 2 E[S] = share
        np.ones(2, bool),
        np.full(2, 8.0),
        np.full(2, service),
        1,
    )
    busy = (bounded * share).sum()
    assert 0.9 < busy <= 1.0
    assert time[0] > service and busy < RHO_MAX + 0.02
