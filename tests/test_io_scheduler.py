"""The storage server's tag scheduler (sim/io_scheduler.py): hand-computed shares, and the fluid form
against a request-by-request mClock scheduler with dmclock's tag rules."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_scenario
from sova.drivers.sim import SimDriver
from sova.model.io_sample import IoThrottle
from sova.sim.engine import Simulator
from sova.sim.io_scheduler import tagged_share

MS = 1e-3  # device time per request: 1,000 requests/s fill the device


def share(demand, reservation, weight, cost=None):
    """Requests/s served on one server whose device takes `cost` seconds per request (1 ms by default)."""
    n = len(demand)
    cost = np.full(n, MS) if cost is None else np.asarray(cost, dtype=float)
    demand, reservation, weight = (np.asarray(a, dtype=float) for a in (demand, reservation, weight))
    return tagged_share(np.zeros(n, dtype=np.int64), demand, cost, reservation, weight, 1)


def test_reservations_beyond_the_device_are_shared_in_proportion_to_them():
    served = share([1e9, 1e9, 1e9], [600, 900, 1500], [1, 1, 1])
    np.testing.assert_allclose(served, [200, 300, 500])


def test_reservations_that_fit_are_topped_up_and_the_rest_goes_by_weight():
    # max(300, θ) + θ + 2θ = 1000 with θ < 300: θ = 233.3
    np.testing.assert_allclose(share([1e9] * 3, [300, 0, 0], [1, 1, 2]), [300, 700 / 3, 1400 / 3])
    # a reservation under the weighted share counts toward it: θ = 250, max(100, 250)
    np.testing.assert_allclose(share([1e9] * 3, [100, 0, 0], [1, 1, 2]), [250, 250, 500])


def test_a_vm_asking_less_than_its_share_gets_what_it_asks_and_the_rest_is_shared():
    np.testing.assert_allclose(share([100, 1e9, 1e9], [0, 0, 0], [1, 1, 1]), [100, 450, 450])


def test_a_device_with_room_serves_every_demand_and_weightless_vms_only_their_reservation():
    np.testing.assert_allclose(share([100, 200, 300], [0, 0, 0], [1, 1, 1]), [100, 200, 300])
    np.testing.assert_allclose(share([100, 200], [50, 0], [0, 1]), [50, 200])


def test_costlier_requests_take_more_of_the_device():
    # VM 2's requests take twice the device time: 300 + 2 x 350 = 1,000 (device time), each at 350 of weight
    served = share([1e9, 1e9], [0, 0], [1, 1], cost=[MS, 2 * MS])
    np.testing.assert_allclose(served, [1000 / 3, 1000 / 3])


def test_servers_are_shared_independently():
    server = np.array([0, 0, 1, 1])
    demand = np.full(4, 1e9)
    served = tagged_share(server, demand, np.full(4, MS), np.array([800, 100, 0, 0.0]), np.array([1, 1, 1, 3.0]), 2)
    # server 0: 800 + max(100, θ) = 1,000, θ = 200; server 1: θ + 3θ = 1,000
    np.testing.assert_allclose(served, [800, 200, 250, 750])


def mclock_by_request(demand, reservation, weight, limit, cost, horizon):
    """Requests served per second per client by a one-request-at-a-time server with dmclock's rules: tags
    R, P, L from the previous request's and the arrival (R = max(R' + 1/r, arrival) ...); the smallest R
    tag at or before now is served (reservation phase), else the smallest P tag among the clients within
    their limit, whose R tags then move back by 1/r (weight-phase service counts toward the reservation)."""
    n = len(demand)
    inv = [[1 / x if x > 0 else math.inf for x in a] for a in (reservation, weight)]
    inv.append([1 / x if x > 0 else 0.0 for x in limit])  # no limit: the L tag is the arrival
    arrivals = []  # (time, client)
    for i in range(n):
        count = int(demand[i] * horizon) + 1 if demand[i] < 1e6 else 20_000
        step = 1 / demand[i] if demand[i] < 1e6 else 0.0
        arrivals += [(k * step, i) for k in range(count)]
    heapq.heapify(arrivals)
    queues = [[] for _ in range(n)]  # per client, its requests' [R + shift at arrival, P, L] in arrival order
    previous = [[0.0, 0.0, 0.0] for _ in range(n)]
    shift = [0.0] * n  # how far each client's R tags moved back since it started
    served = np.zeros(n)
    now = 0.0
    while now < horizon:
        while arrivals and arrivals[0][0] <= now:
            at, i = heapq.heappop(arrivals)
            tags = [max(previous[i][k] + inv[k][i], at) for k in range(3)]
            previous[i] = tags
            queues[i].append([tags[0] + shift[i], tags[1], tags[2]])
        heads = [([q[0][0] - shift[i], q[0][1], q[0][2]], i) for i, q in enumerate(queues) if q]
        due = [(tags[0], i) for tags, i in heads if tags[0] <= now]
        if due:
            i = min(due)[1]
        else:
            ready = [(tags[1], i) for tags, i in heads if tags[2] <= now and tags[1] < math.inf]
            if not ready:
                waits = [t for tags, _ in heads for t in (tags[0], tags[2]) if t > now]
                waits += [arrivals[0][0]] if arrivals else []
                now = min(waits) if waits else horizon
                continue
            i = min(ready)[1]
            if inv[0][i] < math.inf:
                shift[i] += inv[0][i]
                previous[i][0] -= inv[0][i]
        queues[i].pop(0)
        served[i] += 1
        now += cost[i]
    return served / horizon


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([50.0, 200.0, 1e9]),  # demand: light, moderate or backlogged
            st.sampled_from([0.0, 100.0, 300.0, 600.0]),  # reservation
            st.sampled_from([0.0, 1.0, 2.0, 5.0]),  # weight
            st.sampled_from([0.0, 400.0]),  # limit (0: none)
        ),
        min_size=2,
        max_size=4,
    )
)
def test_fluid_shares_match_a_request_by_request_mclock_scheduler(clients):
    demand, reservation, weight, limit = (np.array(c, dtype=float) for c in zip(*clients, strict=True))
    limit = np.where(limit > 0, np.maximum(limit, reservation), 0.0)  # dmclock asks reservation <= limit
    cost = np.full(len(demand), MS)
    horizon = 8.0
    measured = mclock_by_request(demand, reservation, weight, limit, cost, horizon)
    within_limit = np.where(limit > 0, np.minimum(demand, limit), demand)  # the limiter, before the device
    fluid = tagged_share(np.zeros(len(demand), dtype=np.int64), within_limit, cost, reservation, weight, 1)
    np.testing.assert_allclose(measured, fluid, rtol=0.03, atol=3.0)


def two_readers(sizes=("4KiB", "64KiB")):
    """Two VMs reading far more than their SSD serves, with requests of these sizes."""
    return Simulator(
        make_scenario(
            scenario={"duration": 10},
            storage=[{"name": "ssd"}],
            vms=[{"name": "small", "host": "h1"}, {"name": "large", "host": "h1"}],
            workloads=[
                {"kind": "fio", "vm": vm, "size": size, "iops": 1e6}
                for vm, size in zip(("small", "large"), sizes, strict=True)
            ],
            simulator={"io_noise": False, "storage_step": 0.025},
        )
    )


def served_after(sim: Simulator, throttle: IoThrottle) -> tuple[np.ndarray, np.ndarray, float]:
    """Requests/s and bytes/s of each VM and the device's use, an epoch after the tags were set."""
    SimDriver(sim).set_io_throttle(throttle)
    sim.step()
    io = sim.sensors.gauges["io"]
    iops = np.bincount(io["vm"], weights=io["served"], minlength=2)
    return iops, iops * np.array([4096.0, 65536.0]), float(sim.sensors.gauges["storage_util"][0])


def test_in_the_simulator_mclock_gives_each_vm_its_share_of_overcommitted_reservations():
    vms, none = ("small", "large"), np.zeros(2)
    throttle = IoThrottle(vms, none, none, reservation=np.array([60_000.0, 30_000.0]), weight=np.ones(2))
    iops, _, use = served_after(two_readers(), throttle)
    assert iops[0] == pytest.approx(2 * iops[1], rel=1e-6)  # 2 : 1, as the reservations
    assert use == pytest.approx(1.0, rel=1e-6)


def test_in_the_simulator_drr_shares_a_busy_device_in_bytes():
    vms, none = ("small", "large"), np.zeros(2)
    throttle = IoThrottle(vms, none, none, weight=np.ones(2), weight_on_bytes=True)
    iops, bytes_s, use = served_after(two_readers(), throttle)
    assert bytes_s[0] == pytest.approx(bytes_s[1], rel=1e-6) and iops[0] == pytest.approx(16 * iops[1], rel=1e-6)
    assert use == pytest.approx(1.0, rel=1e-6)
    # untagged, the device shares its time instead: the large requests' VM gets more bytes
    _, untagged_bytes, _ = served_after(two_readers(), IoThrottle(vms, none, none))
    assert untagged_bytes[1] > 2 * untagged_bytes[0]
