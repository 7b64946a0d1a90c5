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
                made.append(("start", d.task.split("/")[0], d.node))
            elif isinstance(d, Preempt):
                made.append(("preempt", d.allocation.split("/")[0], d.reason.preemptor.split("/")[0],
                             d.reason.values["node"]))
        wake = super().next_wakeup(state, now)
        self.calls.append((now, tuple(t.split("/")[0] for t in self._dropped), tuple(made), wake))
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
    p = run(state, YuniKornModel({}), jobs, horizon=math.inf if horizon is None else horizon, window=window)
    wl = [w.id for w in p.wls]
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


def same(make, horizon=None, window=math.inf, caches=(True, False)):
    fast, p = compiled(make, horizon, window)
    for c in caches:
        ref, stopped = reference(make, {"caches": c}, horizon, window)
        for k, (a, b) in enumerate(zip(fast, ref)):
            assert a == b, (k, a, b)
        assert len(fast) == len(ref), (len(fast), len(ref))
        assert p.stopped == bool(stopped and stopped.startswith("no-progress"))
    return fast, p


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
        jobs.append(Workload(f"w{j}", draw(st.sampled_from(leaves)), t,
                             draw(st.sampled_from([1.0, 2.0, 5.0, 10.0, 30.0, long])), (TaskGroup(1, req),),
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
    assert unsupported(state, YuniKornModel({}), jobs) is None
    fast, p = same(make, window=case[3])
    event("stopped by the watch" if p.stopped else "not stopped")
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
    assert ("preempt", "v", "x", "n") in [d for call in fast for d in call[2]]


def test_reservation_timeout_decided_the_same():
    fast, _ = same(_reservation_case())
    dropped = [call for call in fast if call[1]]
    assert [(c[0], c[1]) for c in dropped] == [(3603.0, ("ask",))]
