"""`sova manage`'s loop and command line: approve mode asks a person, bad input stops before anything runs."""

from __future__ import annotations

import pytest

from fake_libvirt import Cluster, make
from sova.cli import main
from sova.control.manage import BUILTIN_PROFILES, manage
from sova.control.profiles import check_profile
from sova.model.actions import Migrate
from sova.model.scenario import ControlSpec, ProfileSpec
from sova.model.schema import Reader
from sova.plan.base import Policy


class MoveOnce(Policy):
    """Proposes moving vm1 to host b once."""

    name = "move-once"
    loop = "global"
    summary = "test policy"
    schema = {}

    def __init__(self):
        self.settings = {"period": 0.05}
        self.done = False

    @property
    def period(self) -> float:
        return 0.05

    def plan(self, knowledge, findings):
        if self.done:
            return []
        self.done = True
        return [Migrate(vm="vm1", dst="b", reason="test", policy=self.name)]


@pytest.mark.parametrize(("answer", "events"), [(True, ["approved", "applied", "finished"]), (False, ["rejected"])])
def test_approve_mode_shows_each_plan_and_follows_the_answer(answer, events):
    c = Cluster()
    c.add("fake://a", "vm1", **{"balloon.maximum": 1024})
    drv = make(c)
    asked = []

    def ask(pid, lines):
        asked.append(lines)
        return answer

    rt = manage(drv, [MoveOnce()], ControlSpec(hold_down=0), "approve", duration=0.6, tick=0.02, ask=ask)
    assert asked == [["migrate vm=vm1 dst=b  (test)"]]
    seen = [e.event for e in rt.audit.entries if e.event not in ("proposed", "pending")]
    assert seen == events
    assert ("vm1" in c.conns["fake://b"].doms) is answer


def test_dry_run_applies_nothing():
    c = Cluster()
    c.add("fake://a", "vm1")
    rt = manage(make(c), [MoveOnce()], ControlSpec(), "dry-run", duration=0.3, tick=0.02)
    assert [e.event for e in rt.audit.entries] == ["proposed", "dry-run"]
    assert "vm1" in c.conns["fake://a"].doms


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "node1"], "expected NAME=URI"),
        (["--host", "n1=node1"], "not a libvirt URI"),
        (["--host", "n1=test:///default", "--param", "sova"], "expected POLICY.KEY=VALUE"),
        (["--host", "n1=test:///default", "--param", "dsriov-vlm.alpah=0.8"], "alpah"),
        (["--host", "n1=test:///default", "--param", "sova.alpha=0.8"], "the policy is now called 'dsriov-vlm'"),
        (["--host", "n1=test:///default", "--control", "holddown=5"], "did you mean 'hold_down'"),
        (["--host", "n1=test:///default", "--control", "hold_down=soon"], "--control.hold_down: expected a duration"),
        ([], "at least one host"),
        (["--host", "n1=test:///default", "--profile", "see", "--slos", "/nonexistent/slos.toml"], "no such file"),
        (["--host", "n1=test:///default", "--slos", "slos.toml"], "profile sova holds no storage SLO"),
    ],
)
def test_manage_refuses_bad_arguments_before_it_starts(args, message, capsys):
    assert main(["manage", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("profile", ["cloudscope", "cloudscope-dom0", "sova", "dsriov"])
def test_every_builtin_profile_runs_against_libvirt_hosts(profile):
    c = Cluster()
    c.conns["fake://a"].kind = "Xen"
    c.add("fake://a", "vm1")
    c.add("fake://b", "vm2")
    reader = Reader("test")
    policies = check_profile(reader, ProfileSpec(profile, BUILTIN_PROFILES[profile]))
    assert not reader.problems and [p.name for p in policies] == list(BUILTIN_PROFILES[profile])
    for p in policies:
        p.period = 0.05
    rt = manage(make(c), policies, ControlSpec(monitor_period=0.02), "dry-run", duration=0.3, tick=0.02)
    assert len(rt.knowledge) >= 2  # it observed the hosts and ran its policies without error
    assert not [e for e in rt.audit.entries if e.event in ("proposed", "dry-run")]  # idle hosts: nothing to do
