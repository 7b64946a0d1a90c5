"""Hypothesis properties of the heartbeat stages, driven through the real simulator.

1. With preemption enabled and a steady workload, an operation that is starving (past its timeout)
   gets an allocation at a heartbeat whose preemptive stages run, whenever that node's free plus
   preemptible resources fit one of its pending tasks.
2. Non-preemptible allocations are never victims of the preemptive stages.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Preempt, Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import heartbeat, starvation
from makeway.policies.ytsaurus.classify import NP, P
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.sim.engine import SimOptions, simulate

SETTINGS = {"fair_share_update_period": 1.0, "fair_share_starvation_timeout": 10,
            "preemptive_scheduling_backoff": 5, "aggressive_preemption_satisfaction_threshold": 0.2}


class Checked(YTsaurusModel):
    """The real model, with the two properties asserted around every heartbeat."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.served = 0
        self.victims_seen = 0

    def heartbeat(self, state, node, now):
        snap = self.snap
        before = {t: self.allocation_status(state, t) for t in state.node_allocs[node]}
        runs = snap is not None and (self.backoff.last.get(node) is None or now > self.backoff.last[node] + self.backoff.period)
        expect = None
        if snap is not None and runs:
            free = [state.nodes[node].capacity.get(r, 0) - state.node_used[node].get(r, 0) for r in self.resources]
            cands = heartbeat.stage_candidates(self._cands(state, node), "preemptive_normal")
            room = [f + d for f, d in zip(free, heartbeat.discount(cands, len(free)))]
            starving = [w for w in snap.published if state.pending.get(w)
                        and starvation.preemption_priority(snap.view, w) == "normal"]
            aggressive = [w for w in snap.published if state.pending.get(w)
                          and starvation.preemption_priority(snap.view, w) == "aggressive"]
            if len(starving) == 1 and not aggressive:
                w = starving[0]
                if any(heartbeat.fits(self._vec(state.task_resources(t)), room) for t in state.pending[w]):
                    expect = w
        out = super().heartbeat(state, node, now)
        for d in out:
            if isinstance(d, Preempt) and d.reason.rule in ("preemptive-stage", "aggressive-preemptive-stage"):
                self.victims_seen += 1
                assert before.get(d.allocation) != NP, f"non-preemptible {d.allocation} preempted at {now}"
                if d.reason.rule == "preemptive-stage":
                    assert before.get(d.allocation) == P
        if expect is not None:
            assert any(isinstance(d, Start) and d.task.startswith(expect + "/") for d in out), (
                f"t={now}: starving {expect} not served on {node}")
            self.served += 1
        return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(1, 3), cpu=st.integers(4, 8), size=st.integers(1, 2), count=st.integers(1, 4),
       submit=st.integers(15, 60), weight=st.sampled_from([1.0, 2.0]), guaranteed=st.booleans())
def test_starving_operation_is_served_and_np_never_victim(nodes, cpu, size, count, submit, weight, guaranteed):
    queues = [Queue("root"), Queue("a", "root"),
              Queue("b", "root", weight=weight, guaranteed={"cpu": cpu} if guaranteed else None)]
    state = ClusterState(["cpu"], queues, [Node(f"n{i}", {"cpu": cpu}) for i in range(nodes)])
    hog = Workload("hog", "a", 0, 10_000, (TaskGroup(nodes * cpu, {"cpu": 1}),))
    new = Workload("new", "b", submit, 10_000, (TaskGroup(count, {"cpu": size}),))
    model = Checked(SETTINGS)
    rec = simulate(state, model, [hog, new], options=SimOptions(horizon=submit + 120, check_invariants=True))
    assert rec is not None
    assert state.running.get("new"), "the newcomer never got an allocation"
