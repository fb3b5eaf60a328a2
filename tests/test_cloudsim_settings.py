"""The settings that give CloudSim 3.0.3's behaviour where Sova's differs (docs/consolidation.md), each on a
case worked out by hand: the order a workload takes a trace set's files in."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from helpers import make_scenario
from sova.model.scenario import WorkloadSpec
from sova.model.schema import InputError
from sova.model.trace_sets import trace_set
from sova.sim.workload_kinds.trace_replay import trace_files


def _archive(path, members: list[str]) -> str:
    """A .tar.gz of PlanetLab-like traces, its members in the order given."""
    with tarfile.open(path, "w:gz") as tar:
        for number, name in enumerate(members):
            data = f"{10 * (number + 1)}\n".encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_an_archive_lists_its_members_in_their_order_or_sorted_by_name(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["c", "a", "b"])
    assert trace_set(archive, "listing") == [f"{archive}:c", f"{archive}:a", f"{archive}:b"]
    assert trace_set(archive) == [f"{archive}:a", f"{archive}:b", f"{archive}:c"]


def test_a_directory_lists_its_files_as_the_file_system_does_or_sorted_by_name(tmp_path):
    for name in ("vm-b", "vm-c", "vm-a", ".hidden"):
        (tmp_path / name).write_text("1\n")
    listed = [name for name in os.listdir(tmp_path) if not name.startswith(".")]  # readdir's order, as Java's
    assert trace_set(str(tmp_path), "listing") == [str(tmp_path / name) for name in listed]
    assert trace_set(str(tmp_path)) == [str(tmp_path / name) for name in ("vm-a", "vm-b", "vm-c")]


def test_a_workload_in_listing_order_gives_the_kth_vm_the_kth_listed_trace(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["c", "a", "b"])
    listing = WorkloadSpec("planetlab", "vm*", {"file": archive, "order": "listing"})
    assert [f["file"].rpartition(":")[2] for f in trace_files(listing, 3)] == ["c", "a", "b"]
    by_name = WorkloadSpec("planetlab", "vm*", {"file": archive})
    assert [f["file"].rpartition(":")[2] for f in trace_files(by_name, 2)] == ["a", "b"]


def test_an_unknown_order_is_refused_with_the_choices(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["a"])
    with pytest.raises(
        InputError, match=r"\[\[workloads\]\] #1.order: got 'sorted'; expected one of 'name', 'listing'"
    ):
        make_scenario(
            vms=[{"name": "vm1", "host": "h1"}],
            workloads=[{"vm": "vm*", "kind": "planetlab", "file": archive, "order": "sorted"}],
        )
