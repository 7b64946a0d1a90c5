"""With a backlog, the model reuses unchanged operations' tree elements between updates and serves
heartbeats from one walk of the backlog per snapshot (``waiting.Waiting``); both must decide exactly
as ``FullEvaluation`` (``caches: false``), and both must actually be exercised here."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.policies.ytsaurus import batched, fairshare, schedule, waiting
from makeway.policies.ytsaurus.plf import PLF
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from tests.ytsaurus.test_cache_equivalence import HORIZON, FullEvaluation, Recording


class Counting(Recording):
    """Counts tree elements carried over from the previous update's tree and backlog walks."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.reused = self.built = 0
        self._prev: dict = {}

    def build_tree(self, state):
        tree = super().build_tree(state)
        self.built += 1
        self.reused += sum(1 for w, el in tree.elements.items() if el.is_op and self._prev.get(w) is el)
        self._prev = dict(tree.elements)
        return tree


def backlog_case():
    rng = random.Random(3)
    queues = [Queue("a", None, guaranteed={"cpu": 6}, weight=2.0), Queue("b", None, weight=1.0)]
    nodes = [Node(f"n{i}", {"cpu": 4, "memory": 16}) for i in range(3)]
    workloads, t = [], 0.0
    for j in range(40):
        t += rng.choice([0.0, 0.5, 1.0])
        workloads.append(Workload(f"w{j}", rng.choice("ab") if j > 8 else "b", t, rng.choice([4.0, 12.0, 30.0]),
                                  (TaskGroup(rng.randint(1, 2), {"cpu": rng.choice([1, 2]), "memory": 2}),)))
    settings = {"fair_share_update_period": 0.5, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
                "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": 1.0}
    return queues, nodes, workloads, [], settings, 8


def simulate_with(cls, case):
    queues, nodes, workloads, changes, model_settings, batch_min = case
    state = ClusterState(["cpu", "memory"], [Queue(q.name, q.parent, q.guaranteed, q.max, q.weight) for q in queues],
                         [Node(n.name, dict(n.capacity)) for n in nodes])
    model = cls({**model_settings, "fair_share_batch_min_pools": batch_min})
    simulate(state, model, list(workloads), changes, options=SimOptions(horizon=HORIZON, check_invariants=True))
    return model


def test_backlog_reuse_decides_as_full_evaluation(monkeypatch):
    walks, asks = [], []
    real_walk = waiting.Waiting._walk

    def walk(self, *args):
        walks.append(1)
        return real_walk(self, *args)

    monkeypatch.setattr(waiting.Waiting, "_walk", walk)
    for name in ("picker", "preemptive", "backlog"):
        real = getattr(waiting.Waiting, name)
        monkeypatch.setattr(waiting.Waiting, name, lambda self, *a, _real=real: asks.append(1) or _real(self, *a))
    case = backlog_case()
    model = simulate_with(Counting, case)
    assert any(" P " in line for line in model.log)  # starving operations preempt: both stages are served
    assert model.log == simulate_with(FullEvaluation, case).log
    assert model.reused > 0
    assert 0 < len(walks) < len(asks)  # heartbeats and quiet checks served from a kept walk


def test_regular_stage_starts_from_the_walks_first_heap(monkeypatch):
    """Heartbeats of one backlog walk over the same request sets start their picker from the heap
    the first one built (``Waiting.picker``), and still decide as ``FullEvaluation``."""
    made = {"fresh": 0, "reused": 0}
    real = schedule.HeapPicker.__init__

    def init(self, *args, **kwargs):
        start = args[5] if len(args) > 5 else kwargs.get("start")
        made["reused" if start is not None else "fresh"] += 1
        real(self, *args, **kwargs)

    monkeypatch.setattr(schedule.HeapPicker, "__init__", init)
    case = backlog_case()
    model = simulate_with(Counting, case)
    assert made["reused"] > 0 and made["fresh"] > 0
    assert model.log == simulate_with(FullEvaluation, case).log


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.lists(st.tuples(st.integers(0, 64), st.integers(0, 4), st.sampled_from([1.0, 1.0, 1.0, 1.0, 2.0, 0.5])),
                                  min_size=2, max_size=40), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_pool_curve_from_rows_is_the_pool_curve_bit_for_bit(dim, ops, seed, mixed):
    """A large fair share pool of closed-form operations sums their rows without a PLF each; the sum
    must be the very same floats as ``pool_curve`` over the children's functions."""
    rng = np.random.default_rng(seed)
    demand = np.array([[d / 64 * rng.random() ** e for e in range(dim)] for d, _, _ in ops])
    usage = np.array([[v * f / 4 for v in row] for row, (_, f, _) in zip(demand.tolist(), ops)])
    xs, ys = batched.compact_rows(*fairshare.op_fsbs_arrays(usage, demand))
    weights = [w for _, _, w in ops] if mixed else [ops[0][2]] * len(ops)
    rows = rng.permutation(len(ops)).tolist()
    fast = fairshare.pool_curve_rows([weights[i] for i in rows], xs, ys, rows, dim)
    ref = fairshare.pool_curve("fair_share", [weights[i] for i in rows], [PLF(xs[i], ys[i]) for i in rows], dim)
    if fast is None:  # parts of unequal shape (some extended to 1): the caller sums PLFs
        assert len(set(weights)) > 1
        return
    assert np.array_equal(fast.ax, ref.ax) and np.array_equal(fast.ay, ref.ay)


def test_picker_start_reads_the_values_of_its_own_walk():
    """Found by ``test_caches_decide_as_full_evaluation``: the regular stage's satisfaction function
    was made before the backlog walk was renewed, so it read the previous walk's kept values and a
    heartbeat at 4 s started w9 before w7 (the least satisfied). Two pools, one limited to 2 cpu,
    ten one-task operations at once (w7 has two tasks)."""
    one, two = {"cpu": 1, "memory": 1}, {"cpu": 2, "memory": 1}
    queues = [Queue("p0", None, weight=0.5), Queue("p1", None, max={"cpu": 2}, weight=0.5)]
    nodes = [Node(f"n{i}", {"cpu": 4, "memory": 10}) for i in range(2)]
    workloads = [Workload(f"w{j}", "p0" if j < 7 else "p1", 0.0, 2.0,
                          (TaskGroup(1, two if j == 3 else one),) + ((TaskGroup(1, one),) if j == 7 else ()))
                 for j in range(10)]
    settings = {"fair_share_update_period": 0.5, "heartbeat_period": 1.0, "heartbeat_splay": 0.0,
                "preemptive_scheduling_backoff": 0.5, "fair_share_starvation_timeout": 1.0,
                "fair_share_aggressive_starvation_timeout": 3.0}
    case = (queues, nodes, workloads, [], settings, 8)
    log = simulate_with(Counting, case).log
    assert log == simulate_with(FullEvaluation, case).log
    assert "4.0 S w7/1/0 n0" in log
