"""The MAPE-K runtime: sensors and each policy run at their own periods on the driver's clock."""

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.actions import SetCpu
from sova.model.scenario import ControlSpec
from sova.model.schema import Field
from sova.plan.base import Policy, register, registry
from sova.sim.engine import Simulator


@register
class Recorder(Policy):
    """A test policy that notes when it runs and what it saw, and asks for a CPU weight change."""

    name = "test-recorder"
    schema = {"period": Field("duration", 10.0, "")}
    calls: list[tuple[float, int]] = []

    def plan(self, knowledge, findings):
        Recorder.calls.append((knowledge.latest.time, len(knowledge)))
        return [SetCpu(vm="v1", weight=100 + len(Recorder.calls), reason="test", policy=self.name)]


def test_policies_and_sensors_run_at_their_own_periods():
    Recorder.calls.clear()
    sim = Simulator(make_scenario(vms=[{"name": "v1", "host": "h1"}]))
    rt = Runtime(SimDriver(sim), [Recorder(period=10.0), Recorder(period=25.0)], ControlSpec(monitor_period=5.0))
    rt.tick()
    for _ in range(60):
        sim.step()
        rt.tick()
    times = sorted(t for t, _ in Recorder.calls)
    assert times == [10, 20, 25, 30, 40, 50, 50, 60]
    assert len(rt.knowledge) == 13  # t = 0, 5, ..., 60
    assert sim.compute.vm_weight[0] == 100 + len(times)  # every plan was applied, in order


def test_a_policy_period_that_is_a_multiple_of_a_fine_step_runs_exactly_on_time():
    Recorder.calls.clear()
    sim = Simulator(make_scenario(scenario={"step": 0.25}, vms=[{"name": "v1", "host": "h1"}]))
    rt = Runtime(SimDriver(sim), [Recorder(period=2.5)], ControlSpec(monitor_period=0.25))
    rt.tick()
    for _ in range(40):  # 10 s
        sim.step()
        rt.tick()
    assert [t for t, _ in Recorder.calls] == [2.5, 5.0, 7.5, 10.0]


def test_registering_a_policy_does_not_hide_the_shipped_ones():
    assert {"test-recorder", "threshold-migration"} <= set(registry())
