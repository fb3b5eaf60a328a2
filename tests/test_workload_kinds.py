"""The workload protocol: one module per kind, known by the name the scenario format uses."""

from __future__ import annotations

from sova.model.scenario_fields import WORKLOAD_KINDS, WORKLOAD_PARAMS
from sova.sim.workload_kinds import kinds
from sova.sim.workload_kinds.base import WorkloadKind


def test_every_kind_the_scenario_format_accepts_has_a_module_and_no_module_is_unreachable():
    assert set(kinds()) == set(WORKLOAD_KINDS) == set(WORKLOAD_PARAMS)
    assert all(isinstance(kind, WorkloadKind) and kind.name == name for name, kind in kinds().items())


def test_web_states_its_demand_after_every_kind_that_asks_for_cpu():
    order = list(kinds())
    assert order[-1] == "web"


def test_only_the_kinds_that_offer_storage_io_get_io_flows():
    does_io = {"fio", "filebench", "bitbrains", "block-trace", "observed"}
    assert {name for name, kind in kinds().items() if kind.does_io} == does_io
