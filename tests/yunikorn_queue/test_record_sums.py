"""``YuniKornRecorder`` makes its sums, integral and samples once, at the close (``sim.fast.sums``),
from a feed of codes; they must be what ``FastRecorder`` makes as it goes, fed the same events,
thinning of the samples included (more instants than ``MAX_SAMPLES``), and ``jain_now`` summed
as this Python's ``sum`` does; workloads of several tasks too, whose tasks start, are evicted and
finish one by one."""

import random

import numpy as np
import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.registry import load_model
from makeway.sim.fast.compiled import enabled
from makeway.sim.fast.kueue_record import _Shape
from makeway.sim.fast.recorder import FastRecorder
from makeway.sim.fast.yunikorn_record import YuniKornRecorder

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not there")


class _Run:
    """What the recorders read of a run: queues, paths, workloads' queues and shapes."""

    def __init__(self, state, wls):
        self.q_names = list(state.queues)
        qix = {q: i for i, q in enumerate(self.q_names)}
        self.paths = [[qix[a] for a in state.path_to_root(q)] for q in self.q_names]
        self.ints = True
        rix = {r: i for i, r in enumerate(state.resources)}
        self.w_q = [qix[wl.queue] for wl in wls]
        self.w_tasks = [wl.groups[0].count for wl in wls]
        self.w_id = [wl.id for wl in wls]
        self.w_shape = []
        for wl in wls:
            res = wl.groups[0].resources
            vec = [0] * len(rix)
            for k, v in res.items():
                vec[rix[k]] = v
            self.w_shape.append(_Shape(wl.groups[0].count, [(rix[k], v) for k, v in res.items()], vec, False))


class _Quiet:
    pending: dict = {}

    def submitted(self, w):
        pass


def _state():
    queues = [Queue("root"), Queue("a", "root", weight=2), Queue("b", "root"), Queue("c", "root")]
    return ClusterState(["cpu", "memory", "gpu"], queues,
                        [Node(f"n{i}", {"cpu": 64, "memory": 256, "gpu": 0 if i else 4}) for i in range(4)])


def _feed(seed, instants, most=1):
    """Both recorders fed the same random events: submissions, and starts, evictions and finishes
    of single tasks of workloads of one to ``most`` tasks."""
    rng = random.Random(seed)
    wls = [Workload(f"w{i}", rng.choice("abc"), 0.0, 1.0,
                    (TaskGroup(rng.randint(1, most) if most > 1 else 1,
                               {"cpu": rng.randint(1, 9), "memory": rng.randint(1, 30)}),)) for i in range(300)]
    run = _Run(_state(), wls)
    model = load_model("yunikorn", {})
    eager, late = FastRecorder(_state(), model, run), YuniKornRecorder(_state(), model, run)
    for rec in (eager, late):
        rec.reasons = _Quiet()
        rec.state.workloads.update((wl.id, wl) for wl in wls)
    submitted = [False] * len(wls)
    pending, running, done = [0] * len(wls), [0] * len(wls), [0] * len(wls)
    now = 0.0
    for _ in range(instants):
        now += rng.choice((0.25, 0.5, 1.0, 3.0))
        for rec in (eager, late):
            rec.before_change(now)
        for _ in range(rng.randint(0, 3)):
            w = rng.randrange(len(wls))
            if not submitted[w]:
                eager.submitted(w, wls[w], run.w_shape[w], now)
                late.submitted(w, wls[w], run.w_shape[w], now)
                submitted[w], pending[w] = True, run.w_tasks[w]
            elif pending[w] and (not running[w] or rng.random() < 0.5):
                eager.task_started(w, 0, now)
                late.feed.append(4 * w)  # what ``LogRun._start`` feeds
                pending[w] -= 1
                running[w] += 1
            elif running[w] and rng.random() < 0.5:
                eager._move(w, 0, -1)
                late.task_evicted(w, now)
                running[w] -= 1
                pending[w] += 1
            elif running[w]:
                running[w] -= 1
                done[w] += 1
                for rec in (eager, late):
                    rec.task_finished(w, 0, now, False, done[w] == run.w_tasks[w])
    return eager, late


@pytest.mark.parametrize("seed,instants,most", [(1, 50, 1), (2, 4000, 1), (3, 7000, 1), (4, 1500, 4), (5, 5000, 16)])
def test_sums_at_the_close_are_the_eager_ones(seed, instants, most):
    eager, late = _feed(seed, instants, most)
    for rec in (eager, late):
        rec.close(rec.last_t + 1.0)
    assert len(eager.series_t) > 10
    if instants > 2000:
        assert eager.sample_interval > 1.0  # thinned
    for field in ("used", "used_integral", "pending_tasks", "pending_res", "pending_n", "sample_interval", "series_t",
                  "series_used", "series_queues", "series_pending", "series_pending_n", "series_jain",
                  "series_shares", "first_t", "end_t", "last_t"):
        assert getattr(late, field) == getattr(eager, field), field
    assert late.state.queue_usage == eager.state.queue_usage
    assert late._finished == eager._finished
    if most > 1:  # gangs finished, each at its last task's finish
        assert any(late.sim.w_tasks[w] > 1 for w, _ in late._finished)


def test_python_sum_is_the_one_jain_uses():
    from makeway.sim.fast.sums import _pysum
    import sys

    rng = random.Random(5)
    for _ in range(2000):
        xs = [rng.random() ** rng.randint(1, 30) * rng.choice((1, 1e-8, 1e8)) for _ in range(rng.randint(1, 12))]
        assert _pysum(np.array(xs), len(xs), sys.version_info >= (3, 12)) == sum(xs)
