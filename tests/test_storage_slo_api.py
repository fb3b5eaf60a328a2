"""SASLO's tenant API (Table 1): the five calls, and bad values refused with a clear error that changes
nothing."""

import math

import pytest

from sova.model.storage_slo import SloBook, SloError, SloStatus


def book():
    return SloBook(["vm1", "vm2"])


def test_the_papers_example_of_table_1_is_accepted_as_given():
    slos = book()
    slos.set_throughput("vm1", 400, 600)
    slos.set_io_size("vm1", 12 * 1024, 32 * 1024)
    slos.set_sc("vm1", 80, 90)
    slos.set_pf("vm1", 10, 15)
    slo = slos.slo("vm1")
    assert slo.throughput == (400, 600) and slo.io_size == (12288, 32768)
    assert slo.sc_rate == (80, 90) and slo.pf_ratio == (10, 15)
    assert slos.under_control() == ["vm1"]


def test_get_status_returns_what_the_engine_last_measured():
    slos = book()
    assert slos.get_status("vm2") == SloStatus(None, None)
    slos.record_status("vm2", 93.5, 4.2)
    assert slos.get_status("vm2") == SloStatus(93.5, 4.2)


@pytest.mark.parametrize(
    ("call", "args", "message"),
    [
        ("set_throughput", ("vm1", 600, 400), "lower bound 600 is above the upper bound 400"),
        ("set_throughput", ("vm1", -5, 400), "throughput lower bound must be >= 0 IOPS, got -5"),
        ("set_throughput", ("vm1", 0, 0), "upper bound must be > 0 IOPS"),
        ("set_throughput", ("vm1", 100, math.nan), "must be a finite number"),
        ("set_throughput", ("vm1", 100, math.inf), "must be a finite number"),
        ("set_throughput", ("vm1", "fast", 400), "must be a number"),
        ("set_io_size", ("vm1", 100, 4096), "io_size lower bound must be >= 512 bytes, got 100"),
        ("set_sc", ("vm1", 80, 120), "sc_rate upper bound must be within 0-100 %, got 120"),
        ("set_pf", ("vm9", 5, 10), "unknown VM 'vm9'"),
        ("set_latency", ("vm1", 0), "latency must be a finite number of seconds above 0"),
        ("set_latency", ("vm1", -0.02), "latency must be a finite number of seconds above 0"),
        ("set_latency", ("vm1", math.nan), "latency must be a finite number of seconds above 0"),
        ("set_latency", ("vm1", "soon"), "latency must be a number of seconds"),
    ],
)
def test_bad_values_get_an_error_naming_them_and_change_nothing(call, args, message):
    slos = book()
    slos.set_throughput("vm1", 400, 600)
    before = slos.slo("vm1")
    with pytest.raises(SloError, match=message.replace("(", r"\(").replace(")", r"\)")):
        getattr(slos, call)(*args)
    assert slos.slo("vm1") == before
    with pytest.raises(SloError, match="unknown VM"):
        slos.get_status("nobody")


def test_a_latency_slo_is_set_beside_the_throughput_one():
    slos = book()
    slos.set_throughput("vm1", 400, 600)
    slos.set_latency("vm1", 0.02)
    assert slos.slo("vm1").latency == 0.02 and slos.slo("vm1").throughput == (400, 600)
