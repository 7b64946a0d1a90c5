"""Asks refused together are refused again together (``Blocks`` cohorts, issue 20).

A call whose only work is refusals (a cohort's timer, asks parked for want of their leaf's
attempts) is done without the walk (``cohorts.repeat_refusals``). Against the same model with that shortcut off, every call
must decide the same, ask for the same wake-up, and leave every ask with the same check clock and
allocation log counts; against the reference pass (``caches: false``) the decisions and wake-ups
must match too.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from tests.yunikorn_queue.test_cache_equivalence import FullEvaluation, Recording, clusters, run


class AskStates(Recording):
    """Also logs, after every call, each ask's check clock and log counts."""

    most = 0  # the largest count any ask's log reached
    repeats = 0  # calls ``repeat_refusals`` made, in the latest run of this class


    def schedule(self, state, now):
        out = super().schedule(state, now)
        self.most = max([self.most, *(n for a in self.asks.values() for n in a.log.values())])
        AskStates.repeats = self.cohort_repeats
        self.log.append(f"{now!r} A {sorted((t, a.last_check_us, sorted(a.log.items())) for t, a in self.asks.items())!r}")
        return out


class NoCohorts(AskStates):
    closed_form_refusals = False


def starved_case(gangs: int = 6) -> tuple[ClusterState, list[Workload]]:
    """root.a runs over its guarantee for an hour; root.b's asks (under theirs) are refused by
    root.a's guarantee every 15 s, and some leaves have more asks due than attempts."""
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.a", "root", {"cpu": 12}, settings=delay),
              Queue("root.b", "root", {"cpu": 4}, settings=delay), Queue("root.c", "root", {"cpu": 0.5}, settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)]
    jobs = [Workload(f"fill{i}", "root.a", 0.0, 3600.0 + 60 * i, (TaskGroup(1, {"cpu": 1}),)) for i in range(16)]
    jobs += [Workload(f"ask{i}", "root.b", 2.0 + 7 * i, 60.0, (TaskGroup(1, {"cpu": 1 + i % 2}),)) for i in range(4)]
    jobs += [Workload(f"gang{i}", "root.c", 30.0, 60.0, (TaskGroup(7, {"cpu": 1}),)) for i in range(gangs)]
    return ClusterState(["cpu"], queues, nodes), jobs


def test_cohort_repeats_decide_and_log_as_the_walk():
    logs, models = [], []
    for cls in (AskStates, NoCohorts):
        state, jobs = starved_case()
        model = cls({})
        simulate(state, model, jobs, options=SimOptions(check_invariants=True))
        logs.append(model.log)
        models.append(model)
    assert models[0].cohort_repeats > 20 and models[1].cohort_repeats == 0
    assert models[0].parked_turns > 0  # root.c's gangs have more asks due than attempts
    assert models[0].most > 20  # asks were refused again and again
    assert logs[0] == logs[1]
    state, jobs = starved_case()
    ref = FullEvaluation({})
    simulate(state, ref, jobs, options=SimOptions(check_invariants=True))
    assert [line for line in logs[0] if " A " not in line] == ref.log


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_cohort_repeats_change_nothing_on_random_clusters(case):
    log = run(AskStates, case)
    event("a cohort repeated" if AskStates.repeats else "no cohort repeated")
    assert log == run(NoCohorts, case)
