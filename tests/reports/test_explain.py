import pytest

from makeway.errors import MakewayError
from makeway.reports.explain import explain
from tests.reports.helpers import evicted, minimal, preempt


def test_quickstart_explains_a_wait(quickstart):
    row = next(w for w in quickstart["workloads"] if w["id"] == "prod-urgent")
    text = explain(quickstart, "prod-urgent")
    assert "submitted to queue prod" in text
    assert f"waited {row['wait']:,.1f} s" in text
    assert "finished" in text


def test_preempted_workload_names_preemptor_rule_and_lost_work(symphony):
    victims = sorted({e["workload"] for e in symphony["events"] if e["kind"] == "preempt"})
    assert victims
    victim = victims[0]
    preemptors = {e["reason"]["preemptor"] for e in symphony["events"]
                  if e["kind"] == "preempt" and e["workload"] == victim}
    text = explain(symphony, victim)
    for p in preemptors:
        assert f"by {p}, rule symphony/rank-preemption" in text
    assert "values compared:" in text
    assert "work lost:" in text


def test_preemptor_is_told_whom_it_displaced(symphony):
    e = next(e for e in symphony["events"] if e["kind"] == "preempt")
    text = explain(symphony, e["reason"]["preemptor"])
    assert f"made way by preempting" in text and e["workload"] in text


def test_handmade_story():
    r = minimal()
    low = explain(r, "low")
    assert "by high, rule kueue/InCohortReclamation" in low
    assert "values compared: borrowing=True, priority=0" in low
    assert "lost 100.0 s of work (cpu 200 x s, memory 400Gi x s)" in low
    assert "work lost: 100.0 s of allocation time = cpu 200 x s, memory 400Gi x s" in low
    late = explain(r, "late")
    assert "queue team-a config changed: max -> {cpu: 4}" in late
    assert "note pending: queue team-a is at its max" in late
    assert "did not finish" in late
    high = explain(r, "high")
    assert "config changed" not in high  # the change was to another queue
    assert "made way by preempting 1 allocation(s) of low (kueue/InCohortReclamation)" in high


def test_lost_work_sums_over_evictions():
    r = minimal()
    r["events"] += [preempt(500.0, "low/0/0", "low", "team-a", "high", cpu=3, start=200.0),
                    evicted(500.0, "low/0/0", "low", "team-a", 300.0)]
    text = explain(r, "low")
    assert "work lost: 400.0 s of allocation time = cpu 1,100 x s" in text  # 2x100 + 3x300


def test_unknown_workload_lists_known_ids():
    with pytest.raises(MakewayError, match=r"unknown workload 'lo'.*did you mean low.*known ids: low, high, late"):
        explain(minimal(), "lo")
    with pytest.raises(MakewayError, match="no workloads"):
        explain({}, "x")
