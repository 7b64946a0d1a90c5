"""Skipping ticks and heartbeats over quiet stretches changes nothing but the work done (issue 17).

Each case runs the same inputs twice, ``skip_idle`` on and off, and compares everything a run
reports: events (starts, preemptions with their reasons and values, notes), per-workload rows and
the summary. The traces have hours of idle time between bursts that contend, so the skipped runs
really skip (asserted) and the bursts really preempt (asserted).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from makeway.config import build_state, parse_config
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, Simulation, _advance
from makeway.sim.trace import workload_from_record


def _config(settings: dict, nodes: int = 3, sim: dict | None = None) -> object:
    return parse_config({
        "name": "idle-gaps", "resources": ["cpu"],
        "nodes": [{"name": "n", "count": nodes, "capacity": {"cpu": 4}}],
        "queues": {"root": {}, "prod": {"parent": "root", "guaranteed": {"cpu": 6}, "weight": 2},
                   "batch": {"parent": "root", "max": {"cpu": 12}},
                   "graceful": {"parent": "root"}},
        "preemption": {"model": "ytsaurus", "settings": settings},
        "simulation": sim or {}})


def _trace(seed: int, bursts: int = 2, gap: float = 2_000.0) -> list:
    """Bursts of batch work that fills the cluster, then prod work that must take its share,
    separated by ``gap`` seconds of nothing; a zero-length job in every burst."""
    rng = random.Random(seed)
    recs, t = [], 0.0
    for b in range(bursts):
        for i in range(4):
            recs.append({"id": f"b{b}-{i}", "queue": "batch", "submit": t + i, "duration": 200 + rng.randint(0, 200),
                         "tasks": [{"count": 3, "resources": {"cpu": 1}}]})
        recs.append({"id": f"z{b}", "queue": "batch", "submit": t + 5, "duration": 0,
                     "tasks": [{"count": 1, "resources": {"cpu": 1}}]})
        recs.append({"id": f"p{b}", "queue": "prod", "submit": t + 30 + rng.randint(0, 30), "duration": 100,
                     "tasks": [{"count": 6, "resources": {"cpu": 1}}]})
        t += gap + rng.randint(0, 99) + rng.random()
    return [workload_from_record(r) for r in sorted(recs, key=lambda r: (r["submit"], r["id"]))]


def _run(cfg, workloads, skip: bool, horizon: float | None = None) -> tuple[str, Simulation]:
    sim = Simulation(build_state(cfg), load_model(cfg.preemption.model, cfg.preemption.settings),
                     SimOptions(horizon=horizon, heartbeat_period=cfg.simulation.heartbeat_period, skip_idle=skip))
    sim.add_workloads(workloads)
    rec = sim.run()
    res = rec.results({})
    return json.dumps({k: res[k] for k in ("summary", "workloads", "events")}, sort_keys=True, default=str), sim


SETTINGS = {"fair_share_starvation_timeout": 10, "fair_share_update_period": 1.0}


@pytest.mark.parametrize("settings, sim", [
    (SETTINGS, None),                                                   # heartbeat = backoff (5 s): every other
    ({**SETTINGS, "heartbeat_period": 7.0, "heartbeat_splay": 2.5}, None),  # heartbeats further apart: every one
    ({**SETTINGS, "heartbeat_period": 3.0, "fair_share_update_period": 0.7}, None),  # closer: replayed
    ({**SETTINGS, "heartbeat_splay": 0.0}, {"heartbeat_period": 2.5}),  # all nodes at once, config period
])
def test_skipped_run_makes_the_same_decisions(settings, sim):
    cfg = _config(settings, sim=sim)
    wls = _trace(seed=len(json.dumps(settings)))
    skipped, fast = _run(cfg, wls, True)
    full, slow = _run(cfg, wls, False)
    assert skipped == full
    assert fast.skipped_calls > 0.9 * (slow.events_processed - fast.events_processed)
    assert fast.events_processed * 3 < slow.events_processed
    assert '"kind": "preempt"' in full


@pytest.mark.parametrize("horizon", [1_500.0, 2_000.0 + 1e-3])
def test_horizon_inside_an_idle_gap_stops_where_the_unskipped_run_stops(horizon):
    cfg = _config(SETTINGS)
    wls = _trace(seed=7)
    skipped, fast = _run(cfg, wls, True, horizon)
    full, slow = _run(cfg, wls, False, horizon)
    assert skipped == full and fast.now == slow.now
    assert fast.skipped_calls > 0


def test_advance_adds_as_the_unskipped_run_does():
    """The skipped times are the floats the run's repeated ``now + period`` would give."""
    for period in (0.2, 5.0, 0.3):
        times = np.array([1234000.05, 1234000.1, 1234567.891])
        occ, counts, nxt = _advance(times, period, 1234600.0, inclusive=False)
        for i in range(3):
            t, seen = float(times[i]), []
            while t < 1234600.0:
                seen.append(t)
                t += period
            assert occ[i, :counts[i]].tolist() == seen and float(nxt[i]) == t
