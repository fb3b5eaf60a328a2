"""The Virtue paper's workloads on the simulator: tiered web services and MapReduce jobs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from helpers import make_scenario
from sova.model.schema import InputError
from sova.sim.engine import Simulator
from sova.sim.events import JobDone

EFF = 1448 / 1538  # payload share of a link
VIRTUE_CPU_PER_CALL = "393us"  # what Virtue's measured 1 : 1 : 1.333 VM ratio implies (docs/placement.md)


def web_scenario(hosts: dict[str, str], link="100Mbps", **web):
    return make_scenario(
        scenario={"duration": 30},
        topology={"kind": "single-switch", "link_speed": link},
        hosts=[{"name": "h{i}", "count": 3, "cores": 4, "nic": {"bandwidth": link}}],
        vms=[{"name": n, "host": h} for n, h in hosts.items()],
        workloads=[{"vm": "cli", "kind": "web", "web": "web", "cache": "mc", **web}],
    )


def run(scenario, steps: int) -> Simulator:
    sim = Simulator(scenario)
    for _ in range(steps):
        sim.step()
    return sim


def test_a_web_stream_runs_at_its_bottleneck_in_requests_per_second():
    sim = run(web_scenario({"cli": "h1", "web": "h2", "mc": "h3"}), 5)
    # the web VM's uplink carries every page and every cache request: the most bytes per request; the
    # closed loop comes within 3 % of filling it (the cache calls' connections count as sending there)
    per_request = (33660 + 10 * 100) * 8
    assert sim.sensors.gauges["web_rps"][0] == pytest.approx(100e6 * EFF / per_request, rel=0.03)
    # its flows carry the stream's rate times their bytes per request
    rate = sim.sensors.gauges["rate"]
    kinds = {f.kind: i for i, f in enumerate(sim.network.flows)}
    assert rate[kinds["web-response"]] == pytest.approx(sim.sensors.gauges["web_rps"][0] * 33660 * 8, rel=1e-6)
    assert rate[kinds["cache-response"]] == pytest.approx(sim.sensors.gauges["web_rps"][0] * 10 * 500 * 8, rel=1e-6)


def test_a_web_service_on_one_host_is_bound_by_the_web_vms_cpu():
    sim = run(web_scenario({"cli": "h1", "web": "h1", "mc": "h1"}), 10)
    rps = sim.sensors.gauges["web_rps"][0]
    assert 700 < rps <= 1000  # 1 ms of CPU per request on one vCPU; the network is not in the way


def test_a_busy_cache_vm_holds_back_every_stream_that_calls_it():
    # one cache VM at 1 ms per call serves 1,000 calls/s: 100 requests/s of 10 calls, far below the network
    sim = run(web_scenario({"cli": "h1", "web": "h2", "mc": "h3"}, cpu_per_call="1ms"), 10)
    assert sim.sensors.gauges["web_rps"][0] == pytest.approx(100, rel=0.02)


def service_per_vm(caches: int) -> float:
    """Requests/s per VM of a service of 3 clients, 3 web VMs and `caches` cache VMs, one VM per host."""
    tiers = {"cli": 3, "web": 3, "mc": caches}
    scenario = make_scenario(
        scenario={"duration": 30},
        topology={"kind": "single-switch", "link_speed": "100Mbps"},
        hosts=[{"name": "h{i}", "count": 6 + caches, "cores": 4, "nic": {"bandwidth": "100Mbps"}}],
        vms=[{"name": f"{t}{i}", "host": "h1"} for t, n in tiers.items() for i in range(1, n + 1)],
        workloads=[{"vm": "cli*", "kind": "web", "web": "web*", "cache": "mc*", "cpu_per_call": VIRTUE_CPU_PER_CALL}],
    )
    scenario = dataclasses.replace(
        scenario, vms=tuple(dataclasses.replace(v, host=f"h{k}") for k, v in enumerate(scenario.vms, start=1))
    )
    return float(run(scenario, 10).sensors.gauges["web_rps"].sum()) / (6 + caches)


def test_the_papers_best_vm_ratio_is_one_to_one_to_four_thirds():
    """Virtue §V-A: "the optimal performance ... comes at a 1:1:1.333 VM ratio". With clients and web VMs
    held by their 100 Mb/s NICs and the cache tier by its CPU, that ratio implies 0.393 ms a call, and at
    that cost 3 : 3 : 4 serves the most requests per VM (the scenarios keep the default: docs/placement.md)."""
    per_vm = {caches: service_per_vm(caches) for caches in (3, 4, 5)}
    assert per_vm[4] > per_vm[3] and per_vm[4] > per_vm[5]


def test_web_patterns_that_name_no_vm_are_refused_with_the_key():
    with pytest.raises(InputError) as e:
        web_scenario({"cli": "h1", "web": "h2", "mc": "h3"}, web="front*")
    assert "[[workloads]] #1.web" in str(e.value)


def mapreduce_scenario(hosts: list[str], shuffle="0B"):
    return make_scenario(
        scenario={"duration": 200},
        topology={"kind": "single-switch", "link_speed": "1Gbps"},
        hosts=[{"name": "h{i}", "count": 4, "cores": 4}],
        vms=[{"name": f"m{i}", "host": h, "vcpus": 2} for i, h in enumerate(hosts, start=1)],
        workloads=[{"vm": "m*", "kind": "mapreduce", "map": 80, "reduce": 40, "shuffle": shuffle, "think": "100s"}],
    )


def jobs_done(sim_scenario, steps: int) -> list[tuple[int, float, float]]:
    sim = Simulator(sim_scenario)
    done = []
    for _ in range(steps):
        sim.step()
        done += [(e.job, e.started, e.finished) for e in sim.events.take(JobDone)]
    return done


def test_a_mapreduce_job_takes_its_cpu_work_over_its_cores():
    done = jobs_done(mapreduce_scenario(["h1", "h2", "h3", "h4"]), 120)
    assert len(done) == 1
    _, start, end = done[0]
    assert end - start == pytest.approx(80 / 2 + 40 / 2, abs=2.0)


def test_one_crowded_host_holds_the_whole_job_back():
    spread = jobs_done(mapreduce_scenario(["h1", "h2", "h3", "h4"]), 150)[0]
    crowded = jobs_done(mapreduce_scenario(["h1", "h1", "h1", "h2"]), 150)[0]
    assert crowded[2] - crowded[1] > 1.4 * (spread[2] - spread[1])


def test_the_shuffle_sends_each_vms_bytes_evenly_to_the_others():
    sim = Simulator(mapreduce_scenario(["h1", "h2", "h3", "h4"], shuffle="30MB"))
    for _ in range(120):
        sim.step()
    shuffle = [i for i, f in enumerate(sim.network.flows) if f.kind == "shuffle"]
    assert len(shuffle) == 4 * 3
    assert np.allclose(sim.sensors.flow_bytes[shuffle], 30e6 / 3, rtol=1e-6)


def test_a_web_stream_shares_a_link_with_a_shuffle_per_tcp_connection():
    # the page flow (web on h2 -> client on h1) and one shuffle flow (hd1 on h2 -> hd2 on h1) share h2's uplink;
    # the shuffle flow holds one connection, the page flow those of the stream's 20 that are sending a page
    # (Little's law: its rate times a page's time, 15-19 here), and TCP splits the link per connection
    scenario = make_scenario(
        scenario={"duration": 30},
        topology={"kind": "single-switch", "link_speed": "100Mbps"},
        hosts=[{"name": "h{i}", "count": 2, "cores": 8, "nic": {"bandwidth": "100Mbps"}}],
        vms=[
            {"name": "cli", "host": "h1"},
            {"name": "web", "host": "h2"},
            {"name": "mc", "host": "h2"},
            {"name": "hd1", "host": "h2"},
            {"name": "hd2", "host": "h1"},
        ],
        workloads=[
            {"vm": "cli", "kind": "web", "web": "web", "cache": "mc"},
            {"vm": "hd*", "kind": "mapreduce", "map": 0, "reduce": 0, "shuffle": "1GB"},
        ],
    )
    sim = run(scenario, 5)
    rate = sim.sensors.gauges["rate"]
    page = next(i for i, f in enumerate(sim.network.flows) if f.kind == "web-response")
    shuffle = next(
        i for i, f in enumerate(sim.network.flows) if f.kind == "shuffle" and f.src[1] == sim.vm_names.index("hd1")
    )
    assert rate[page] + rate[shuffle] == pytest.approx(100e6 * EFF, rel=0.01)
    assert 15 * rate[shuffle] < rate[page] < 20 * rate[shuffle]


def tasks_scenario(mappers: int, reducers: int, **params):
    return make_scenario(
        scenario={"duration": 200},
        hosts=[{"name": "h1", "cores": 32}],
        storage=[{"name": "disk"}],
        vms=[{"name": "w{i}", "count": 3, "host": "h1", "vcpus": 4}],
        workloads=[
            {"vm": "w*", "kind": "mapreduce", "mappers": mappers, "reducers": reducers, "map": 10, "reduce": 6}
            | {"shuffle": 0, "think": "1000s", **params}
        ],
    )


def first_job(scenario, steps: int = 200) -> JobDone:
    sim = Simulator(scenario)
    for _ in range(steps):
        sim.step()
        done = sim.events.take(JobDone)
        if done:
            return done[0]
    raise AssertionError("no job finished")


@pytest.mark.parametrize(
    ("mappers", "reducers", "map_seconds", "reduce_seconds"),
    [(1, 1, 10, 6), (8, 1, 10, 6), (24, 3, 20, 6), (58, 8, 50, 6)],
)
def test_tasks_run_one_core_each_at_most_one_per_vcpu_of_their_vm(mappers, reducers, map_seconds, reduce_seconds):
    # 3 VMs of 4 vCPUs: 8 maps are dealt 3, 3, 2 (one wave); 24 are 8 a VM (two waves); 58 are 20, 19, 19 (5)
    job = first_job(tasks_scenario(mappers, reducers))
    assert job.map_seconds == pytest.approx(map_seconds, abs=1.0)
    assert job.reduce_seconds == pytest.approx(reduce_seconds, abs=1.0)


def test_a_map_phase_lasts_until_its_tasks_have_read_their_splits():
    cpu_only = first_job(tasks_scenario(3, 3))
    reading = first_job(tasks_scenario(3, 3, map=1, map_read="8GiB"))
    assert cpu_only.map_seconds == pytest.approx(10, abs=1.0)
    # 8 GiB a VM, one 64 KiB sequential request at a time: 20 us from read-ahead + 131 us of transfer each
    assert reading.map_seconds == pytest.approx(8 * 2**30 / 65536 * (20e-6 + 65536 * 8 / 4e9), abs=1.5)


def test_reduce_tasks_write_their_output_to_disk():
    sim = Simulator(tasks_scenario(3, 3, reduce_write="100MB"))
    for _ in range(60):
        sim.step()
    assert sim.sensors.counters["blk_wr_bytes"].sum() == pytest.approx(3 * 100e6, rel=1e-6)
    assert sim.sensors.counters["blk_rd_bytes"].sum() == 0


def test_cache_calls_across_links_a_shuffle_fills_wait_their_turn_instead_of_holding_the_stream_back():
    # cli and web on h1, their cache VM on h2; 25 shuffle connections fill both hosts' uplinks. The paper's
    # web VM makes its ten cache calls one after another, each a small message on its own TCP connection:
    # behind the shuffle each waits for a connection's share of the link, a few ms a request, while the web
    # VM's CPU (1 ms a request) stays the bound. As one unit of sharing the stream was held to 250 req/s.
    def scenario(shuffle: bool):
        workloads = [{"vm": "cli", "kind": "web", "web": "web", "cache": "mc"}]
        if shuffle:
            workloads.append({"vm": "hd*", "kind": "mapreduce", "map": 0, "reduce": 0, "shuffle": "10GB"})
        return make_scenario(
            scenario={"duration": 30},
            topology={"kind": "single-switch", "link_speed": "100Mbps"},
            hosts=[{"name": "h{i}", "count": 2, "cores": 16, "nic": {"bandwidth": "100Mbps"}}],
            vms=[{"name": "cli", "host": "h1"}, {"name": "web", "host": "h1"}, {"name": "mc", "host": "h2"}]
            + [{"name": f"hd{i}", "host": "h2" if i < 5 else "h1"} for i in range(10)],
            workloads=workloads,
        )

    alone, beside = (run(scenario(shuffle), 10) for shuffle in (False, True))
    assert alone.sensors.gauges["web_rps"][0] > 950  # the web VM's CPU
    assert 0.8 * alone.sensors.gauges["web_rps"][0] < beside.sensors.gauges["web_rps"][0]
    assert beside.sensors.gauges["web_rps"][0] < alone.sensors.gauges["web_rps"][0]  # the calls do wait
    assert beside.network.web_transfer[0] > 10 * alone.network.web_transfer[0]
