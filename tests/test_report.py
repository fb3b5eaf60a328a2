"""The host report's wire encoding: size, round trip, and clear errors on bad bytes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.model.report import HostReport, ReportError, VmReport, decode, encode


def report(n_vms=12):
    vms = tuple(
        VmReport(vm=i, cpu=0.25, net_gbps=1.5, mem_gib=0.75, io_factor=47.5, net_factor=0.9, nic=i % 2)
        for i in range(n_vms)
    )
    return HostReport(host=3, seq=42, time=600, cpu=0.61, nic=0.83, mem=0.2, vfs_total=4, vfs_used=2, vms=vms)


def test_twelve_vms_fit_in_fewer_bytes_than_the_papers_304():
    assert len(encode(report(12))) == 177


def test_round_trip_keeps_values_to_their_precision():
    r = report()
    back = decode(encode(r))
    assert (back.host, back.seq, back.time, back.vfs_total, back.vfs_used) == (3, 42, 600, 4, 2)
    assert back.cpu == pytest.approx(0.61, abs=1e-4) and back.nic == pytest.approx(0.83, abs=1e-4)
    for a, b in zip(r.vms, back.vms, strict=True):
        assert b.vm == a.vm and b.nic == a.nic
        assert b.net_gbps == pytest.approx(a.net_gbps, rel=1e-3) and b.io_factor == pytest.approx(a.io_factor, rel=1e-3)


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1e5), st.floats(0, 1e6), st.floats(0, 1)), max_size=40))
def test_any_values_encode_and_decode_clamped(values):
    vms = tuple(VmReport(i, c, n, 1.0, f, nf, 0) for i, (c, n, f, nf) in enumerate(values))
    back = decode(encode(HostReport(1, 1, 1, 0.5, 0.5, 0.5, 0, 0, vms)))
    assert len(back.vms) == len(vms)
    assert all(0 <= v.cpu <= 1 and 0 <= v.net_factor <= 1 and v.io_factor <= 65504 for v in back.vms)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b[:10], "shorter than its 21-byte header"),
        (lambda b: b"X" + b[1:], "not a host report"),
        (lambda b: b[:1] + bytes([9]) + b[2:], "version 9 is not supported"),
        (lambda b: b[:-1], r"announces 12 VMs \(177 bytes\) but has 176 bytes"),
        (lambda b: b[:-1] + bytes([7]), "NIC code 7"),
    ],
)
def test_bad_bytes_are_named(mangle, message):
    with pytest.raises(ReportError, match=message):
        decode(mangle(encode(report())))
