"""The struct-of-arrays event loop for the first-fit model (see ``makeway.sim.fast``).

Each instant is what the general engine makes of it: the finishes due then, in the order their
tasks started, then the submissions due then, in trace order, then one greedy pass in the model's
order (priority, submit time, id) that starts every workload whose whole gang fits, first fit in
node order. A zero-length task's finish is due at the instant it started, which is then processed
again. Only the order of work differs: a workload that did not fit waits in the heap of its
*shape* (its groups' counts and requests), and a pass looks at the head of a shape only when that
head could fit now (a new shape, or any release since the shape last failed), because a request
that failed cannot fit until something is released and a later workload of the same shape cannot
fit where the head did not.

Free capacity is one max segment tree per resource over ``capacity - used`` of each node, ``used``
added up exactly as ``ClusterState`` adds it (the same float rounding), so every comparison sees
the numbers the general engine sees.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable, Iterator

from makeway.core.objects import Workload
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.sim.fast.recorder import FastRecorder

_NEG = float("-inf")


def _add(x: Any, v: Any) -> Any:
    """``add_into``'s arithmetic on one number: float sums rounded to 9 decimals."""
    y = x + v
    return round(y, 9) if type(y) is float else y


class _Shape:
    """A request shape: per group (count, [(resource index, amount)...], dense request vector)."""

    __slots__ = ("groups", "need", "heap", "failed_at", "nowhere", "single")

    def __init__(self, groups: list[tuple[int, list, list]], need: list, nowhere: bool):
        self.groups = groups
        self.need = need          # (tree index, amount - EPS) for the positive amounts of group 0
        self.heap: list = []      # (-priority, submit, id, index) of the workloads waiting in it
        self.failed_at = -1       # release counter when its head last failed; -1: try it
        self.nowhere = nowhere
        self.single = len(groups) == 1 and groups[0][0] == 1


class FastSimulation:
    """The first-fit model's simulation on parallel lists; ``run`` returns a ``Recorder``."""

    def __init__(self, state: ClusterState, model: Any, options: Any):
        self.state, self.model, self.options = state, model, options
        self.now = 0.0
        self.events_processed = 0
        res = state.resources
        self.R = len(res)
        self.rix = {r: i for i, r in enumerate(res)}
        nodes = list(state.nodes.values())
        self.N = len(nodes)
        self.cap = [[n.capacity.get(r, 0) for n in nodes] for r in res]
        self.used = [[0] * self.N for _ in res]
        size = 1
        while size < max(1, self.N):
            size *= 2
        self.size = size
        self.trees: list[list] = []
        for caps in self.cap:
            t = [_NEG] * (2 * size)
            t[size:size + self.N] = caps
            for i in range(size - 1, 0, -1):
                a, b = t[2 * i], t[2 * i + 1]
                t[i] = a if a > b else b
            self.trees.append(t)
        self.recorder = FastRecorder(state, model, self)
        self.recorder.model_options = model.options()
        qnames = list(state.queues)
        self.q_names = qnames
        self.qix = {q: i for i, q in enumerate(qnames)}
        self.paths = [[self.qix[a] for a in state.path_to_root(q)] for q in qnames]
        # per workload (parallel lists)
        self.w_id: list[str] = []
        self.w_q: list[int] = []
        self.w_shape: list[_Shape] = []
        self.w_run: list[float] = []
        self.w_killed: list[bool] = []
        self.w_left: list[int] = []       # tasks not finished
        self.w_tasks: list[int] = []
        self.w_key: list[tuple] = []      # the model's order: (-priority, submit, id)
        self.shapes: dict[tuple, _Shape] = {}
        self.releases = 0                 # bumped at every finish
        self.finishes: list = []          # heap of (time, seq, workload, group, node)
        self.seq = 0
        self._nowhere_cache: dict[tuple, bool] = {}

    # -- submissions ---------------------------------------------------------------------------

    def _shape_of(self, wl: Workload) -> tuple[_Shape, int]:
        rix = self.rix
        key = []
        groups = []
        tasks = 0
        for g in wl.groups:
            pairs = [(rix[k], v) for k, v in g.resources.items() if k in rix]
            key.append((g.count, tuple(pairs)))
            if g.count > 0:
                tasks += g.count
        key = tuple(key)
        shape = self.shapes.get(key)
        if shape is None:
            trees = self.trees
            for (count, pairs) in key:
                vec = [0] * self.R
                for r, v in pairs:
                    vec[r] = v
                groups.append((count, list(pairs), vec))
            first = next(g for g in groups if g[0] > 0)
            need = [(trees[r], v - EPS) for r, v in enumerate(first[2]) if v > 0]
            if not need:
                need = [(trees[0], -1e300)]
            nowhere = any(c > 0 and not self._fits_some_node(vec) for c, _, vec in groups)
            shape = self.shapes[key] = _Shape(groups, need, nowhere)
        return shape, tasks

    def _fits_some_node(self, vec: list) -> bool:
        cap = self.cap
        for i in range(self.N):
            if all(v <= 0 or v <= cap[r][i] + EPS for r, v in enumerate(vec)):
                return True
        return False

    # -- the free-capacity trees -------------------------------------------------------------------

    def _set_leaf(self, i: int) -> None:
        size = self.size
        for r, t in enumerate(self.trees):
            j = size + i
            t[j] = self.cap[r][i] - self.used[r][i]
            j >>= 1
            while j:
                a, b = t[2 * j], t[2 * j + 1]
                m = a if a > b else b
                if t[j] == m:
                    break
                t[j] = m
                j >>= 1

    def _first_fit(self, need: list, start: int) -> int | None:
        """Smallest node index >= ``start`` whose free amounts cover ``need``, or None."""
        if start >= self.N:
            return None
        size = self.size
        stack = [(1, 0, size)]
        pop, push = stack.pop, stack.append
        while stack:
            node, lo, hi = pop()
            if hi <= start:
                continue
            for t, v in need:
                if t[node] < v:
                    break
            else:
                if node >= size:
                    return lo
                mid = (lo + hi) >> 1
                push((2 * node + 1, mid, hi))
                push((2 * node, lo, mid))
        return None

    def _place(self, shape: _Shape) -> list[tuple[int, int]] | None:
        """(group, node) for every task, first fit in node order, or None (nothing changed)."""
        trees, size = self.trees, self.size
        if shape.single:
            i = self._first_fit(shape.need, 0)
            return None if i is None else [(0, i)]
        placed: list[tuple[int, int]] = []
        undo: dict[int, list] = {}
        rtrees = range(len(trees))
        try:
            for g, (count, _, vec) in enumerate(shape.groups):
                if count <= 0:
                    continue
                need = [(trees[r], v - EPS) for r, v in enumerate(vec) if v > 0] or [(trees[0], -1e300)]
                pos = [r for r, v in enumerate(vec) if v > 0]
                left, i = count, 0
                while left:
                    i = self._first_fit(need, i)
                    if i is None:
                        return None
                    j = size + i
                    if i not in undo:
                        undo[i] = [trees[r][j] for r in rtrees]
                    leaf = [trees[r][j] for r in rtrees]
                    while left and all(leaf[r] >= vec[r] - EPS for r in pos):
                        for r in rtrees:
                            leaf[r] = leaf[r] - vec[r]
                        placed.append((g, i))
                        left -= 1
                    self._put(i, leaf)
                    i += 1
            return placed
        finally:
            for i, leaf in undo.items():
                self._put(i, leaf)

    def _put(self, i: int, leaf: list) -> None:
        size = self.size
        for r, t in enumerate(self.trees):
            j = size + i
            t[j] = leaf[r]
            j >>= 1
            while j:
                a, b = t[2 * j], t[2 * j + 1]
                t[j] = a if a > b else b
                j >>= 1

    # -- the loop --------------------------------------------------------------------------------

    def run(self, workloads: Iterable[Workload]) -> Any:
        rec = self.recorder
        feed: Iterator[Workload] = iter(workloads)
        nxt = next(feed, None)
        last_fed = _NEG
        horizon = self.options.horizon
        progress = self.options.progress
        finishes = self.finishes
        state = self.state
        queues = state.queues
        wls = state.workloads
        new_shapes: dict[int, _Shape] = {}
        released = True
        while True:
            t_fin = finishes[0][0] if finishes else None
            if nxt is None and t_fin is None:
                break
            time = t_fin if nxt is None or (t_fin is not None and t_fin <= nxt.submit) else nxt.submit
            if horizon is not None and time > horizon:
                rec.stopped_reason = "horizon"
                break
            self.now = time
            rec.before_change(time)
            while finishes and finishes[0][0] == time:
                _, _, w, g, node = heapq.heappop(finishes)
                self.events_processed += 1
                self._finish(w, g, node, time)
                released = True
            while nxt is not None and nxt.submit <= time:
                wl = nxt
                if wl.submit < last_fed:
                    from makeway.sim.engine import SimulationError
                    raise SimulationError(f"workload {wl.id!r}: trace is not sorted by submit time "
                                          f"({wl.submit} after {last_fed})")
                last_fed = wl.submit
                if wl.queue not in queues:
                    from makeway.sim.engine import SimulationError
                    raise SimulationError(f"workload {wl.id!r} names unknown queue {wl.queue!r}")
                if wl.id in wls:
                    from makeway.core.state import StateError
                    raise StateError(f"workload {wl.id!r} submitted twice")
                self.events_processed += 1
                shape = self._submit(wl, time)
                new_shapes[id(shape)] = shape
                nxt = next(feed, None)
            self._pass(time, released, new_shapes.values())
            released = False
            new_shapes.clear()
            rec.after_instant(time)
            if progress is not None:
                progress(time, self.events_processed)
        rec.close(self.now)
        return rec

    def _submit(self, wl: Workload, now: float) -> _Shape:
        w = len(self.w_id)
        shape, tasks = self._shape_of(wl)
        if tasks == 0:
            from makeway.sim.engine import SimulationError
            raise SimulationError(f"workload {wl.id!r} has no task")
        self.state.workloads[wl.id] = wl
        self.w_id.append(wl.id)
        self.w_q.append(self.qix[wl.queue])
        self.w_shape.append(shape)
        run, killed = wl.duration, False
        if self.options.kill_at_requested_time and wl.requested_duration is not None and wl.requested_duration < run:
            run, killed = wl.requested_duration, True
        self.w_run.append(run)
        self.w_killed.append(killed)
        self.w_left.append(tasks)
        self.w_tasks.append(tasks)
        key = (-wl.priority, wl.submit, wl.id, w)
        self.w_key.append(key)
        heapq.heappush(shape.heap, key)
        self.recorder.submitted(w, wl, shape, now)
        return shape

    def _pass(self, now: float, released: bool, new_shapes: Iterable[_Shape]) -> None:
        """One greedy pass: heads of the shapes that could fit now, in the model's order."""
        heads = []
        if released:
            for shape in self.shapes.values():
                if shape.heap and not shape.nowhere:
                    heads.append((shape.heap[0], shape))
        else:
            for shape in new_shapes:
                if shape.heap and not shape.nowhere and shape.failed_at != self.releases:
                    heads.append((shape.heap[0], shape))
        if not heads:
            return
        if len(heads) > 1:
            heads.sort(key=lambda h: h[0])
            heapq.heapify(heads)
        releases = self.releases
        while heads:
            top, shape = heads[0]
            placed = self._place(shape)
            if placed is None:
                shape.failed_at = releases
                heapq.heappop(heads)
                continue
            heapq.heappop(shape.heap)
            self._start(top[3], placed, now)
            if shape.heap:
                heapq.heapreplace(heads, (shape.heap[0], shape))
            else:
                heapq.heappop(heads)

    def _start(self, w: int, placed: list[tuple[int, int]], now: float) -> None:
        shape = self.w_shape[w]
        used = self.used
        end = now + self.w_run[w]
        rec = self.recorder
        rec.before_start(w, now)
        nodes = []
        for g, i in placed:
            for r, v in shape.groups[g][1]:
                row = used[r]
                row[i] = _add(row[i], v)
            self.seq += 1
            heapq.heappush(self.finishes, (end, self.seq, w, g, i))
            rec.task_started(w, g, now)
            if not nodes or nodes[-1] != i:
                nodes.append(i)
        for i in nodes:
            self._set_leaf(i)
        rec.workload_started(w, now)

    def _finish(self, w: int, g: int, i: int, now: float) -> None:
        shape = self.w_shape[w]
        used = self.used
        for r, v in shape.groups[g][1]:
            row = used[r]
            row[i] = _add(row[i], -v)
        self._set_leaf(i)
        self.releases += 1
        self.w_left[w] -= 1
        self.recorder.task_finished(w, g, now, self.w_killed[w], self.w_left[w] == 0)
