import pytest

from makeway.errors import MakewayError
from makeway.reports.derive import fmt_time
from makeway.reports.explain import explain
from tests.reports.helpers import REPO, evicted, minimal, preempt, run

KUEUE = REPO / "examples" / "kueue" / "cluster.yaml"


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


def _restart(time, alloc, node, evicted_at):
    return {"time": time, "allocation": alloc, "node": node, "evicted_at": evicted_at}


def _with_restarts(second_preemption: bool) -> dict:
    """``minimal`` as the current recorder writes it: low is evicted at 100 and restarts when high
    finishes at 400; optionally evicted again at 500 and restarted at 600."""
    r = minimal()
    rows = {w["id"]: w for w in r["workloads"]}
    for w in rows.values():
        w["restarts"] = []
    rows["low"]["restarts"].append(_restart(400.0, "low/0/0", "n1", 100.0))
    if second_preemption:
        r["events"] += [preempt(500.0, "low/0/0", "low", "team-a", "late", start=400.0),
                        evicted(500.0, "low/0/0", "low", "team-a", 100.0)]
        rows["low"]["restarts"].append(_restart(600.0, "low/0/0", "n0", 500.0))
        rows["low"]["finish"] = 1300.0
    return r


def _in_order(text: str, parts: list[str]) -> None:
    at = [text.find(p) for p in parts]
    assert -1 not in at, f"missing {parts[at.index(-1)]!r} in:\n{text}"
    assert at == sorted(at), f"out of order {parts} in:\n{text}"


@pytest.mark.parametrize("name, results, workload, in_order, absent", [
    ("preempted once", _with_restarts(False), "low",
     ["t=0s  first started", "t=100s  preempted: allocation low/0/0", "by high, rule kueue/InCohortReclamation",
      "t=100s  evicted: allocation low/0/0",
      "t=400s  restarted: allocation low/0/0 on node n1 (waited 300.0 s since its eviction at t=100s)",
      "it restarted when high finished and freed capacity", "t=700s  finished",
      "restarted 1 time(s) after eviction, last at t=400s",
      "finished at t=700s, 700.0 s after first start, 300.0 s after its last restart"],
     ["not in these results"]),
    ("preempted twice", _with_restarts(True), "low",
     ["t=100s  preempted", "t=400s  restarted: allocation low/0/0 on node n1",
      "t=500s  preempted: allocation low/0/0", "by late, rule kueue/InCohortReclamation",
      "t=600s  restarted: allocation low/0/0 on node n0 (waited 100.0 s since its eviction at t=500s)",
      "t=1,300s  finished",
      "restarted 2 time(s) after eviction, last at t=600s; waited 400.0 s in all between eviction and restart"],
     []),
    ("older file without restarts", minimal(), "low",
     ["t=100s  evicted", "restart times are not in these results"], ["restarted"]),
])
def test_restarts_table(name, results, workload, in_order, absent):
    text = explain(results, workload)
    _in_order(text, in_order)
    for part in absent:
        assert part not in text, f"{name}: unexpected {part!r} in:\n{text}"


def test_simulated_restart_is_told_after_its_preemption():
    r = run(KUEUE)
    row = next(w for w in r["workloads"] if w.get("restarts"))
    first_restart = row["restarts"][0]
    text = explain(r, row["id"])
    _in_order(text, ["first started", "preempted: allocation", "evicted: allocation",
                     f"{fmt_time(first_restart['time'])}  restarted: allocation {first_restart['allocation']} "
                     f"on node {first_restart['node']}", "finished"])


def test_never_preempted_workload_has_no_restart_line():
    r = run(KUEUE)
    calm = [w for w in r["workloads"] if not w["preemptions"]]
    assert calm
    for row in calm:
        assert row["restarts"] == []
        text = explain(r, row["id"])
        assert "restarted" not in text and "not in these results" not in text, text


def test_start_events_of_a_restart_are_not_repeated():
    r = _with_restarts(False)
    r["events"].append({"time": 400.0, "kind": "start", "allocation": "low/0/0", "workload": "low", "node": "n1"})
    text = explain(r, "low")
    assert "start of allocation low/0/0" not in text and "restarted: allocation low/0/0 on node n1" in text
