"""Each example under examples/live/ driven through LiveCore with a stepped clock and a scripted agent:
the model preempts live as it does in the simulator (same rule, same victims, same preemptor), the
victim is requeued once its exit is confirmed and restarts after the preemptor finishes.

The scripted agent starts what its desired set says to run, exits a stopped attempt half-way to its
deadline, and ends each task after the trace's duration (scaled down) of running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from makeway.config import load_config, trace_path
from makeway.live.core import Event, LiveCore
from makeway.live.spec import parse_job
from makeway.sim.run import run

LIVE = Path(__file__).resolve().parents[2] / "examples" / "live"
MODELS = ["kueue", "yunikorn", "ytsaurus", "symphony"]


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def drive(cfg, recs, step=0.25, until=120.0):
    core = LiveCore(cfg)
    seq = 0
    started_at, stop_at = {}, {}
    duration = {r["id"]: r["duration"] / 4 for r in recs}
    submit_at = {r["id"]: r["submit"] for r in recs}
    now = 0.0
    log = []
    passes = []
    while now < until:
        evs = []

        def ev(kind, payload):
            nonlocal seq
            seq += 1
            evs.append(Event(seq, kind, payload, now))

        if now == 0.0:
            for n in cfg.nodes:
                ev("node", {"node": n.name, "capacity": dict(n.capacity)})
        for r in recs:
            if submit_at[r["id"]] is not None and r["submit"] <= now:
                spec = {k: v for k, v in r.items() if k not in ("submit", "duration")}
                ev("submit", {"job": parse_job({**spec, "command": ["true"]}, cfg)})
                submit_at[r["id"]] = None
        for node in core.state.nodes:
            for a in core.desired(node, 0.0)[1]:
                aid = a["attempt"]
                if a["action"] == "run" and aid not in started_at:
                    started_at[aid] = now
                    ev("started", {"attempt": aid, "node": node})
                elif a["action"] == "run" and now - started_at[aid] >= duration[a["job"]]:
                    ev("exited", {"attempt": aid, "node": node, "exit_code": 0, "signal": None})
                elif a["action"] == "stop":
                    stop_at.setdefault(aid, now)
                    if now >= (stop_at[aid] + a["deadline"]) / 2 or now >= a["deadline"]:
                        ev("exited", {"attempt": aid, "node": node, "exit_code": None, "signal": 15})
        due = core.next_due()
        if evs or (due is not None and due <= now):
            passes.append((evs, now))
            log.extend(core.run_pass(evs, now))
        if all(j.state == "finished" for j in core.jobs.values()) and len(core.jobs) == len(recs):
            break
        now = round(now + step, 6)
    return core, log, passes


@pytest.mark.parametrize("model", MODELS)
def test_live_example_makes_way_like_the_simulator(model):
    path = LIVE / model / "cluster.yaml"
    cfg = load_config(path)
    recs = records(trace_path(cfg, path))
    sim = run(cfg, trace_path(cfg, path)).results({})
    sim_pre = [e for e in sim["events"] if e.get("kind") == "preempt"]

    core, log, passes = drive(cfg, recs)
    pre = [r for r in log if r["kind"] == "preempt"]
    assert pre, f"{model}: no live preemption"
    assert {r["reason"]["model"] for r in pre} == {model}
    assert {r["workload"] for r in pre} == {"batch-1"}
    assert all((r["reason"]["preemptor"] or "urgent-1").startswith("urgent-1") for r in pre)
    assert all(j.state == "finished" for j in core.jobs.values()), {j.id: j.state for j in core.jobs.values()}
    batch = core.jobs["batch-1"]
    assert batch.preemptions and any(a.endswith("#2") for a in batch.attempts)
    assert core.state.check_invariants() == []
    assert {e["reason"]["rule"] for e in sim_pre} == {r["reason"]["rule"] for r in pre}
    assert sorted(e["allocation"] for e in sim_pre) == sorted(r["task"] for r in pre)

    replay = LiveCore(cfg)
    for evs, now in passes:
        replay.run_pass(evs, now)
    assert replay.digest == core.digest
