"""The compiled walk (``sim/fast/kueue_walk``, slice 1 of ``docs/plans/compiled-walks.md``) goes
through a logged Kueue run's instants as ``kueue_record.LogRun`` does: the same feed of codes and
instant marks for the recorder's sums, the same evicted pods in the same order, on the same
nodes, with the same start times; and a log the engine would refuse is refused."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from makeway.benchmarks import kueue_baseline  # noqa: E402
from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.registry import load_model  # noqa: E402
from makeway.sim.engine import SimOptions, make_simulation  # noqa: E402
from makeway.sim.fast import kueue, kueue_record  # noqa: E402
from makeway.sim.fast import kueue_walk as KW  # noqa: E402
from makeway.sim.fast.kueue_walk_reasons import B_PEND  # noqa: E402
from tests.kueue.helpers import draw_cluster  # noqa: E402


def _walked(state_of, workloads, model_settings=None, **options):
    """The recorded run (``LogRun``) and ``walk`` over the same packed log; None where the run
    is not recorded from its log."""
    seen = {}
    real = kueue_record.LogRun.__init__

    def capture(self, packed, state, model, opts, wls, late):
        real(self, packed, state, model, opts, wls, late)
        seen.update(packed=packed, state=state, model=model, wls=wls, late=late, last_t=self.recorder.last_t)

    kueue_record.LogRun.__init__ = capture
    try:
        sim = make_simulation(state_of(), load_model("kueue", dict(model_settings or {})), SimOptions(**options), False)
        rec = sim.run(sorted(workloads, key=lambda w: w.submit))
    finally:
        kueue_record.LogRun.__init__ = real
    if not isinstance(sim, kueue.CompiledKueue) or sim.log_run is None:
        return None
    horizon = options.get("horizon")
    out = KW.run_walk(seen["packed"], seen["wls"], seen["late"], seen["state"], seen["model"], horizon,
                      seen["last_t"], kueue_record.LogRun.MAX_ROUNDS)
    return rec, out, seen


def _check(rec, out, seen):
    assert out["status"] == KW.OK, out
    assert np.array_equal(np.frombuffer(rec.feed, np.int64), out["feed"])
    assert np.array_equal(np.frombuffer(rec._marks, np.float64), out["marks"])
    assert out["stopped"] == (rec.stopped_reason == "horizon")
    tids = [sorted(wl.task_ids()) for wl in seen["wls"]]
    names = list(seen["state"].nodes)
    rows = [(r[KW.C_T], tids[int(r[KW.C_W])][int(r[KW.C_POD])], names[int(r[KW.C_NODE])], r[KW.C_START])
            for r in out["events"].tolist() if r[KW.C_KIND] == KW.EV_PREEMPT]
    assert rows == [(e["time"], e["allocation"], e["node"], e["start"]) for e in rec.events if e["kind"] == "preempt"]
    reasons = rec.reasons
    assert KW.trails(out["reasons"], seen["packed"]) == reasons.trail
    pending = out["reasons"][1][B_PEND]
    assert sorted(np.nonzero(pending[:len(seen["wls"])])[0].tolist()) == sorted(reasons.pending)


@st.composite
def clusters(draw):
    queues, nodes, workloads, resources = draw_cluster(draw, wide=True)
    options = {"horizon": draw(st.one_of(st.none(), st.sampled_from([5.0, 20.0]))),
               "record_starts": draw(st.booleans())}
    return queues, nodes, workloads, resources, draw(st.booleans()), options


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_walk_feeds_and_evicts_as_the_recording_does(drawn):
    queues, nodes, workloads, resources, prioritize, options = drawn
    got = _walked(lambda: ClusterState(resources, queues, nodes), workloads,
                  {"prioritizePreemptorWorkloads": prioritize}, no_progress_window=32.0, **options)
    if got is not None:
        _check(*got)


@pytest.mark.parametrize("prioritize", [False, True])
def test_the_kueue_baseline_walks_as_recorded(prioritize):
    """Kueue's perf scenario at 5%: hundreds of preemptions, requeued victims restarted."""
    state, workloads = kueue_baseline(scale=0.05)
    got = _walked(lambda: kueue_baseline(scale=0.05)[0], workloads, {"prioritizePreemptorWorkloads": prioritize})
    assert got is not None and sum(got[1]["events"][:, KW.C_KIND] == KW.EV_PREEMPT) > 500
    _check(*got)


def _gang():
    queues = [Queue("cq", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 12}]}]}],
        "preemption": {"withinClusterQueue": "LowerPriority"}})]
    nodes = [Node(f"n{i:02d}", {"cpu": 1}, {"flavor": "f"}) for i in range(12)]
    workloads = [Workload("big", "cq", 0.0, 100.0, (TaskGroup(12, {"cpu": 1}),), 0),
                 Workload("hi", "cq", 1.0, 5.0, (TaskGroup(1, {"cpu": 1}),), 5),
                 Workload("hi2", "cq", 50.0, 5.0, (TaskGroup(1, {"cpu": 1}),), 5)]
    return (lambda: ClusterState(["cpu"], queues, nodes)), workloads


def test_a_gangs_pods_leave_in_name_order_twice():
    """"big/0/10" leaves before "big/0/2"; restarted in that order, it is evicted again by a later
    preemptor, its pods now placed by name."""
    state_of, workloads = _gang()
    got = _walked(state_of, workloads, record_starts=True)
    assert got is not None and sum(got[1]["events"][:, KW.C_KIND] == KW.EV_PREEMPT) == 24
    _check(*got)


def test_a_log_the_engine_refuses_is_refused():
    state_of, workloads = _gang()
    _, out, seen = _walked(state_of, workloads)
    packed = seen["packed"]
    packed.LT[1] += 1.0
    bad = KW.run_walk(packed, seen["wls"], seen["late"], seen["state"], seen["model"], None, seen["last_t"], 16)
    assert bad["status"] == KW.AT_OTHER_INSTANT
    packed.LT[1] -= 1.0
    packed.LOG[0, 3] += 1  # the first start claims a pod more than its workload has
    again = KW.run_walk(packed, seen["wls"], seen["late"], seen["state"], seen["model"], None, seen["last_t"], 16)
    assert again["status"] == KW.POD_COUNT


def test_a_run_reporting_its_progress_keeps_the_python_walk_and_its_document():
    """A ``progress`` callback needs the instants as they pass, which only ``LogRun`` reports: the
    document is the one the compiled walk's tapes give."""
    import json

    docs, seen = [], []
    for progress in (None, lambda t, n: seen.append(t)):
        state, workloads = kueue_baseline(scale=0.05)
        sim = make_simulation(state, load_model("kueue", {}), SimOptions(progress=progress), False)
        doc = json.dumps(sim.run(workloads).results(), default=str)
        docs.append((type(sim.log_run).__name__, doc))
    assert [d[0] for d in docs] == ["TapeRun", "LogRun"] and docs[0][1] == docs[1][1] and seen


def test_a_trail_longer_than_the_tape_is_recorded_by_the_python_walk(monkeypatch):
    """The trail tape's room is an estimate: where it runs out, the walk flags it (``R_FULL``)
    and writes no row past it, and ``TapeRun`` records the run with ``LogRun``."""
    import json

    from makeway.sim.fast import kueue_walk_reasons as KR

    def run(short):
        state, workloads = kueue_baseline(scale=0.05)
        sim = make_simulation(state, load_model("kueue", {}), SimOptions(), False)
        return json.dumps(sim.run(workloads).results(), default=str)

    want = run(False)
    inputs, python, calls = KW._reason_inputs, kueue_record.LogRun._run, []

    def short_tape(*args):
        rin, (SI, SB, SF, EX) = inputs(*args)
        small = {KR.I_TW: np.zeros(3, np.int64), KR.I_TC: np.zeros(3, np.int64), KR.I_TD: np.zeros(3, np.int64)}
        return rin, (tuple(small.get(i, a) for i, a in enumerate(SI)), SB, (SF[0], np.zeros(3, np.float64)), EX)

    def python_walk(self):
        calls.append(type(self).__name__)
        return python(self)

    monkeypatch.setattr(KW, "_reason_inputs", short_tape)
    monkeypatch.setattr(kueue_record.LogRun, "_run", python_walk)
    same = run(True) == want  # not in the assert: pytest would diff two documents of megabytes
    assert same and calls == ["TapeRun"]
