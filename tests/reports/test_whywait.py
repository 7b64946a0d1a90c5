"""Reports that show the mechanism, and "why did it wait?" (issue 17, items 2 and 3).

The reasons are recorded by the simulation as it runs (``makeway.sim.pending.ReasonLog``); these
tests run small scenarios whose reasons are known by construction and read them back through the
results, ``explain``, ``makeway pending`` and the report.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from makeway.cli import app
from makeway.config import build_state, parse_config
from makeway.registry import load_model
from makeway.reports import derive as d
from makeway.reports import plots, waiting
from makeway.reports.compare import compare_rows
from makeway.reports.explain import explain
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import workload_from_record
from tests.reports.helpers import REPO, run


def _results(model: str, records: list[dict], queues: dict | None = None, nodes: int = 1) -> dict:
    cfg = parse_config({
        "name": "why", "resources": ["cpu"],
        "nodes": [{"name": "n", "count": nodes, "capacity": {"cpu": 4}}],
        "queues": queues or {"root": {}, "a": {"parent": "root"}, "capped": {"parent": "root", "max": {"cpu": 2}}},
        "preemption": {"model": model}})
    wls = [workload_from_record(r) for r in records]
    rec = simulate(build_state(cfg), load_model(model), wls, (), SimOptions())
    meta = {"config": {"name": "why", "model": model, "path": None}, "trace": None}
    return json.loads(json.dumps(rec.results(meta), default=str))


def _job(i, submit, cpu, duration=100.0, queue="a", priority=0):
    return {"id": i, "queue": queue, "submit": submit, "duration": duration, "priority": priority,
            "tasks": [{"count": 1, "resources": {"cpu": cpu}}]}


@pytest.fixture(scope="module")
def blocked():
    """A holds the only node (0-100 s); B (all of it) waits first in line; C waits behind B, then is
    first in line once B runs; D asks more than its queue's max; E overtakes nobody."""
    return _results("none", [_job("A", 0, 4), _job("B", 1, 4), _job("C", 2, 2),
                             _job("D", 3, 3, queue="capped"), _job("E", 150, 4, duration=10)])


def _row(results, wid):
    return next(w for w in results["workloads"] if w["id"] == wid)


def test_reasons_are_recorded_as_they_change(blocked):
    assert _row(blocked, "A").get("reasons") is None                  # never waited
    assert _row(blocked, "B")["reasons"] == [[1.0, "resources", None]]
    assert _row(blocked, "C")["reasons"] == [[2.0, "priority", None], [100.0, "resources", None]]
    assert _row(blocked, "D")["reasons"] == [[3.0, "queue-max", "capped"]]
    assert _row(blocked, "C")["first_start"] == 200.0


def test_explain_names_blockers_time_and_overtakers(blocked):
    text = explain(blocked, "C")
    assert "waiting: priority" in text and "waiting: resources" in text
    assert "resources 100.0 s; priority 98.0 s" in text
    assert "overtaken by 0 later-submitted" in text
    text = explain(blocked, "D")
    assert "queue-max at queue capped" in text
    # E was submitted after D and started while D waited for ever (B and C came before it)
    assert "overtaken by 1 later-submitted workload(s) that started before it (0 of its own queue capped): E" in text


def test_pending_at_lists_reasons_and_checks_options(blocked, tmp_path):
    view = waiting.pending_at(blocked, 50.0)
    assert [(r["id"], r["reason"]) for r in view["pending"]] == [("B", "resources"), ("C", "priority"),
                                                                 ("D", "queue-max")]
    assert view["by_reason"] == {"priority": 1, "queue-max": 1, "resources": 1}
    assert [r["id"] for r in waiting.pending_at(blocked, 150.0, "a")["pending"]] == ["C", "E"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(blocked))
    cli = CliRunner()
    out = cli.invoke(app, ["pending", str(path), "--at", "2m", "--queue", "a", "--output", "json"])
    assert out.exit_code == 0, out.output
    assert [r["id"] for r in json.loads(out.output)["pending"]] == ["C"]
    out = cli.invoke(app, ["pending", str(path), "--at", "50"])
    assert out.exit_code == 0 and "queue-max" in out.output and "capped" in out.output
    for args, name in ((["--at", "soon"], "--at"), (["--at", "-5"], "--at"), (["--at", "1e9"], "--at"),
                       (["--queue", "nope"], "--queue")):
        bad = cli.invoke(app, ["pending", str(path), *args])
        assert bad.exit_code == 2 and name in bad.output, bad.output


def test_preemptor_waits_for_its_victims_and_yunikorn_names_the_delay():
    queues = {"root": {}, "low": {"parent": "root", "guaranteed": {"cpu": 0}},
              "high": {"parent": "root", "guaranteed": {"cpu": 4}}}
    recs = [_job("v1", 0, 2, 1000, "low"), _job("v2", 0, 2, 1000, "low"), _job("p", 10, 4, 50, "high", 10)]
    for rec in recs:
        rec["grace"] = 20.0
    r = _results("yunikorn", recs, queues)
    p = _row(r, "p")
    assert any(code == "preempting" for _, code, _ in p["reasons"])
    first_preempt = min(e["time"] for e in r["events"] if e["kind"] == "preempt")
    text = explain(r, "p")
    assert "a preemptor: it preempted" in text
    assert f"came {first_preempt - 10:,.1f} s after its submission" in text and "preemption.delay" in text


def test_series_hold_pending_limits_and_model_shares():
    yt = run(REPO / "examples" / "ytsaurus" / "cluster.yaml")
    ts = yt["timeseries"]
    q = ts["queues"]
    n = len(ts["t"])
    assert all(len(q[x]["pending_tasks"]) == n for x in q)
    for i in range(n):  # the root's pending work is its leaves'
        assert q["root"]["pending_tasks"][i] == q["prod"]["pending_tasks"][i] + q["research"]["pending_tasks"][i]
    assert q["prod"]["limits"][0][1] == {"cpu": 8}
    fair = [v for v in q["prod"]["shares"]["fair_share"] if v is not None]
    assert fair and max(fair) == pytest.approx(0.5, abs=0.01)   # prod's fair share once both pools run
    (cpu, memory) = plots.queue_mechanism(ts, d.capacity(yt), "ytsaurus")  # one figure per resource
    assert "fair share (YTsaurus) x cluster" in cpu and "strong guarantee" in cpu and "time (minutes)" in cpu
    assert "memory (GiB)" in memory
    kueue = run(REPO / "examples" / "kueue" / "cluster.yaml")
    queues = kueue["timeseries"]["queues"]
    assert any("drs" in (x.get("shares") or {}) for x in queues.values())
    # the ClusterQueues' quotas are native resourceGroups: the nominal quota comes from the model
    assert queues["team-a"]["limits"][0][1] == {"cpu": 8, "memory": 32 * 2**30}
    assert "nominal quota" in plots.queue_mechanism(kueue["timeseries"], d.capacity(kueue), "kueue")[0]
    assert "dominant resource share per queue" in plots.share_lines(kueue["timeseries"], "drs",
                                                                    "Kueue: dominant resource share per queue",
                                                                    "DRS", "drs")


def test_matrix_instants_and_compare_deltas(quickstart, quickstart_page, symphony):
    m = d.preemption_matrix(quickstart)
    assert m == {("prod", "batch"): quickstart["summary"]["preemptions"]}
    # quickstart preempts batch-1's 8 allocations at one instant: one marker, labelled with the count
    assert "InCohortReclamation (8 in 1 instants)" in quickstart_page
    assert "Who preempted whom" in quickstart_page
    rows = dict(compare_rows([quickstart, symphony], ["qs", "sym"]))
    assert rows["preemptions"] == [str(quickstart["summary"]["preemptions"]), str(symphony["summary"]["preemptions"])]
    delta = symphony["summary"]["preemptions"] - quickstart["summary"]["preemptions"]
    assert rows["  preemptions vs qs"] == ["-", f"{delta:+,}" if delta else "0"]


def test_explain_of_a_long_waiting_kth_job(tmp_path):
    """KTH SP2, jobs 4026-4189: user 2 submits four 98-processor jobs (of 100) within 90 s; under EASY
    backfilling 4034 waits behind the other three while small jobs backfill past it."""
    trace = REPO / "tests" / "data" / "swf" / "KTH-SP2-excerpt-wait.swf"
    out = CliRunner().invoke(app, ["simulate", "--trace", str(trace), "--model", "easy-backfill", "-q",
                                   "-o", str(tmp_path / "kth.json")])
    assert out.exit_code == 0, out.output
    r = json.loads((tmp_path / "kth.json").read_text())
    w = _row(r, "4034")
    assert w["wait"] > 12 * 3600
    everyone, mine = waiting.overtaken_by(r, w)
    assert len(everyone) == len(mine) == 25
    assert all(int(x) > 4034 for x in everyone)
    text = explain(r, "4034")
    assert "mostly: priority (work ahead of it in its queue's order is served first)" in text
    assert "resources 13,998 s" in text          # first in line while 4033 (13,998 s of run) held the machine
    assert "overtaken by 25 later-submitted workload(s)" in text
