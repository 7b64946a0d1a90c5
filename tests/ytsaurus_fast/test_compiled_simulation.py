"""The whole path a YTsaurus run takes by default when it is inside the compiled loop's class:
``make_simulation`` hands it to ``CompiledYTsaurus``, the loop (``policies.ytsaurus.fast``) decides
it, ``ytsaurus_record.LogRun`` records it. The document must be the general engine's, byte for
byte once dumped: events (starts, preemptions with their reasons, starvation notes), samples with
the pools' shares, pending-reason trails, counters.

``test_fast_loop`` and ``test_fast_stages`` check the loop call by call; this checks the loop and
the recording together, as users get them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")
pytestmark = pytest.mark.xdist_group("ytsaurus-loop")

from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.ytsaurus.model import YTsaurusModel  # noqa: E402
from makeway.sim.engine import SimOptions, make_simulation, simulate  # noqa: E402
from makeway.sim.fast import ytsaurus  # noqa: E402
from makeway.sim.fast.ytsaurus_record import YTsaurusRecorder  # noqa: E402
from tests.ytsaurus_fast.test_fast_loop import _maker, cases  # noqa: E402
from tests.ytsaurus_fast.test_fast_stages import _pools_fight, contended  # noqa: E402


def _dump(rec) -> str:
    return json.dumps(rec.results(), default=str)


def _first_difference(got: str, ref: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
    return f"documents differ at {at}: {got[max(0, at - 300):at + 200]!r} != {ref[max(0, at - 300):at + 200]!r}"


def compiled_same(make, settings_, **options):
    """The compiled path's document against the general engine's; the compiled recorder."""
    state, wls = make()
    ref = _dump(simulate(state, YTsaurusModel(settings_), wls, options=SimOptions(engine="general", **options)))
    state, wls = make()
    sim = make_simulation(state, YTsaurusModel(settings_), SimOptions(**options), False)
    assert isinstance(sim, ytsaurus.CompiledYTsaurus)
    rec = sim.run(iter(sorted(wls, key=lambda w: w.submit)))
    assert sim.log_run is not None and sim.not_recorded is None, sim.not_recorded  # not a fallback
    got = _dump(rec)
    assert got == ref, _first_difference(got, ref)
    return rec


def _events(rec):
    kinds = {e["kind"] for e in rec.events}
    event("preemptions" if "preempt" in kinds else "no preemption")
    event("notes" if "note" in kinds else "no note")
    event("stopped at the horizon" if rec.stopped_reason == "horizon" else "ran to the end")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_without_preemption_the_document_is_the_engines(case, record_starts):
    queues, nodes, jobs, s = case
    _events(compiled_same(_maker(queues, nodes, jobs), s, record_starts=record_starts))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended(), st.booleans())
def test_with_preemption_the_document_is_the_engines(case, record_starts):
    queues, nodes, jobs, s = case
    _events(compiled_same(_maker(queues, nodes, jobs), s, record_starts=record_starts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended(), st.sampled_from([0.0, 1.0, 3.3, 7.5, 20.0, 60.0, 150.0, 400.0]))
def test_a_horizon_cuts_the_document_where_the_engine_does(case, horizon):
    queues, nodes, jobs, s = case
    _events(compiled_same(_maker(queues, nodes, jobs), s, horizon=horizon))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended(), st.sampled_from([1.0, 4.0, 10.0]))
def test_a_short_no_progress_window(case, window):
    """Where the loop stops because the engine's no-progress watch might (``STOP_WATCH``), the
    general engine runs the model; elsewhere the compiled path records: the same document."""
    queues, nodes, jobs, s = case
    make = _maker(queues, nodes, jobs)
    state, wls = make()
    ref = _dump(simulate(state, YTsaurusModel(s), wls,
                         options=SimOptions(engine="general", no_progress_window=window)))
    state, wls = make()
    sim = make_simulation(state, YTsaurusModel(s), SimOptions(no_progress_window=window), False)
    got = _dump(sim.run(wls))
    assert sim.not_recorded in (None, "the no-progress watch might stop it")
    event("recorded" if sim.log_run is not None else "the watch: the engine ran")
    assert got == ref, _first_difference(got, ref)


def test_a_starving_pool_preempts_and_the_document_is_the_engines():
    """Built: ``b``'s long tasks fill the cluster, ``a``'s burst starves and takes them back."""
    s = {"fair_share_update_period": 1.0, "heartbeat_period": 0.5, "fair_share_starvation_timeout": 2.0,
         "preemptive_scheduling_backoff": 1.0}
    rec = compiled_same(_pools_fight, s, record_starts=True)
    assert rec.preemptions > 0 and rec.note_counts.get("starvation", 0) > 0


def test_outside_the_class_the_engine_runs():
    """A pool with a ``max`` is outside the loop's class: the general engine decides and records."""
    state = ClusterState(["gpu"], [Queue("root"), Queue("a", "root", max={"gpu": 2})], [Node("n0", {"gpu": 4})])
    sim = make_simulation(state, YTsaurusModel({}), SimOptions(), False)
    assert isinstance(sim, ytsaurus.CompiledYTsaurus)
    rec = sim.run([Workload("w0", "a", 0.0, 5.0, (TaskGroup(1, {"gpu": 1}),))])
    assert sim.log_run is None and "max" in sim.not_recorded and len(rec.finish_t) == 1


def test_a_run_the_log_cannot_record_is_the_engines(monkeypatch):
    """Where ``LogRun`` may not record (the loop stopped where the engine's no-progress watch
    might, or ``check_invariants``), the general engine runs the model: the same document."""
    from makeway.sim.fast import ytsaurus_record

    def make():
        queues = [Queue("root"), Queue("a", "root"), Queue("b", "root")]
        jobs = [Workload(f"w{k}", "ab"[k % 2], 0.5 * k, 3.0, (TaskGroup(1 + k % 2, {"gpu": 1}),)) for k in range(8)]
        return ClusterState(["gpu"], queues, [Node("n0", {"gpu": 2}), Node("n1", {"gpu": 1})]), jobs
    s = {"fair_share_update_period": 1.0, "heartbeat_period": 0.5}
    state, wls = make()
    ref = _dump(simulate(state, YTsaurusModel(s), wls, options=SimOptions(engine="general")))
    for options, patch in ((SimOptions(check_invariants=True), False), (SimOptions(), True)):
        if patch:
            monkeypatch.setattr(ytsaurus_record, "why_not", lambda ran: "stopped by the watch (forced)")
        state, wls = make()
        sim = make_simulation(state, YTsaurusModel(s), options, False)
        got = _dump(sim.run(wls))
        assert sim.log_run is None and sim.not_recorded and got == ref


def test_warm_loads_the_loop():
    assert ytsaurus.warm() >= 0.0


def test_what_the_dispatch_refuses():
    state = ClusterState(["gpu"], [Queue("root")], [Node("n0", {"gpu": 4})])
    model = YTsaurusModel({})
    assert ytsaurus.why_not(state, model, SimOptions(), False) is None
    assert ytsaurus.why_not(state, model, SimOptions(engine="general"), False) is not None
    assert ytsaurus.why_not(state, model, SimOptions(heartbeat_period=2.0), False) is not None
    assert ytsaurus.why_not(state, model, SimOptions(kill_at_requested_time=True), False) is not None
    assert ytsaurus.why_not(state, model, SimOptions(skip_idle=False), False) is not None
    assert ytsaurus.why_not(state, model, SimOptions(), True) is not None


# -- the Philly excerpt (tests/data/philly: 40 jobs of the trace, mapped onto the study's pools) ------

EXCERPT = Path(__file__).resolve().parents[1] / "data" / "philly" / "philly.csv"


def test_the_philly_excerpt_as_the_benchmark_runs_it():
    """``makeway bench --only philly``'s path under ytsaurus (the study's cluster at 704 GPUs, the
    queue map, the trace streamed through ``sim.run.run``) on the excerpt: the compiled path's
    document is the general engine's."""
    from makeway.benchmarks import philly_config
    from makeway.sim.queue_map import load as load_queue_map
    from makeway.sim.run import run

    found = philly_config("ytsaurus")
    if found is None:
        pytest.skip("the Philly study's config is not in this checkout")
    cfg, qmap_path = found
    qmap = load_queue_map(str(qmap_path))
    ref = _dump(run(cfg, EXCERPT, "philly", queue_map=qmap, engine="general"))
    rec = run(cfg, EXCERPT, "philly", queue_map=qmap)
    assert isinstance(rec, YTsaurusRecorder)  # recorded from the compiled loop's log
    got = _dump(rec)
    assert got == ref, _first_difference(got, ref)
    assert len(rec.finish_t) == 40


def test_a_squeezed_philly_cut_starves_on_one_node():
    """The excerpt's jobs a thousand times closer together and a hundred times shorter, on one
    node of the study's pools (``root`` guaranteed the node): backlogs in three weighted pools,
    clocks and starvation notes both ways, pending reasons of heads and of those behind them."""
    from makeway.benchmarks import PHILLY_STUDY, _beside
    from makeway.config import build_state, load_config, parse_config
    from makeway.sim.importers import read_trace
    from makeway.sim.queue_map import load as load_queue_map
    from makeway.sim.scale import scale_cluster
    from makeway.sim.trace import parse_record

    study = _beside(PHILLY_STUDY)
    if study is None:
        pytest.skip("the Philly study's config is not in this checkout")
    qmap = load_queue_map(str(study.parent / "queue-map.yaml"))
    wls = sorted((parse_record(qmap.apply(r)) for r in read_trace(EXCERPT, "philly")), key=lambda w: (w.submit, w.id))
    t0 = wls[0].submit
    cut = sorted((replace(w, submit=round((w.submit - t0) / 1000.0, 1), duration=max(1.0, round(w.duration / 100.0)))
                  for w in wls), key=lambda w: (w.submit, w.id))
    data = scale_cluster(load_config(study).model_dump(), 0.025, quotas=False)
    data["queues"]["root"]["guaranteed"] = {"gpu": 8}
    settings_ = {"fair_share_starvation_timeout": 10, "fair_share_update_period": 1.0, "heartbeat_period": 1.0}
    data["preemption"] = {"model": "ytsaurus", "settings": settings_}
    cfg = parse_config(data, "the Philly study on one node")
    rec = compiled_same(lambda: (build_state(cfg), list(cut)), cfg.preemption.settings, record_starts=True)
    assert rec.note_counts.get("starvation", 0) > 10 and len(rec.finish_t) == 40
    assert {code for trail in rec.reasons.rows().values() for _, code, _ in trail} >= {"priority", "resources"}
