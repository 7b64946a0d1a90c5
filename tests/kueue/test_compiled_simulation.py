"""``simulate()`` takes the compiled Kueue loop for runs in its class, and its results are the model's.

Reference: the same run on the general engine (``engine="general"``). The whole results document
must be equal, byte for byte once dumped: events with their reasons, notes, samples, counters,
finish and wait columns, pending-reason trails, the stop. And the compiled path must really have
been taken, and must refuse, loudly, a log out of step with the engine.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from makeway.benchmarks import kueue_baseline  # noqa: E402
from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.kueue.fast import pack  # noqa: E402
from makeway.registry import load_model  # noqa: E402
from makeway.sim.engine import SimOptions, make_simulation, simulate  # noqa: E402
from makeway.sim.fast import kueue  # noqa: E402
from tests.kueue.helpers import draw_cluster  # noqa: E402


def _document(state, model, workloads, **options):
    rec = simulate(state, model, list(workloads), options=SimOptions(**options))
    return json.dumps(rec.results(), default=str), rec


def _same(state_of, workloads, model_settings=None, **options):
    """The results of the general engine and of ``simulate``'s default path, and whether the
    default path was the compiled loop (it is wherever ``pack.unsupported`` lets it be)."""
    ref, rec = _document(state_of(), load_model("kueue", dict(model_settings or {})), workloads, engine="general",
                         **options)
    model = load_model("kueue", dict(model_settings or {}))
    sim = make_simulation(state_of(), model, SimOptions(**options), False)
    taken = isinstance(sim, kueue.CompiledKueue)
    got = json.dumps(sim.run(sorted(workloads, key=lambda w: w.submit)).results(), default=str)
    same = got == ref  # not in the assert: pytest would diff two documents of megabytes
    assert same, _first_difference(got, ref)
    compiled = taken and (sim.replay is not None or sim.log_run is not None)
    assert compiled == (pack.unsupported(state_of(), model, workloads) is None)
    if compiled:  # recorded from the log exactly where ``kueue_record.why_not`` allows it, else replayed
        assert (sim.log_run is not None) == (sim.not_recorded is None) != (sim.replay is not None)
    return rec, sim if compiled else None


def _first_difference(got: str, ref: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
    return f"documents differ at {at}: {got[max(0, at - 200):at + 200]!r} != {ref[max(0, at - 200):at + 200]!r}"


@st.composite
def clusters(draw):
    queues, nodes, workloads, resources = draw_cluster(draw, wide=True)
    horizon = draw(st.one_of(st.none(), st.sampled_from([5.0, 20.0])))
    options = {"horizon": horizon, "record_starts": draw(st.booleans()),
               "check_invariants": draw(st.booleans())}  # checked: the general engine replays the log
    return queues, nodes, workloads, resources, draw(st.booleans()), draw(st.booleans()), options


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_compiled_run_gives_the_engines_results(drawn):
    """Recorded from the log (``kueue_record.LogRun``) or replayed by the general engine (with
    ``check_invariants``), the document is the general engine's."""
    queues, nodes, workloads, resources, caches, prioritize, options = drawn
    _, sim = _same(lambda: ClusterState(resources, queues, nodes), workloads,
                   {"caches": caches, "prioritizePreemptorWorkloads": prioritize}, no_progress_window=32.0, **options)
    if sim is not None:
        expected = "check_invariants" if options["check_invariants"] else None
        assert sim.not_recorded in (expected, "stopped by the no-progress watch")


def test_kueue_baseline_results_are_the_engines():
    """Kueue's perf scenario at 10%: thousands of preemptions and their notes, requeued victims,
    waiting preemptors whose wait ends without targets (the reasons read the model's ``_waiting``)."""
    state, workloads = kueue_baseline(scale=0.1)
    rec, sim = _same(lambda: kueue_baseline(scale=0.1)[0], workloads)
    assert sim.log_run is not None and rec.preemptions > 2000
    assert any(code == "preempting" for trail in rec.reasons.rows().values() for _, code, _ in trail)


def test_kueue_baseline_with_preemptors_first_in_line():
    """The same with ``prioritizePreemptorWorkloads``: a preemptor waiting for its victims, or no
    longer, moves in its queue's order, which the reason rounds read (the first ``HEAD``)."""
    state, workloads = kueue_baseline(scale=0.1)
    rec, sim = _same(lambda: kueue_baseline(scale=0.1)[0], workloads, {"prioritizePreemptorWorkloads": True})
    assert sim.log_run is not None and rec.preemptions > 2000


def test_a_cycling_run_stops_with_the_engines_message():
    from tests.kueue.test_memo_equivalence import _livelock

    queues, nodes, workloads, _ = _livelock()
    rec, sim = _same(lambda: ClusterState(["cpu"], queues, nodes), workloads, no_progress_window=32.0,
                     record_starts=True)
    assert sim.replay is not None and rec.stopped_reason.startswith("no-progress")


def _small():
    queues = [Queue("cq", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}],
        "preemption": {"withinClusterQueue": "LowerPriority"}})]
    nodes = [Node("n0", {"cpu": 4}, {"flavor": "f"})]
    workloads = [Workload("low", "cq", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("high", "cq", 1.0, 20.0, (TaskGroup(1, {"cpu": 2}),), 5)]
    return ClusterState(["cpu"], queues, nodes), workloads


def test_a_log_out_of_step_with_the_engine_is_an_error(monkeypatch):
    """A compiled log whose preemption is one instant late: the engine's call at t=1 has no
    decision and the next logged one is at another instant, which the replay refuses."""
    real = pack.run

    def late(*args, **kwargs):
        p = real(*args, **kwargs)
        p.LT[1] += 1.0
        return p

    monkeypatch.setattr(pack, "run", late)
    state, workloads = _small()
    with pytest.raises(kueue.ReplayError, match="compiled log has it at t=2"):
        simulate(state, load_model("kueue", {}), workloads)


def test_a_run_left_short_of_the_log_is_an_error(monkeypatch):
    """A log claiming one call more than the engine makes: the replay says so at the end."""
    from makeway.policies.kueue.fast.loop import I_CALLS

    real = pack.run

    def more(*args, **kwargs):
        p = real(*args, **kwargs)
        p.IS[I_CALLS] += 1
        return p

    monkeypatch.setattr(pack, "run", more)
    state, workloads = _small()
    with pytest.raises(kueue.ReplayError, match="calls"):
        simulate(state, load_model("kueue", {}), workloads)


def test_the_general_engine_where_the_loop_does_not_apply():
    state, workloads = _small()
    assert isinstance(make_simulation(state, load_model("kueue", {}), SimOptions(), False), kueue.CompiledKueue)
    for options, changes in ((SimOptions(engine="general"), False), (SimOptions(), True),
                             (SimOptions(kill_at_requested_time=True), False)):
        assert not isinstance(make_simulation(state, load_model("kueue", {}), options, changes), kueue.CompiledKueue)
    sim = make_simulation(state, load_model("kueue", {"fairSharing": {}}), SimOptions(), False)
    rec = sim.run(workloads)
    assert sim.replay is None and rec.preemptions == 1


def test_a_trace_is_read_no_further_than_the_horizon():
    """As the general engine streams a trace, the compiled run reads it up to the first workload
    past the horizon, and packs nothing beyond."""
    state, workloads = _small()

    def trace():
        yield from workloads
        yield Workload("late", "cq", 50.0, 1.0, (TaskGroup(1, {"cpu": 1}),), 0)
        raise AssertionError("read past the horizon")

    sim = make_simulation(state, load_model("kueue", {}), SimOptions(horizon=10.0), False)
    rec = sim.run(trace())
    assert sim.log_run is not None and rec.stopped_reason == "horizon" and "late" not in rec.submit_t


def test_a_gang_is_evicted_and_restarted_in_its_pods_name_order():
    """The engine evicts a victim's pods in name order ("big/0/10" before "big/0/2") and requeues
    them so: the restart places them in that order, and the events and restarts say so."""
    queues = [Queue("cq", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 12}]}]}],
        "preemption": {"withinClusterQueue": "LowerPriority"}})]
    nodes = [Node(f"n{i:02d}", {"cpu": 1}, {"flavor": "f"}) for i in range(12)]
    workloads = [Workload("big", "cq", 0.0, 100.0, (TaskGroup(12, {"cpu": 1}),), 0),
                 Workload("hi", "cq", 1.0, 5.0, (TaskGroup(1, {"cpu": 1}),), 5)]
    rec, sim = _same(lambda: ClusterState(["cpu"], queues, nodes), workloads, record_starts=True)
    assert sim.log_run is not None
    pods = sorted(f"big/0/{i}" for i in range(12))
    assert [e["allocation"] for e in rec.events if e["kind"] == "evicted"] == pods
    assert [(a, n) for _, a, n, _ in rec.restarts["big"]] == [(p, f"n{i:02d}") for i, p in enumerate(pods)]
