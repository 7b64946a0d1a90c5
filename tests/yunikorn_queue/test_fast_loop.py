"""The compiled YuniKorn loop (``policies.yunikorn.fast``) decides exactly as the Python model does.

Reference: ``YuniKornModel`` through the general engine with wake skipping off (every wake-up
instant is a call, as in the compiled loop), its ``schedule`` calls read one by one: the instant,
the reservations ``_drop_stale`` let go at the call's start, the decisions in order (starts with
their node, preemptions with their ask and the node it reserves) and ``next_wakeup`` after the
call. The compiled log must give the same, call for call, with the model's caches on and off: on
random clusters of the class (``pack.unsupported``) and on the preemption benchmark.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")
# every test here compiles the loop: one xdist worker compiles it once (`--dist loadgroup`)
pytestmark = pytest.mark.xdist_group("yunikorn-loop")

from makeway.benchmarks import preemption_scenario  # noqa: E402
from makeway.core.decisions import Preempt, Start  # noqa: E402
from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.yunikorn.fast import layout as L  # noqa: E402
from makeway.policies.yunikorn.fast.pack import run, unsupported  # noqa: E402
from makeway.policies.yunikorn.model import YuniKornModel  # noqa: E402
from makeway.sim.engine import SimOptions, Simulation  # noqa: E402

GiB = 2**30


class Calls(YuniKornModel):
    """Each ``schedule`` call as ``(now, dropped reservations, decisions, next_wakeup)``."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.calls: list[tuple] = []
        self._dropped: list[str] = []

    def _drop_stale(self, state, now_us, asks=True):
        before = list(self.reservations)
        super()._drop_stale(state, now_us, asks)
        self._dropped += [t for t in before if t not in self.reservations]

    def schedule(self, state, now):
        self._dropped = []
        out = super().schedule(state, now)
        made = []
        for d in out:
            if isinstance(d, Start):
                made.append(("start", d.task, d.node))
            elif isinstance(d, Preempt):
                made.append(("preempt", d.allocation, d.reason.preemptor, d.reason.values["node"]))
        wake = super().next_wakeup(state, now)
        self.calls.append((now, tuple(self._dropped), tuple(made), wake))
        return out

    def skip_wakes(self, state, wakes, limit):
        return None


def reference(make, settings_, horizon=None, window=math.inf):
    state, jobs = make()
    model = Calls(dict(settings_))
    sim = Simulation(state, model, SimOptions(engine="general", horizon=horizon, no_progress_window=window))
    sim.recorder.reasons = None
    sim.add_workloads(list(jobs))
    rec = sim.run()
    return model.calls, rec.stopped_reason


def compiled(make, horizon=None, window=math.inf):
    state, jobs = make()
    p = run(state, YuniKornModel({}), jobs, horizon=math.inf if horizon is None else horizon, window=window,
            gangs=True)
    wl = p.task_ids()
    per: list[list] = [[] for _ in range(p.calls)]
    drops: list[list] = [[] for _ in range(p.calls)]
    for row in p.LOG[:p.nlog].tolist():
        kind, a, b, c, call = row
        if kind == L.L_START:
            per[call - 1].append(("start", wl[a], p.node_names[b]))
        elif kind == L.L_PREEMPT:
            per[call - 1].append(("preempt", wl[a], wl[b], p.node_names[c]))
        else:
            drops[call - 1].append(wl[a])
    out = []
    for k in range(p.calls):
        wake = float(p.WK[k])
        out.append((float(p.CT[k]), tuple(drops[k]), tuple(per[k]), None if wake != wake else wake))
    return out, p


def same(make, horizon=None, window=math.inf, caches=(True, False), uncached_calls=math.inf):
    """The compiled log against the model's, call for call, with each of ``caches``; the model
    without caches only where the log has at most ``uncached_calls`` calls (it is the slow one,
    and ``test_cache_equivalence`` holds it equal to the cached model on drawn cases of its own)."""
    fast, p = compiled(make, horizon, window)
    for c in caches:
        if not c and len(fast) > uncached_calls:
            continue
        ref, stopped = reference(make, {"caches": c}, horizon, window)
        for k, (a, b) in enumerate(zip(fast, ref)):
            assert a == b, (k, a, b)
        assert len(fast) == len(ref), (len(fast), len(ref))
        assert p.stopped == bool(stopped and stopped.startswith("no-progress"))
    return fast, p


def starts_in_order(fast, jobs):
    """Replay the log's starts and evictions on each workload's pending tasks (index order at
    submission, requeues last): for each start, whether it was its workload's first pending task."""
    pending = {j.id: [f"{j.id}/0/{i}" for i in range(j.groups[0].count)] for j in jobs}
    out = []
    for _, _, made, _ in fast:
        for d in made:
            order = pending[d[1].split("/")[0]]
            if d[0] == "start":
                out.append(order[0] == d[1])
                order.remove(d[1])
        for d in made:
            if d[0] == "preempt":
                pending[d[1].split("/")[0]].append(d[1])
    return out


def partly(fast):
    """A workload of several tasks whose tasks started in different calls."""
    started: dict[str, set[float]] = {}
    for now, _, made, _ in fast:
        for d in made:
            if d[0] == "start":
                started.setdefault(d[1].split("/")[0], set()).add(now)
    return any(len(v) > 1 for v in started.values())


# -- drawn clusters inside the class ---------------------------------------------------------------

@st.composite
def cases(draw):
    """Leaves ``q0``.. (``q1`` is a prefix of ``q10``), guarantees on cpu, memory or both (zeros
    too), delays on the root or per leaf, nodes out of name order, bursts, long and short jobs."""
    nleaves = draw(st.integers(1, 12))
    names = draw(st.permutations([f"q{i}" for i in range(12)]))
    if draw(st.booleans()):  # a prefix pair among few leaves
        names = ["q1", "q10"] + [n for n in names if n not in ("q1", "q10")]
    leaves = names[:nleaves]
    kinds = draw(st.sampled_from([("cpu",), ("memory",), ("cpu", "memory")]))
    root_delay = draw(st.sampled_from([None, "1s", "2s", "500ms"]))
    queues = [Queue("root", settings={"properties": {"preemption.delay": root_delay}} if root_delay else {})]
    for i in range(nleaves):
        g = {}
        for k in draw(st.sampled_from([(), ("cpu",), ("cpu",), ("memory",), ("cpu", "memory")])):
            g[k] = draw(st.integers(0, 12)) * (GiB if k == "memory" else 1)
        props = {}
        if draw(st.integers(0, 3)) == 0:
            props["preemption.delay"] = draw(st.sampled_from(["1s", "3s", "0s", "20s"]))
        queues.append(Queue(leaves[i], "root", guaranteed=g or None, settings={"properties": props} if props else {}))
    names = draw(st.permutations([f"n{i}" for i in range(8)] + ["n10", "n11"]))[:draw(st.integers(1, 8))]
    nodes = [Node(n, {"cpu": draw(st.integers(2, 10)), "memory": draw(st.integers(2, 10)) * GiB}) for n in names]
    jobs = []
    t = 0.0
    long = draw(st.sampled_from([90.0, 600.0, 5000.0]))
    for j in range(draw(st.integers(5, 60))):
        t += draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.0, 2.0, 7.5, 20.0]))
        req = {k: draw(st.integers(1, 4)) * (GiB if k == "memory" else 1) for k in kinds}
        count = draw(st.sampled_from([1, 1, 1, 2, 3, 5]))
        jobs.append(Workload(f"w{j}", draw(st.sampled_from(leaves)), t,
                             draw(st.sampled_from([1.0, 2.0, 5.0, 10.0, 30.0, long])), (TaskGroup(count, req),),
                             draw(st.sampled_from([0, 50, 100]))))
    window = draw(st.sampled_from([math.inf, math.inf, 40.0]))
    return queues, nodes, jobs, window


def _maker(queues, nodes, jobs):
    def make():
        qs = [Queue(q.name, q.parent, guaranteed=q.guaranteed, settings=dict(q.settings)) for q in queues]
        return ClusterState(["cpu", "memory"], qs, [Node(n.name, dict(n.capacity)) for n in nodes]), list(jobs)
    return make


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_compiled_loop_decides_as_the_model(case):
    make = _maker(*case[:3])
    state, jobs = make()
    assert unsupported(state, YuniKornModel({}), jobs, gangs=True) is None
    fast, p = same(make, window=case[3], uncached_calls=1500)
    event("compared without caches too" if len(fast) <= 1500 else "compared with caches only")
    event("stopped by the watch" if p.stopped else "not stopped")
    event("a task started ahead of a pending sibling" if not all(starts_in_order(fast, jobs)) else "in order")
    event("a gang started partly" if partly(fast) else "no gang started partly")
    kinds = {d[0] for call in fast for d in call[2]}
    event("preempted" if "preempt" in kinds else "no preemption")
    event("a reservation timed out" if any(call[1] for call in fast) else "no timeout")


def test_preemption_benchmark_decided_the_same():
    """The benchmark at a tenth of its size, with the engine's default watch window: victims
    requeued and restarted, asks whose headroom fails (the cluster is full) preempting anyway."""
    fast, p = same(lambda: preemption_scenario(300, 100), window=600.0, caches=(True,))
    kinds = [d[0] for call in fast for d in call[2]]
    assert kinds.count("preempt") > 100 and not p.stopped


def test_a_horizon_stops_at_the_last_instant_before_it():
    fast, p = same(lambda: preemption_scenario(300, 100), horizon=30.0)
    assert fast[-1][0] <= 30.0 and any(d[0] == "preempt" for call in fast for d in call[2])


def _reservation_case():
    """A reservation that outlives its hour: ``ask`` needs 2 cpu and 4 memory on n1; its node
    victims would be ``v1`` then ``v2``, but the final selection stops at ``v1`` (3 cpu are more
    than it asks), so n1 never has the memory. ``waiter`` keeps off n1 until the reservation goes."""
    def make():
        delay = {"properties": {"preemption.delay": "1s"}}
        queues = [Queue("root"), Queue("a", "root", guaranteed={"cpu": 10, "memory": 10}, settings=delay),
                  Queue("b", "root", settings=delay)]
        jobs = [Workload("v2", "b", 0, 100_000, (TaskGroup(1, {"cpu": 1, "memory": 3}),)),
                Workload("v1", "b", 0.5, 100_000, (TaskGroup(1, {"cpu": 3, "memory": 1}),)),
                Workload("ask", "a", 1, 10, (TaskGroup(1, {"cpu": 2, "memory": 4}),)),
                Workload("waiter", "b", 2, 10, (TaskGroup(1, {"cpu": 1, "memory": 1}),))]
        return ClusterState(["cpu", "memory"], queues, [Node("n1", {"cpu": 4, "memory": 4})]), jobs
    return make


def test_the_prefix_rule_puts_a_queue_within_its_guarantee_in_scope():
    """``q10``'s ask sees ``q1``'s remaining guarantee as unset (``q10`` starts with ``q1`` and has
    a guarantee of its own), so ``q1``, well within its guarantee, loses its task to it."""
    def make():
        delay = {"properties": {"preemption.delay": "1s"}}
        queues = [Queue("root"), Queue("q1", "root", guaranteed={"cpu": 4}, settings=delay),
                  Queue("q10", "root", guaranteed={"cpu": 4}, settings=delay)]
        jobs = [Workload("v", "q1", 0, 100, (TaskGroup(1, {"cpu": 4}),)),
                Workload("x", "q10", 1, 10, (TaskGroup(1, {"cpu": 4}),))]
        return ClusterState(["cpu"], queues, [Node("n", {"cpu": 4})]), jobs
    fast, _ = same(make)
    assert ("preempt", "v/0/0", "x/0/0", "n") in [d for call in fast for d in call[2]]


def test_reservation_timeout_decided_the_same():
    fast, _ = same(_reservation_case())
    dropped = [call for call in fast if call[1]]
    assert [(c[0], c[1]) for c in dropped] == [(3603.0, ("ask/0/0",))]


# -- workloads of several tasks: one ask per task, placed piecemeal -----------------------------------

def _gang_maker(guarantees, nodes, jobs, resources=("cpu", "memory")):
    """Leaves ``q0``.. with the given guarantees (None: none), all asking after a second; nodes as
    ``(name, capacity)``; jobs as ``(id, leaf, submit, duration, tasks, request[, priority])``."""
    def make():
        delay = {"properties": {"preemption.delay": "1s"}}
        queues = [Queue("root")] + [Queue(f"q{i}", "root", guaranteed=g, settings=delay)
                                    for i, g in enumerate(guarantees)]
        wls = [Workload(j[0], j[1], j[2], j[3], (TaskGroup(j[4], j[5]),), *j[6:]) for j in jobs]
        return ClusterState(list(resources), queues, [Node(n, dict(c)) for n, c in nodes]), wls
    return make


def _starts(fast):
    return [(now, d[1], d[2]) for now, _, made, _ in fast for d in made if d[0] == "start"]


def test_a_gang_starts_partly_and_the_rest_after_a_finish():
    make = _gang_maker([None], [(f"n{i}", {"cpu": 4}) for i in range(3)],
                       [("short", "q0", 0.0, 10.0, 1, {"cpu": 4}), ("g", "q0", 0.5, 100.0, 4, {"cpu": 4})],
                       ("cpu",))
    fast, _ = same(make)
    assert _starts(fast) == [(0.0, "short/0/0", "n0"), (0.5, "g/0/0", "n1"), (0.5, "g/0/1", "n2"),
                             (10.0, "g/0/2", "n0"), (100.5, "g/0/3", "n1")]


def test_a_requeued_task_holding_a_reservation_starts_ahead_of_its_sibling():
    """``w3/0/0``, evicted at 232 s, goes behind its waiting siblings ``w3/0/2`` and ``w3/0/3``,
    preempts as a fresh ask while they wait out their 15 s, and starts on the node it reserved
    ahead of them (a start from the middle of the workload's pending tasks)."""
    make = _gang_maker([{"cpu": 4}, None, {"cpu": 8}], [(f"n{i}", {"cpu": 4, "memory": 4}) for i in range(4)],
                       [("w0", "q2", 0.0, 30.0, 4, {"cpu": 4}), ("w1", "q1", 1.0, 1000.0, 2, {"cpu": 4}),
                        ("w2", "q2", 21.0, 200.0, 4, {"cpu": 4}), ("w3", "q0", 41.0, 200.0, 4, {"cpu": 4})])
    fast, _ = same(make)
    _, jobs = make()
    assert not all(starts_in_order(fast, jobs))
    starts = _starts(fast)
    assert (247.0, "w3/0/0", "n1") in starts and (432.0, "w3/0/2", "n2") in starts


def test_one_attempt_takes_two_tasks_of_one_gang():
    make = _gang_maker([None, {"cpu": 8}], [("n0", {"cpu": 4, "memory": 4})],
                       [("w0", "q1", 3.0, 5000.0, 2, {"cpu": 1}), ("w1", "q0", 6.0, 5000.0, 4, {"cpu": 4}),
                        ("w2", "q1", 6.0, 200.0, 2, {"cpu": 4}), ("w3", "q1", 6.0, 5.0, 1, {"cpu": 1}),
                        ("w4", "q0", 26.0, 5000.0, 2, {"cpu": 2})])
    fast, _ = same(make)
    per_ask: dict[tuple, list[str]] = {}
    for now, _, made, _ in fast:
        for d in made:
            if d[0] == "preempt":
                per_ask.setdefault((now, d[2]), []).append(d[1].split("/")[0])
    assert any(len(v) != len(set(v)) for v in per_ask.values())


def test_a_gang_tasks_reservation_times_out_while_its_sibling_runs():
    make = _gang_maker([None, {"cpu": 4}], [("n0", {"cpu": 4, "memory": 3 * GiB})],
                       [("w0", "q0", 0.0, 1.0, 1, {"cpu": 1, "memory": GiB}),
                        ("w1", "q0", 0.0, 30.0, 1, {"cpu": 1, "memory": GiB}),
                        ("w2", "q0", 0.0, 5000.0, 1, {"cpu": 1, "memory": GiB}, 50),
                        ("w3", "q0", 0.0, 30.0, 1, {"cpu": 1, "memory": GiB}, 100),
                        ("w4", "q0", 0.0, 1.0, 1, {"cpu": 1, "memory": GiB}, 50),
                        ("w5", "q1", 0.0, 1.0, 2, {"cpu": 4, "memory": GiB}, 100)])
    fast, _ = same(make)
    running: set[str] = set()
    timed_out_beside_a_sibling = False
    for _, drops, made, _ in fast:
        timed_out_beside_a_sibling |= any(r.split("/")[0] == d.split("/")[0] for d in drops for r in running)
        for d in made:
            (running.add if d[0] == "start" else running.discard)(d[1])
    assert timed_out_beside_a_sibling


def test_one_gpu_gangs_fill_eight_gpu_nodes():
    """Philly's 12 x 1-GPU jobs: many tasks of one workload on one node (the node's task slots)."""
    make = _gang_maker([{"gpu": 8}, None], [(f"n{i}", {"gpu": 8}) for i in range(3)],
                       [("b", "q1", 0.0, 500.0, 20, {"gpu": 1}), ("a", "q0", 5.0, 50.0, 12, {"gpu": 1}),
                        ("c", "q1", 6.0, 20.0, 3, {"gpu": 1})], ("gpu",))
    fast, p = same(make)
    assert max(sum(1 for _, _, n in _starts(fast) if n == node) for node in p.node_names) >= 8
    assert any(d[0] == "preempt" for call in fast for d in call[2])
