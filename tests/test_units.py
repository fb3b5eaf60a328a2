import pytest

from sova.model import units


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10Gbps", 10e9), ("100Mbps", 100e6), ("2.5 Gb/s", 2.5e9), (1e9, 1e9), ("1500", 1500.0)],
)
def test_bandwidth_reads_units_and_bare_numbers(text, expected):
    assert units.bandwidth(text) == pytest.approx(expected)


def test_sizes_distinguish_decimal_and_binary_prefixes():
    assert units.size_bytes("128KB") == 128_000
    assert units.size_bytes("128KiB") == 131_072
    assert units.memory_mib("4GiB") == 4096
    assert units.memory_mib(512) == 512


def test_durations_accept_minutes_and_hours():
    assert units.duration("10min") == 600
    assert units.duration("2h") == 7200
    assert units.duration(30) == 30


@pytest.mark.parametrize("bad", ["ten", "10 parsecs", True, [1], "Gbps"])
def test_bad_quantities_name_what_was_expected(bad):
    with pytest.raises(units.UnitError, match="expected a bandwidth"):
        units.bandwidth(bad)
