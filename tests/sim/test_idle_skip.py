"""Skipping ticks and heartbeats over quiet stretches changes nothing but the work done (issue 17).

Each case runs the same inputs twice, ``skip_idle`` on and off, and compares everything a run
reports: events (starts, preemptions with their reasons and values, notes), per-workload rows and
the summary. The traces have hours of idle time between bursts that contend, so the skipped runs
really skip (asserted) and the bursts really preempt (asserted).
"""

from __future__ import annotations

import heapq
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.config import build_state, parse_config
from makeway.registry import load_model
from makeway.core.periodic import Row, Skipped, advance, push_order
from makeway.core.resources import EPS
from makeway.policies.ytsaurus import catchup
from makeway.policies.ytsaurus.heartbeat import Backoff
from makeway.sim.engine import HEARTBEAT, TICK, WAKE, SimOptions, Simulation, first_other_than
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


def _run(cfg, workloads, skip: bool, horizon: float | None = None, starts: bool = False) -> tuple[str, Simulation]:
    sim = Simulation(build_state(cfg), load_model(cfg.preemption.model, cfg.preemption.settings),
                     SimOptions(horizon=horizon, heartbeat_period=cfg.simulation.heartbeat_period, skip_idle=skip,
                                record_starts=starts))
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


def _backlog(seed: int) -> list:
    """Long batch jobs fill the cluster, then work piles up behind them in every queue and waits
    for hours (a contended cluster: the backlog is never empty while they run)."""
    rng = random.Random(seed)
    recs = [{"id": f"long{i}", "queue": "batch", "submit": float(i), "duration": 3_000 + 500 * i,
             "tasks": [{"count": 4, "resources": {"cpu": 1}}]} for i in range(3)]
    for i in range(12):
        q = rng.choice(["prod", "batch", "graceful"])
        recs.append({"id": f"w{i}", "queue": q, "submit": 50.0 + 400 * i + rng.random(), "duration": 300 + rng.randint(0, 900),
                     "tasks": [{"count": rng.choice([2, 4, 5]), "resources": {"cpu": 1}}]})
    return [workload_from_record(r) for r in sorted(recs, key=lambda r: (r["submit"], r["id"]))]


@pytest.mark.parametrize("settings", [
    {**SETTINGS, "enable_preemption": False},                      # the backlog just waits
    {**SETTINGS, "fair_share_starvation_timeout": 400},            # waits, starves, then preempts
])
def test_a_waiting_backlog_is_skipped_with_the_same_decisions(settings):
    """Quiet stretches with work pending: nothing fits and nobody starving can preempt; skipped up
    to the next starvation timeout at most."""
    cfg = _config(settings)
    wls = _backlog(seed=len(json.dumps(settings)))
    skipped, fast = _run(cfg, wls, True)
    full, slow = _run(cfg, wls, False)
    assert skipped == full
    assert fast.events_processed * 3 < slow.events_processed
    assert ('"kind": "preempt"' in full) == settings.get("enable_preemption", True)


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
        times = [1234000.05, 1234000.1, 1234567.891]
        for i in range(3):
            count, last, nxt = advance(times[i], period, 1234600.0)
            t, seen = times[i], []
            while t < 1234600.0:
                seen.append(t)
                t += period
            assert (count, last, nxt) == (len(seen), seen[-1], t)


def _naive(t: float, period: float, end: float, inclusive: bool, limit: int | None = None) -> list[float]:
    out = []
    while (t <= end if inclusive else t < end) and (limit is None or len(out) < limit):
        out.append(t)
        t += period
    return out + [t]


_PERIODS = st.sampled_from([0.2, 0.7, 5.0, 2.5, 0.1, 1.0 / 3, 3.0]) | st.floats(0.01, 10.0)
_STARTS = (st.floats(0.0, 1e7) | st.sampled_from([0.0, 0.2, 1234000.05])
           | st.integers(1, 23).map(lambda e: 2.0 ** e - 1.5))   # just below a binade's end


@settings(max_examples=300, deadline=None)
@given(_STARTS, _PERIODS, st.integers(0, 3000), st.booleans(), st.none() | st.integers(0, 4000))
def test_closed_form_advance_matches_repeated_additions(start, period, steps, inclusive, limit):
    """``advance`` jumps whole binades at once and still lands on the floats of the step-by-step loop."""
    end = start + steps * period
    seen = _naive(start, period, end, inclusive, limit)
    count, last, nxt = advance(start, period, end, inclusive, limit)
    assert (count, last, nxt) == (len(seen) - 1, seen[-2] if len(seen) > 1 else None, seen[-1])
    row = Row(TICK, period, start, period, count, last, nxt)
    if count:
        i = count // 3
        assert row.nth(i) == seen[i]
        assert row.times(seen[i], seen[count - 1]) == seen[i:count - 1]


def _skipped(now: float, end: float, inclusive: bool, tick: float, beat: float, offsets: list[float]) -> Skipped:
    sk = Skipped(now, end, inclusive)
    starts = [(TICK, "tick", tick, advance(0.0, tick, now, True)[2])]   # rows seeded at t=0 (checked above)
    starts += [(HEARTBEAT, f"n{i}", beat, advance(o, beat, now, True)[2]) for i, o in enumerate(offsets)]
    for kind, payload, period, first in starts:
        count, last, nxt = advance(first, period, end, inclusive)
        if count:
            (sk.ticks if kind == TICK else sk.beats).append(Row(kind, payload, first, period, count, last, nxt))
    return sk


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0.2, 0.7, 1.0, 0.25]), st.sampled_from([5.0, 3.0, 7.0, 2.5, 0.2]),
       st.sampled_from([0.0, 1.0, 2.5, 0.4]), st.integers(1, 40), st.floats(0.0, 3e6),
       st.floats(0.5, 400.0), st.floats(0.0, 1.0), st.booleans(), st.sampled_from([5.0, 3.0, 6.5]))
def test_catch_up_matches_replaying_every_skipped_call(update, beat, splay, nodes, now, span, lag, inclusive, backoff):
    """The last fair share refresh and every node's backoff, found from the rows in closed form, are
    those of calling ``schedule`` and ``Backoff.should_run`` at every skipped instant."""
    offsets = [splay * i / nodes for i in range(nodes)]
    sk = _skipped(now, now + span, inclusive, update, beat, offsets)
    instants = sorted({t for r in (*sk.ticks, *sk.beats) for t in _naive(r.start, r.period, sk.end, inclusive)[:-1]})
    since = now - lag * update
    s = since
    for x in instants:
        if x >= s + update - EPS:
            s = x
    assert catchup.last_update(since, update, sk) == s
    for r in sk.beats:
        b = Backoff(backoff, {} if lag > 0.5 else {r.payload: now - lag * backoff})
        ref = Backoff(backoff, dict(b.last))
        for h in _naive(r.start, r.period, sk.end, inclusive)[:-1]:
            ref.should_run(r.payload, h)
        catchup.catch_up_backoff(b, r.payload, r)
        assert b.last == ref.last


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(range(7))), max_size=60))
def test_first_other_than_a_kind_reads_the_heap_as_a_scan_does(entries):
    """``_skip_wakes`` finds the next event that is not a wake-up by walking only the wake-ups at
    the heap's top; on any heap it must give the earliest time a scan of every entry gives."""
    heap = [(float(t), kind, i, None) for i, (t, kind) in enumerate(entries)]
    heapq.heapify(heap)
    want = min((t for t, kind, _, _ in heap if kind != WAKE), default=math.inf)
    assert first_other_than(heap, WAKE) == want


def _uneven(seed: int, nodes: int, jobs: int) -> tuple[object, list]:
    """Nodes of different sizes, one-task and gang jobs of different widths and lengths in three
    queues: a finish leaves room on one node that a waiting job fits, and that job waits for
    that node's heartbeat while the other nodes' heartbeats find nothing."""
    rng = random.Random(seed)
    cfg = parse_config({
        "name": "uneven", "resources": ["cpu", "gpu"],
        "nodes": [{"name": f"n{i}", "capacity": {"cpu": rng.choice([4, 8]), "gpu": rng.choice([2, 4, 8])}}
                  for i in range(nodes)],
        "queues": {"root": {}, "prod": {"parent": "root", "weight": 3},
                   "batch": {"parent": "root", "max": {"gpu": rng.choice([6, 12, 40])}},
                   "dev": {"parent": "root"}},
        "preemption": {"model": "ytsaurus", "settings": {
            "fair_share_starvation_timeout": rng.choice([5, 30, 400]),
            "fair_share_update_period": rng.choice([0.2, 1.0, 0.7]),
            "heartbeat_period": rng.choice([5.0, 3.0, 2.5]), "heartbeat_splay": rng.choice([0.0, 1.0, 2.5]),
            "enable_preemption": rng.random() < 0.8}}})
    recs = []
    for i in range(jobs):
        recs.append({"id": f"j{i}", "queue": rng.choice(["prod", "batch", "batch", "dev"]),
                     "submit": round(rng.uniform(0, 600), rng.choice([0, 3])),
                     "duration": rng.choice([0, 40, 120.5, 300, 900]),
                     "tasks": [{"count": rng.choice([1, 1, 2, 3]),
                                "resources": {"cpu": rng.choice([1, 2]), "gpu": rng.choice([1, 2, 4])}}]})
    return cfg, [workload_from_record(r) for r in sorted(recs, key=lambda r: (r["submit"], r["id"]))]


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), nodes=st.integers(2, 6), jobs=st.integers(4, 24))
def test_skipping_around_nodes_that_decide_changes_nothing(seed, nodes, jobs):
    """Random contended clusters of uneven nodes: skipping (with verdicts that test which nodes'
    heartbeats decide) and not skipping give the same events, rows and summary."""
    cfg, wls = _uneven(seed, nodes, jobs)
    skipped, _ = _run(cfg, wls, True, 3_000.0)
    full, _ = _run(cfg, wls, False, 3_000.0)
    assert skipped == full


def _one_room(first_end: float, settings: dict | None = None) -> tuple[object, list]:
    """Eight one-task nodes, each held by a long job (the first ends at ``first_end``, one more
    every 1,000 s), and three jobs waiting for a node: each finish leaves room on one node only."""
    cfg = parse_config({
        "name": "one-room", "resources": ["cpu"],
        "nodes": [{"name": "n", "count": 8, "capacity": {"cpu": 4}}],
        "queues": {"root": {}, "a": {"parent": "root"}},
        "preemption": {"model": "ytsaurus", "settings": {"enable_preemption": False, **(settings or {})}}})
    recs = [{"id": f"long{i}", "queue": "a", "submit": 0.0, "duration": first_end + 1_000 * i,
             "tasks": [{"count": 1, "resources": {"cpu": 4}}]} for i in range(8)]
    recs += [{"id": f"wait{i}", "queue": "a", "submit": 10.0 + i, "duration": 100,
              "tasks": [{"count": 1, "resources": {"cpu": 4}}]} for i in range(3)]
    return cfg, [workload_from_record(r) for r in recs]


def test_heartbeats_of_nodes_with_nothing_to_decide_are_skipped_while_one_has_room(monkeypatch):
    """A job that fits only the node a finish freed waits for that node's heartbeat: until then
    the model names that node (``QuietExcept``) and the other nodes' heartbeats are not called,
    with the decisions of the run that calls every one."""
    from makeway.core.periodic import QuietExcept
    from makeway.policies.ytsaurus.model import YTsaurusModel

    cfg, wls = _one_room(5_000.0)
    verdicts, beats = [], []
    real_quiet, real_beat = YTsaurusModel.quiet, YTsaurusModel.heartbeat

    def quiet(self, state, now):
        v = real_quiet(self, state, now)
        verdicts.append(v)
        return v

    def beat(self, state, node, now):
        beats.append((node, now))
        return real_beat(self, state, node, now)

    monkeypatch.setattr(YTsaurusModel, "quiet", quiet)
    monkeypatch.setattr(YTsaurusModel, "heartbeat", beat)
    skipped, _ = _run(cfg, wls, True, 9_000.0)
    named = [v for v in verdicts if isinstance(v, QuietExcept)]
    assert named
    assert any(sum(v.decides.known.values()) == 1 for v in named)  # after a finish: its node alone
    fast_beats = len(beats)
    beats.clear()
    full, _ = _run(cfg, wls, False, 9_000.0)
    assert skipped == full
    assert '"first_start": 5000.' in full  # wait0 starts when long0's node is free
    # idle until the first finish, then each finish's node is the only one called in its window
    assert fast_beats * 20 < len(beats)


@pytest.mark.parametrize("horizon", [5_002.0, 5_003.3, 6_001.7, 6_004.1])
def test_a_horizon_inside_a_stretch_before_a_node_that_decides(horizon):
    """Every node beats at once (no splay) and a finish comes half-way between two beats: the
    freed node's task waits for the next one while the ticks are skipped. A horizon before it
    ends the run with the clock where the run without skipping leaves it, at the last periodic
    time before the horizon, and the same results."""
    cfg, wls = _one_room(5_000.5, {"heartbeat_splay": 0.0})
    skipped, fast = _run(cfg, wls, True, horizon)
    full, slow = _run(cfg, wls, False, horizon)
    assert fast.skipped_calls > 0
    assert fast.now == slow.now > horizon - 0.3
    assert skipped == full


# -- rows that meet at an instant after a skipped stretch keep the unskipped run's order ------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 0.1, 0.3]),
                          st.sampled_from([0.25, 0.5, 0.1])), min_size=2, max_size=6),
       st.sampled_from([1.0, 2.0, 3.3, 10.0]), st.randoms(use_true_random=False))
def test_push_order_is_the_order_of_the_unskipped_re_pushes(rows, end, rnd):
    """The oracle pops every call of the stretch from a heap by (time, seq) and re-pushes it with a
    fresh seq, as ``Simulation._handle`` does; ``push_order`` must give the order of the last
    pushes. Rows start at times that coincide and share periods on purpose, so they meet."""
    seqs = rnd.sample(range(100), len(rows))
    heap = [(t, s, i) for i, ((t, _), s) in enumerate(zip(rows, seqs))]
    heapq.heapify(heap)
    seq = 1000
    last_push: dict[int, int] = {}
    while heap and heap[0][0] < end:
        t, _, i = heapq.heappop(heap)
        seq += 1
        last_push[i] = seq
        heapq.heappush(heap, (t + rows[i][1], seq, i))
    moved = []
    for i, ((t, p), s) in enumerate(zip(rows, seqs)):
        count, last, nxt = advance(t, p, end)
        if count:
            moved.append((Row(HEARTBEAT, f"n{i}", t, p, count, last, nxt), s, i))
    assert sorted(last_push) == sorted(m[2] for m in moved)
    assert [m[2] for m in push_order(moved)] == sorted(last_push, key=last_push.get)


def test_heartbeats_that_meet_after_a_skipped_stretch_keep_their_order():
    """Splay 3 over 3 nodes of one unit puts n1's first heartbeat at 1.0, on n0's chain
    (4 x 0.25). Unskipped, n1's beat (pushed at the start) comes before n0's (pushed at 0.75), so
    the first of three tasks submitted at 1.0 starts on n1; skipping the empty stretch before 1.0
    must keep that (it once re-pushed the rows by their first skipped time: n0 first)."""
    cfg = parse_config({
        "name": "meet", "resources": ["gpu"], "nodes": [{"name": "n", "count": 3, "capacity": {"gpu": 1}}],
        "queues": {"root": {}, "a": {"parent": "root"}},
        "preemption": {"model": "ytsaurus", "settings": {
            "enable_preemption": False, "fair_share_update_period": 1.0, "heartbeat_period": 0.25,
            "heartbeat_splay": 3.0}}})
    wls = [workload_from_record({"id": f"w{k}", "queue": "a", "submit": 1.0, "duration": 5.0,
                                 "tasks": [{"count": 1, "resources": {"gpu": 1}}]}) for k in range(3)]
    skipped, fast = _run(cfg, wls, True, starts=True)
    full, _ = _run(cfg, wls, False, starts=True)
    assert fast.skipped_calls > 0
    assert skipped == full
    first = next(e for e in json.loads(full)["events"] if e["kind"] == "start")
    assert first["node"].endswith("1") and first["time"] == 1.0
