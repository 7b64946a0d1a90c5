"""The fast scheduling pass decides exactly what the reference pass decides.

Golden digests (``golden.json``) were recorded from the reference pass before the fast one existed;
the hypothesis test runs both passes side by side on random small clusters and compares the whole
event log (starts, preemptions with reasons, evictions, notes, finishes, with their times).
"""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange

from . import scenarios as S

GOLDEN = json.loads((Path(__file__).parent / "golden.json").read_text())


@pytest.mark.parametrize("name", ["example", "flat-2-grace", "flat-4-quota", "nested-5"])
def test_fast_pass_matches_golden_log(name):
    assert S.digest(S.run(name)) == GOLDEN[name]["digest"]


def test_reference_pass_matches_golden_log():
    assert S.digest(S.run("example", caches=False)) == GOLDEN["example"]["digest"]


@st.composite
def clusters(draw):
    n_queues = draw(st.integers(1, 3))
    delays = draw(st.lists(st.sampled_from(["0s", "2s", "7s", None]), min_size=n_queues, max_size=n_queues))
    queues = [Queue("root", max={"cpu": draw(st.sampled_from([0, 10]))} if draw(st.booleans()) else None)]
    for i in range(n_queues):
        props = {} if delays[i] is None else {"preemption.delay": delays[i]}
        if draw(st.integers(0, 4)) == 0:
            props["preemption.policy"] = draw(st.sampled_from(["fence", "disabled"]))
        if draw(st.booleans()):
            props["quota.preemption.delay"] = "3s"
        g = draw(st.sampled_from([None, 2, 4, 6]))
        mx = draw(st.sampled_from([None, None, 6, 12]))
        queues.append(Queue(f"q{i}", "root", guaranteed={"cpu": g} if g else None,
                            max={"cpu": mx} if mx else None, settings={"properties": props}))
    nodes = [Node(f"n{i}", {"cpu": draw(st.sampled_from([2, 4, 4.5]))}) for i in range(draw(st.integers(1, 4)))]
    jobs = []
    for j in range(draw(st.integers(1, 20))):
        s = {}
        if draw(st.integers(0, 5)) == 0:
            s["requiredNode"] = nodes[draw(st.integers(0, len(nodes) - 1))].name
        if draw(st.integers(0, 5)) == 0:
            s["allowPreemption"] = False
        if draw(st.integers(0, 5)) == 0:
            s["allowPreemptOther"] = False
        jobs.append(Workload(f"w{j}", f"q{draw(st.integers(0, n_queues - 1))}", draw(st.integers(0, 40)) / 2,
                             draw(st.integers(1, 60)),
                             (TaskGroup(draw(st.integers(1, 4)), {"cpu": draw(st.sampled_from([0.5, 1, 1.5, 2]))}),),
                             draw(st.sampled_from([0, 5, 10])), grace=draw(st.sampled_from([0.0, 0.0, 3.0])),
                             settings=s))
    changes = []
    if draw(st.booleans()):
        changes.append(ConfigChange(draw(st.integers(1, 30)), f"q{draw(st.integers(0, n_queues - 1))}",
                                    {"max": {"cpu": draw(st.sampled_from([1, 2, 3]))}}))
    model_settings = {"quotaPreemptionEnabled": draw(st.booleans()), "preemptionEnabled": draw(st.booleans())}
    return queues, nodes, jobs, changes, model_settings


def _run(queues, nodes, jobs, changes, model_settings, reference):
    qs = [Queue(q.name, q.parent, q.guaranteed, q.max, settings=json.loads(json.dumps(q.settings))) for q in queues]
    ns = [Node(n.name, dict(n.capacity)) for n in nodes]
    state = ClusterState(["cpu"], qs, ns)
    rec = simulate(state, YuniKornModel({**model_settings, "caches": not reference}), list(jobs), list(changes),
                   SimOptions(record_starts=True, check_invariants=True))
    return rec.events


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_fast_pass_equals_reference_pass(c):
    assert _run(*c, reference=False) == _run(*c, reference=True)


def test_quota_run_due_at_a_skipped_wake_up_still_runs():
    """Found by ``test_fast_pass_equals_reference_pass``: a stretch of the model's own wake-ups
    (``skip_wakes``) ran the instant at which q0's lowered max came due (13 s + 3 s) as a quiet
    one, because the quota's next wake-up from that instant on was the one after it. The
    stretch now ends at the quota's earliest timer, due or not."""
    queues = [Queue("root"), Queue("q0", "root", max={"cpu": 6},
                                   settings={"properties": {"preemption.delay": "0s", "quota.preemption.delay": "3s"}}),
              Queue("q1", "root", settings={"properties": {"preemption.delay": "0s"}})]
    nodes = [Node("n0", {"cpu": 2})]
    fixed = {"allowPreemption": False, "allowPreemptOther": False}
    jobs = [Workload("w0", "q0", 0.0, 17, (TaskGroup(1, {"cpu": 1.5}),), settings=fixed)]
    jobs += [Workload(f"w{i}", "q0", 15.5 if i == 7 else 0.0, 1, (TaskGroup(1, {"cpu": 0.5}),), settings=fixed)
             for i in range(1, 9)]
    case = (queues, nodes, jobs, [ConfigChange(13, "q0", {"max": {"cpu": 1}})],
            {"quotaPreemptionEnabled": True, "preemptionEnabled": False})
    fast = _run(*case, reference=False)
    assert any(e["kind"] == "note" and e["time"] == 16.0 for e in fast)
    assert fast == _run(*case, reference=True)
