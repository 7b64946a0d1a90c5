"""Preemptible classes, victims, overcommit and backoff, row by row."""

import pytest

from makeway.policies.ytsaurus import classify, heartbeat, starvation
from makeway.policies.ytsaurus.classify import AP, NP, P


def run(sizes, fair, demand, total=100.0, agg=0.2, thr=1.0, np_thr=None):
    allocs = [(f"a{i + 1}", [float(s)]) for i, s in enumerate(sizes)]
    pub = classify.publish([fair], [demand])
    out = classify.classify(allocs, pub, [total], np_thr, agg, thr)
    return [out[a] for a, _ in allocs]


@pytest.mark.parametrize("sizes,fair,demand,kw,want", [
    ([25] * 4, 0.5, 1.0, {}, [NP, AP, P, P]),                       # equality is "not below"
    ([10] * 10, 0.6, 1.0, {}, [NP] * 2 + [AP] * 4 + [P] * 4),
    ([50], 1 / 3, 0.5, {"agg": 0.5}, [NP]),                         # a lone allocation is never preemptible
    ([10] * 4, 0.4, 0.4, {"agg": 0.5}, [NP, NP, AP, AP]),          # fair == demand: nothing plainly preemptible
    ([1] * 6, 0.5, 1.0, {"agg": 0.02, "np_thr": [4.0]}, [NP] * 4 + [AP] * 2),  # absolute threshold
    ([1] * 6, 0.5, 1.0, {"agg": 0.02, "np_thr": [0.0]}, [NP] + [AP] * 5),  # threshold 0 never triggers
])
def test_prefix_rule(sizes, fair, demand, kw, want):
    assert run(sizes, fair, demand, **kw) == want


def cand(i, status, cpu, start):
    return heartbeat.Cand(i, "op", status, status, start, start, [float(cpu)])


def test_victims_youngest_preemptible_first_and_greedy():
    cands = [cand("y1", P, 8, 1), cand("y2", P, 2, 2), cand("y3", P, 2, 3)]
    out = heartbeat.preempt_after_scheduling([16 + 8 + 4], [16], cands)
    assert [c.id for c, _ in out] == ["y3", "y2", "y1"]


def test_overcommit_keeps_oldest_and_skips_misfits():
    allocs = [cand("n1", NP, 4, 1), cand("n2", NP, 4, 5), cand("a1", AP, 3, 2), cand("p1", P, 1, 3), cand("p2", P, 2, 4)]
    assert [c.id for c in heartbeat.overcommit_victims(allocs, [10])] == ["a1", "p2"]


@pytest.mark.parametrize("stage,want", [("preemptive_normal", ["p"]), ("preemptive_aggressive", ["a", "p"])])
def test_stage_levels(stage, want):
    cands = [cand("n", NP, 1, 1), cand("a", AP, 1, 2), cand("p", P, 1, 3)]
    assert [c.id for c in heartbeat.stage_candidates(cands, stage)] == want


def test_backoff_is_per_node_and_strict():
    b = heartbeat.Backoff(5)
    assert [b.should_run("n", t) for t in (0, 2, 5, 5.5, 7, 10.5, 11)] == [True, False, False, True, False, False, True]
    assert b.should_run("other", 1)


@pytest.mark.parametrize("obs,want", [
    ([(0, True), (30, True), (30.5, True)], starvation.STARVING),
    ([(0, True), (20, False), (40, True), (60, True)], starvation.NON),
    ([(0, True), (121, True)], starvation.AGGRESSIVE),
])
def test_starvation_clock(obs, want):
    p = starvation.Params(0.8, 30, 120, True, True)
    c = starvation.Clock()
    for t, below in obs:
        c = starvation.step(c, below, t, p)
    assert c.status == want
