"""A compiled YuniKorn run's results, recorded from its log (``sim.fast.yunikorn_record.LogRun``,
and ``yunikorn_tape_record.TapeRun``, its walk compiled), are the general engine's, byte for byte once dumped: events with their reasons, samples,
counters, finish and wait columns, pending-reason trails, the stop.

The compiled loop's log is stood in for by the general engine's own decisions written in the log's
format (``general_log``), with every wake-up run as a call; the reference is a plain run of the
general engine, which skips wake-ups where the model can. A log out of step with the engine's
instants is refused, loudly.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.benchmarks import preemption_scenario
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.fast import pack
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, make_simulation, simulate
from makeway.sim.fast import yunikorn
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.fast.yunikorn_record import LogRun
from makeway.sim.fast.yunikorn_tape_record import TapeRun
from tests.yunikorn_queue import general_log


def _dump(rec) -> str:
    return json.dumps(rec.results(), default=str)


def _first_difference(got: str, ref: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
    return f"documents differ at {at}: {got[max(0, at - 200):at + 200]!r} != {ref[max(0, at - 200):at + 200]!r}"


def _recorded(state_of, workloads, cls=LogRun, **options):
    """The document ``cls`` records from the stand-in's log, the log, and the state it leaves."""
    opts = SimOptions(**options)
    horizon = math.inf if opts.horizon is None else opts.horizon
    wls = [w for w in workloads if w.submit <= horizon]
    late = [w for w in workloads if w.submit > horizon][:1]
    packed = general_log.run(state_of(), load_model("yunikorn", {}), wls, horizon)
    run = cls(packed, state_of(), load_model("yunikorn", {}), opts, wls, late)
    return _dump(run.run()), packed, run.state


def _same(state_of, workloads, **options):
    """Both recordings, ``LogRun``'s and ``TapeRun``'s, are the general engine's document."""
    workloads = sorted(workloads, key=lambda w: w.submit)
    assert pack.unsupported(state_of(), load_model("yunikorn", {}), workloads, gangs=True) is None
    ref_rec = simulate(state_of(), load_model("yunikorn", {}), workloads, options=SimOptions(engine="general", **options))
    ref = _dump(ref_rec)
    for cls in (LogRun, TapeRun):
        got, packed, state = _recorded(state_of, workloads, cls, **options)
        same = got == ref  # not in the assert: pytest would diff two documents of megabytes
        assert same, f"{cls.__name__}: {_first_difference(got, ref)}"
        # what is left pending, in the state's order (gangs partly started among them)
        assert [(w, list(tasks)) for w, tasks in state.pending.items()] == \
            [(w, list(tasks)) for w, tasks in ref_rec.state.pending.items()]
        assert state.pending_res == ref_rec.state.pending_res
    return ref_rec, packed


@st.composite
def runs(draw):
    """Leaves under the root (``q1`` and ``q10`` side by side from 11 on, for the prefix rule),
    guarantees on cpu, memory or both, the root's ``preemption.delay`` of 1 s (a leaf may
    set its own), a few nodes, priorities 0 and 100, bursts of submissions at one instant, and
    workloads of one to four tasks (each an ask: started, preempted and requeued one by one)."""
    n_leaves = draw(st.integers(1, 12))
    queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}})]
    for i in range(n_leaves):
        kinds = draw(st.sampled_from([(), ("cpu",), ("memory",), ("cpu", "memory")]))
        guaranteed = {k: draw(st.integers(0, 12)) for k in kinds} or None
        props = {"preemption.delay": draw(st.sampled_from(["1s", "3s"]))} if draw(st.booleans()) else {}
        queues.append(Queue(f"q{i}", "root", guaranteed=guaranteed, settings={"properties": props} if props else {}))
    nodes = [Node(f"n{i}", {"cpu": draw(st.integers(2, 8)), "memory": draw(st.integers(2, 16))})
             for i in range(draw(st.integers(1, 5)))]
    instants = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 7.0, 12.0]), min_size=1, max_size=4))
    workloads = []
    for j in range(draw(st.integers(3, 40))):
        workloads.append(Workload(f"w{j}", f"q{draw(st.integers(0, n_leaves - 1))}", draw(st.sampled_from(instants)),
                                  float(draw(st.integers(1, 30))),
                                  (TaskGroup(draw(st.sampled_from([1, 1, 2, 3, 4])),
                                             {"cpu": draw(st.integers(1, 4)), "memory": draw(st.integers(1, 6))}),),
                                  draw(st.sampled_from([0, 100]))))
    options = {"horizon": draw(st.sampled_from([None, None, 4.0, 15.0])), "record_starts": draw(st.booleans())}
    return queues, nodes, workloads, options


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_recorded_from_the_log_is_the_engines_document(drawn):
    queues, nodes, workloads, options = drawn
    _same(lambda: ClusterState(["cpu", "memory"], queues, nodes), workloads, **options)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([1, 2, 3]))
def test_with_few_heads_per_queue(drawn, head):
    """The reason rounds ask the model about each queue's first ``HEAD`` only (32): with one to
    three, workloads enter, leave and cross the first place of the heads all the time."""
    from makeway.sim.fast.reasons import IndexedReasons
    from makeway.sim.pending import ReasonLog

    queues, nodes, workloads, options = drawn
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReasonLog, "HEAD", head)
        mp.setattr(IndexedReasons, "HEAD", head)
        _same(lambda: ClusterState(["cpu", "memory"], queues, nodes), workloads, **options)


def test_the_preemption_benchmark_at_a_tenth():
    """Hundreds of preemptions of long fill jobs, requeued victims waiting behind their queues'
    heads, pending-reason rounds on queues hundreds deep."""
    rec, packed = _same(lambda: preemption_scenario(300, 100)[0], preemption_scenario(300, 100)[1])
    assert rec.preemptions > 200 and packed.calls > 5000
    codes = {code for trail in rec.reasons.rows().values() for _, code, _ in trail}
    assert {"priority", "resources"} <= codes


def test_the_preemption_benchmark_cut_by_a_horizon():
    rec, _ = _same(lambda: preemption_scenario(300, 100)[0], preemption_scenario(300, 100)[1], horizon=60.0,
                   record_starts=True)
    assert rec.stopped_reason == "horizon"


def test_a_reservation_that_times_out():
    """An ask whose victims' room went to others holds its reservation for an hour, then loses it
    (``L_UNRESERVE``): it is ``preempting`` to the reason rounds till then, and then no longer."""
    queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}}),
              Queue("q0", "root", guaranteed={"memory": 0}), Queue("q2", "root", guaranteed={"cpu": 0, "memory": 11}),
              Queue("q5", "root", guaranteed={"cpu": 8})]
    nodes = [Node("n0", {"cpu": 6, "memory": 14})]
    specs = [("q5", 1, 4, 1, 0), ("q0", 3000, 4, 3, 100), ("q0", 3000, 3, 2, 100), ("q5", 3000, 3, 6, 0),
             ("q0", 30, 3, 5, 0), ("q0", 3000, 2, 4, 100), ("q0", 3000, 4, 6, 100), ("q0", 15, 2, 5, 0),
             ("q0", 21, 1, 1, 0), ("q0", 18, 2, 1, 100), ("q2", 5000, 3, 1, 0), ("q0", 7, 2, 1, 100),
             ("q0", 4, 3, 1, 100)]
    ids = [5, 7, 9, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]  # the order of ties is the ids'
    workloads = [Workload(f"w{i}", q, 0.0, float(d), (TaskGroup(1, {"cpu": c, "memory": m}),), p)
                 for i, (q, d, c, m, p) in zip(ids, specs)]
    rec, packed = _same(lambda: ClusterState(["cpu", "memory"], queues, nodes), workloads, record_starts=True)
    kinds = packed.LOG[:, 0].tolist()
    assert 2 in kinds and kinds.index(1) < kinds.index(2)
    assert any(code == "preempting" for trail in rec.reasons.rows().values() for _, code, _ in trail)


def gang_reservation_case():
    """``w4``'s three tasks: 0 and 1 start (1 after preempting), 2 preempts and reserves a node
    whose room goes to others, and holds it an hour while its siblings run, then loses it.
    ``w9``'s task 0, evicted, starts last, behind its siblings. (Found by a random search over
    gangs and hour-long runs.)"""
    queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}}),
              Queue("q0", "root", guaranteed={"cpu": 6}), Queue("q1", "root", guaranteed={"cpu": 1, "memory": 10}),
              Queue("q2", "root", guaranteed={"cpu": 8}), Queue("q3", "root", guaranteed={"cpu": 0})]
    nodes = [Node("n0", {"cpu": 4, "memory": 14}), Node("n1", {"cpu": 3, "memory": 9}), Node("n2", {"cpu": 5, "memory": 7})]
    specs = [("q1", 0, 9000, 1, 1, 1, 0), ("q1", 5, 9000, 2, 3, 4, 100), ("q1", 0, 1, 1, 4, 4, 0),
             ("q0", 3000, 5000, 3, 1, 2, 0), ("q2", 5, 9000, 3, 3, 2, 100), ("q0", 3000, 3000, 2, 4, 6, 0),
             ("q1", 0, 5000, 1, 1, 1, 0), ("q2", 5, 4, 2, 1, 4, 0), ("q3", 0, 30, 1, 1, 3, 0),
             ("q1", 5, 3000, 3, 3, 1, 100), ("q2", 0, 30, 1, 2, 5, 0), ("q1", 0, 30, 2, 2, 6, 0), ("q3", 5, 1, 1, 1, 2, 0)]
    workloads = [Workload(f"w{i}", q, float(at), float(d), (TaskGroup(n, {"cpu": c, "memory": m}),), p)
                 for i, (q, at, d, n, c, m, p) in enumerate(specs)]
    return (lambda: ClusterState(["cpu", "memory"], queues, nodes)), workloads


def test_a_gang_tasks_reservation_times_out_while_its_siblings_run():
    """The reservation is the model's ``preempting`` while the siblings run, ``resources`` once
    it is gone (``L_UNRESERVE`` of a task); the requeued task starts behind its siblings."""
    rec, packed = _same(*gang_reservation_case(), record_starts=True)
    ids = [f"{packed.wls[w].id}/0/{i}" for w, i in zip(packed.TW.tolist(), packed.T_IX.tolist())]
    rows = [(kind, ids[a]) for kind, a in packed.LOG[:, :2].tolist()]
    assert (2, "w4/0/2") in rows and rows.index((0, "w4/0/1")) < rows.index((2, "w4/0/2"))
    assert [t for kind, t in rows if kind == 0 and t.startswith("w9/")][-3:] == ["w9/0/1", "w9/0/2", "w9/0/0"]
    assert [code for _, code, _ in rec.reasons.rows()["w4"]] == ["resources", "preempting", "resources"]


def _small():
    queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}}),
              Queue("q0", "root", guaranteed={"cpu": 2}), Queue("q1", "root", guaranteed={"cpu": 2})]
    nodes = [Node("n0", {"cpu": 4, "memory": 8})]
    workloads = [Workload("low", "q0", 0.0, 100.0, (TaskGroup(1, {"cpu": 2, "memory": 1}),), 0),
                 Workload("low2", "q0", 0.0, 100.0, (TaskGroup(1, {"cpu": 2, "memory": 1}),), 0),
                 Workload("high", "q1", 1.0, 20.0, (TaskGroup(1, {"cpu": 2, "memory": 1}),), 0)]
    return (lambda: ClusterState(["cpu", "memory"], queues, nodes)), workloads


@pytest.mark.parametrize("cls", [LogRun, TapeRun])
def test_a_log_out_of_step_with_the_engine_is_an_error(cls):
    """The preemption logged one instant late: the engine's call at that instant is not the log's."""
    state_of, workloads = _small()
    packed = general_log.run(state_of(), load_model("yunikorn", {}), workloads)
    assert packed.LOG[:, 0].tolist().count(1) == 1
    k = int(packed.LOG[packed.LOG[:, 0] == 1][0, 4]) - 1
    packed.CT[k] += 0.25
    with pytest.raises(ReplayError, match="compiled log has it at"):
        cls(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run()


@pytest.mark.parametrize("cls", [LogRun, TapeRun])
def test_a_log_with_a_call_too_many_is_an_error(cls):
    state_of, workloads = _small()
    packed = general_log.run(state_of(), load_model("yunikorn", {}), workloads)
    packed.calls += 1
    packed.CT, packed.WK = np.append(packed.CT, 1e9), np.append(packed.WK, np.nan)
    with pytest.raises(ReplayError, match="calls"):
        cls(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run()


@pytest.mark.parametrize("cls", [LogRun, TapeRun])
def test_a_start_that_does_not_fit_is_an_error(cls):
    state_of, workloads = _small()
    packed = general_log.run(state_of(), load_model("yunikorn", {}), workloads)
    first = packed.LOG[:, 0].tolist().index(1)
    packed.LOG[first, 0] = 0  # the victim is not preempted: the preemptor's start does not fit
    with pytest.raises(ReplayError):
        cls(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run()


def _refusal(cls, packed, state_of, workloads) -> str:
    with pytest.raises(ReplayError) as got:
        cls(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run()
    return str(got.value)


def _row(packed, kind):
    return packed.LOG[:, 0].tolist().index(kind)


def _sorted_case():
    state_of, workloads = gang_reservation_case()
    return state_of, sorted(workloads, key=lambda w: w.submit)


@pytest.mark.parametrize("corrupt, says", [
    ("call-late", "compiled log has it at"), ("row-late", "compiled log has it at"), ("not-pending", "not pending"),
    ("no-fit", "does not fit"), ("victim-not-running", "is not running"), ("no-reservation", "no reservation"),
    ("call-missing", "t=None"), ("row-left-over", "t=None"), ("call-extra", "calls")])
def test_the_compiled_walk_refuses_a_log_as_the_python_walk_does(corrupt, says):
    """Each check of the walk, met by a log broken for it: ``TapeRun`` raises ``LogRun``'s message."""
    state_of, workloads = _sorted_case()
    packed = general_log.run(state_of(), load_model("yunikorn", {}), workloads)
    start, preempt = _row(packed, 0), _row(packed, 1)
    if corrupt == "call-late":
        packed.CT[int(packed.LOG[preempt, 4]) - 1] += 0.25
    elif corrupt == "row-late":
        packed.LT[preempt] += 0.25
    elif corrupt == "not-pending":
        later = [k for k in range(start + 1, len(packed.LOG)) if packed.LOG[k, 0] == 0]
        packed.LOG[later[0], 1] = packed.LOG[start, 1]  # the same task started twice
    elif corrupt == "no-fit":
        packed.LOG[preempt, 0] = 0  # the victim is not preempted: the preemptor's start does not fit
        packed.LOG[preempt, 1] = packed.LOG[preempt, 2]
        packed.LOG[preempt, 2] = packed.LOG[preempt, 3]
    elif corrupt == "victim-not-running":
        packed.LOG[preempt, 1] = packed.LOG[preempt, 2]  # the ask itself, pending, as its victim
    elif corrupt == "no-reservation":
        packed.LOG[_row(packed, 2), 1] = packed.LOG[start, 1]
    elif corrupt == "call-missing":
        packed.calls -= 1
        packed.CT, packed.WK = packed.CT[:-1], packed.WK[:-1]
    elif corrupt == "call-extra":
        packed.calls += 1
        packed.CT, packed.WK = np.append(packed.CT, 1e9), np.append(packed.WK, np.nan)
    else:
        packed.LOG[-1, 4] += 10 ** 6
    want = _refusal(LogRun, packed, state_of, workloads)
    assert says in want
    assert _refusal(TapeRun, packed, state_of, workloads) == want


def test_a_trail_longer_than_the_tape_is_recorded_by_the_python_walk():
    """The trail tape's room is an estimate: a run that overflows it is recorded by ``LogRun``."""
    state_of, workloads = _sorted_case()
    packed = general_log.run(state_of(), load_model("yunikorn", {}), workloads)
    calls, python = [], LogRun._run

    class Short(TapeRun):
        def _reason_state(self, room, trail_rows):
            return super()._reason_state(room, 2)

    def python_walk(self):
        calls.append(1)
        return python(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LogRun, "_run", python_walk)
        got = _dump(Short(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run())
    assert calls == [1]
    assert got == _dump(TapeRun(packed, state_of(), load_model("yunikorn", {}), SimOptions(), workloads, []).run())


def _compiled(monkeypatch, stopped=False):
    """``make_simulation`` with the stand-in as the compiled loop (and numba taken as there)."""
    def run(*args, **kwargs):
        packed = general_log.run(*args, **kwargs)
        packed.stopped = packed.stopped or stopped
        return packed

    monkeypatch.setattr(pack, "run", run, raising=False)
    monkeypatch.setattr("makeway.sim.fast.compiled.enabled", lambda: True)


def test_simulate_takes_the_compiled_loop_once_it_is_there(monkeypatch):
    state_of, workloads = _small()
    ref = _dump(simulate(state_of(), load_model("yunikorn", {}), workloads, options=SimOptions(engine="general")))
    _compiled(monkeypatch)
    sim = make_simulation(state_of(), load_model("yunikorn", {}), SimOptions(), False)
    assert isinstance(sim, yunikorn.CompiledYuniKorn)
    assert _dump(sim.run(workloads)) == ref and sim.log_run is not None and sim.not_recorded is None


@pytest.mark.parametrize("case", ["check_invariants", "stopped", "unsorted", "outside"])
def test_the_general_engine_where_the_log_is_not_recorded(monkeypatch, case):
    _compiled(monkeypatch, stopped=case == "stopped")
    state_of, workloads = _small()
    options = SimOptions(check_invariants=case == "check_invariants")
    model = load_model("yunikorn", {"preemptionEnabled": False} if case == "outside" else {})
    trace = workloads[::-1] if case == "unsorted" else workloads
    ref = _dump(simulate(state_of(), load_model("yunikorn", dict(model.settings)), trace,
                         options=SimOptions(engine="general")))
    sim = make_simulation(state_of(), model, options, False)
    assert isinstance(sim, yunikorn.CompiledYuniKorn)
    rec = sim.run(trace)
    assert sim.log_run is None and sim.not_recorded is not None
    assert _dump(rec) == ref


def test_refused_at_dispatch(monkeypatch):
    _compiled(monkeypatch)
    state_of, _ = _small()
    for options, changes in ((SimOptions(engine="general"), False), (SimOptions(), True),
                             (SimOptions(kill_at_requested_time=True), False), (SimOptions(heartbeat_period=5.0), False)):
        assert not isinstance(make_simulation(state_of(), load_model("yunikorn", {}), options, changes),
                              yunikorn.CompiledYuniKorn)


def test_the_compiled_walk_is_compiled_once_for_every_shape():
    """Every array the walk takes is C-ordered whatever the cluster's shape: a second layout would
    compile the walk again (about 25 s in a fresh clone) in the middle of a run."""
    from makeway.sim.fast import yunikorn_walk

    for nodes, resources in ((1, ["cpu"]), (3, ["cpu", "memory"])):
        queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}}),
                  Queue("a", "root", guaranteed={"cpu": 1}), Queue("b", "root", guaranteed={"cpu": 1})]
        state = ClusterState(resources, queues, [Node(f"n{i}", {r: 2 for r in resources}) for i in range(nodes)])
        workloads = [Workload(f"w{i}", "a", 0.0, 100.0, (TaskGroup(1, {r: 1 for r in resources}),)) for i in range(2)]
        packed = general_log.run(state, load_model("yunikorn", {}), workloads)
        TapeRun(packed, state, load_model("yunikorn", {}), SimOptions(), workloads, []).run()
    assert len(yunikorn_walk.walk.signatures) == 1
