"""The doomed-attempt gate (``yunikorn.gate``) and the node-search bound of ``_least_check``.

``guarantee_doomed`` lets the fast pass skip the victim search of an attempt; it must only ever
say so when ``check_queue_guarantees`` (its general loop, shortcuts off) refuses the ask. The
hypothesis test draws queue trees with guarantees, usage, preempting resources and victims in
other leaves, and checks that implication; the scenario test checks that the gate does fire in a
reclaim (requeued victims over their guarantee, more of them due than a leaf's attempt budget)
and that the fast pass still decides as the reference pass. The fast pass keeps verdicts under
the usage they read, across calls: in hierarchies with a guaranteed parent, each one it gives is
checked against the gate computed afresh on the path as it stands.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn import fastpass as ymodel
from makeway.policies.yunikorn.common import Partition, YAlloc, YAsk, YNode, YQueue
from makeway.policies.yunikorn.gate import guarantee_doomed
from makeway.policies.yunikorn.preemptor import Preemptor
from makeway.sim.engine import SimOptions, simulate
from tests.yunikorn_queue.test_cache_equivalence import FullEvaluation, Recording

AMOUNTS = st.sampled_from([0, 1, 2, 3, 5, 8, 0.5, 2.5])


def vec(draw, types=("cpu", "memory")) -> dict:
    return {k: draw(AMOUNTS) for k in types if draw(st.booleans())}


@st.composite
def partitions(draw):
    queues = [YQueue("root", None, vec(draw) if draw(st.integers(0, 3)) == 0 else None)]
    parents = ["root"]
    if draw(st.booleans()):
        parents.append("root.p")
        queues.append(YQueue("root.p", "root", vec(draw) or None))
    leaves = []
    for i in range(draw(st.integers(2, 4))):
        leaves.append(f"{draw(st.sampled_from(parents))}.l{i}")
        queues.append(YQueue(leaves[-1], leaves[-1].rsplit(".", 1)[0], vec(draw) or None))
    allocs = []
    for j in range(draw(st.integers(0, 8))):
        leaf = draw(st.sampled_from(leaves))
        allocs.append(YAlloc(f"a{j}", f"app{j}", leaf, "n1", vec(draw) or {"cpu": 1}, priority=draw(st.integers(0, 2)),
                             create_us=j, preempted=draw(st.integers(0, 5)) == 0))
    part = Partition(queues, [YNode("n1", {"cpu": 64, "memory": 64})], allocs)
    part.shortcuts = False
    for a in allocs:
        part.add_usage(a.queue, a.resources)
        if a.preempted:
            part.add_preempting(a.queue, a.resources)
    ask = YAsk("ask", "app-ask", draw(st.sampled_from(leaves)), vec(draw) or {"cpu": 1}, priority=draw(st.integers(0, 3)))
    return part, ask


@settings(max_examples=120, deadline=None)
@given(partitions())
def test_doomed_means_refused(case):
    part, ask = case
    path = [(q, part.queues[q].allocated, part.queues[q].preempting, part.queues[q].max, part.queues[q].guaranteed)
            for q in reversed(part.ancestors(ask.queue))]
    doomed = guarantee_doomed(path, ask.resources)
    event("doomed" if doomed else "not doomed")
    if doomed:
        assert not Preemptor(part, ask).check_queue_guarantees()


def reclaim_case(asks: int) -> tuple[ClusterState, list[Workload]]:
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.a", "root", {"cpu": 8}, settings=delay),
              Queue("root.b", "root", {"cpu": 8}, settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)]
    jobs = [Workload(f"fill{i}", "root.a", 0.0, 500.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(16)]
    jobs += [Workload(f"ask{i}", "root.b", 1.0 + i, 60.0, (TaskGroup(1, {"cpu": 1 + i % 2}),)) for i in range(asks)]
    return ClusterState(["cpu"], queues, nodes), jobs


def test_reclaim_gates_requeued_victims_and_decides_as_reference(monkeypatch):
    calls = {"doomed": 0, "evaluated": 0}
    real, real_attempt = ymodel.doomed_by, ymodel._FastPass.doomed_attempt

    def counting(margin, res):
        out = real(margin, res)
        calls["evaluated"] += out
        return out

    def attempt(self, *args):
        calls["doomed"] += 1
        return real_attempt(self, *args)

    monkeypatch.setattr(ymodel, "doomed_by", counting)
    monkeypatch.setattr(ymodel._FastPass, "doomed_attempt", attempt)
    logs, models = [], []
    for cls in (Recording, FullEvaluation):
        state, jobs = reclaim_case(6)
        model = cls({})
        simulate(state, model, jobs, options=SimOptions(check_invariants=True))
        logs.append(model.log)
        models.append(model)
    # victims were requeued into root.a (over its guarantee) and retried there every 15 s, by the
    # walk or, while nothing else moved, by their cohort's timer
    assert any(" P fill" in line for line in logs[0])
    assert calls["doomed"] > 10 or models[0].cohort_refusals > 10
    # verdicts are kept while the world stands still: fewer evaluations than refusals, whether
    # the walk refused (``doomed_attempt``) or a call that only refuses (``cohorts``)
    assert 0 < calls["evaluated"] < calls["doomed"] + models[0].cohort_refusals
    assert logs[0] == logs[1]


def hierarchy_case(seed: int) -> tuple[ClusterState, list[Workload]]:
    """Two leaves under a guaranteed parent and a filler queue beside it: a start or an end in
    one leaf moves the parent's usage. Victims stay on their nodes for a grace period, marked
    preempted, so a leaf's preempting usage moves its asks' verdicts too."""
    rng = random.Random(seed)
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.p", "root", {"cpu": rng.choice([6, 8, 10])}, settings=delay),
              Queue("root.p.a", "root.p", {"cpu": rng.choice([3, 4, 6])}, settings=delay),
              Queue("root.p.b", "root.p", {"cpu": rng.choice([3, 4, 6])}, settings=delay),
              Queue("root.c", "root", settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)]
    jobs = [Workload(f"fill{i}", "root.c", 0.0, rng.choice([200.0, 500.0]), (TaskGroup(1, {"cpu": 1}),))
            for i in range(16)]
    t = 1.0
    for i in range(14):
        t += rng.choice([0.5, 3.0, 20.0])
        jobs.append(Workload(f"ask{i}", rng.choice(["root.p.a", "root.p.b"]), t, rng.choice([40.0, 90.0]),
                             (TaskGroup(1, {"cpu": rng.choice([1, 2, 3])}),), rng.choice([0, 5])))
    grace = rng.choice([0.0, 10.0, 30.0])
    return ClusterState(["cpu"], queues, nodes), [replace(w, grace=grace) for w in jobs]


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000))
def test_kept_verdicts_are_the_paths(seed):
    """Every verdict ``_FastPass.doomed`` gives, whether kept for the world, under the usage of the
    path it reads (``YuniKornModel._doom_path``) or computed, is the gate's on the path as it
    stands at that point of the call; and the run decides as the reference pass."""
    real = ymodel._FastPass.doomed
    seen = {"calls": 0, "doomed": 0}

    def checked(self, queue, res, rkey):
        out = real(self, queue, res, rkey)
        assert out == guarantee_doomed(self._path(queue), res)
        seen["calls"] += 1
        seen["doomed"] += out
        return out

    logs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ymodel._FastPass, "doomed", checked)
        for cls in (Recording, FullEvaluation):
            state, jobs = hierarchy_case(seed)
            model = cls({})
            simulate(state, model, jobs, options=SimOptions(check_invariants=True))
            logs.append(model.log)
    assert logs[0] == logs[1]
    event(f"verdicts: {'some doomed' if seen['doomed'] else 'none doomed'}")
