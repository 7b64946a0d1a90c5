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

    __slots__ = ("groups", "need", "heap", "failed_at", "nowhere", "single", "total")

    def __init__(self, groups: list[tuple[int, list, list]], need: list, nowhere: bool):
        self.groups = groups
        self.need = need          # (tree index, amount - EPS) for the positive amounts of group 0
        self.heap: list = []      # (-priority, submit, id, index) of the workloads waiting in it
        self.failed_at = -1       # release counter when its head last failed; -1: try it
        self.nowhere = nowhere
        self.single = len(groups) == 1 and groups[0][0] == 1
        # what the whole gang asks, per resource: more than is free on all nodes together cannot fit
        self.total = [(r, sum(c * vec[r] for c, _, vec in groups if c > 0)) for r in range(len(groups[0][2]))]
        self.total = [(r, v) for r, v in self.total if v > 0]


class FastSimulation:
    """The first-fit model's simulation on parallel lists; ``run`` returns a ``Recorder``."""

    strict = False  # ``makeway.sim.fast.strict``: one batch queue in submit order instead

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
        self.cap_total = [sum(caps) for caps in self.cap]
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
        # every quantity met so far is an int: sums stay ints and need no rounding
        self.ints = all(type(v) is int for caps in self.cap for v in caps)
        self.recorder = FastRecorder(state, model, self)
        self.recorder.model_options = model.options()
        self.releases = 0                 # bumped at every finish
        self.finishes: list = []          # heap of (time, seq, workload, group, node)
        self.seq = 0
        self._raw_shapes: dict[tuple, tuple[_Shape, int, tuple]] = {}
        self.waiting: dict[int, _Shape] = {}   # shapes with workloads waiting that could ever fit

    # -- submissions ---------------------------------------------------------------------------

    def _shape_of(self, wl: Workload) -> tuple[_Shape, int]:
        raw = tuple((g.count, tuple(g.resources.items())) for g in wl.groups)
        hit = self._raw_shapes.get(raw)
        if hit is None:
            hit = self._raw_shapes[raw] = (*self._new_shape(wl), wl.groups)
        elif wl.groups is not hit[2]:
            wl.groups = hit[2]  # an equal tuple: one copy per shape held for the whole run
        return hit[0], hit[1]

    def _new_shape(self, wl: Workload) -> tuple[_Shape, int]:
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
        if tasks == 0:
            from makeway.sim.engine import SimulationError
            raise SimulationError(f"workload {wl.id!r} has no task")
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
            nowhere = nowhere or any(k not in rix and v > 0 for g in wl.groups for k, v in g.resources.items())
            if any(type(v) is not int for _, pairs in key for _, v in pairs):
                self.ints = self.recorder.ints = False
            shape = self.shapes[key] = _Shape(groups, need, nowhere)
        return shape, tasks

    def _fits_some_node(self, vec: list) -> bool:
        cap = self.cap
        for i in range(self.N):
            if all(v <= 0 or v <= cap[r][i] + EPS for r, v in enumerate(vec)):
                return True
        return False

    # -- the free-capacity trees -------------------------------------------------------------------

    def _leaf_down(self, i: int) -> None:
        """Node ``i``'s leaves lowered to ``capacity - used``; maxima recomputed up the trees."""
        j0 = self.size + i
        used, cap = self.used, self.cap
        for r, t in enumerate(self.trees):
            val = cap[r][i] - used[r][i]
            j = j0
            t[j] = val
            while j > 1:
                sib = t[j ^ 1]
                if sib > val:
                    val = sib
                j >>= 1
                if t[j] == val:
                    break
                t[j] = val

    def _leaf_up(self, i: int) -> None:
        """Node ``i``'s leaves raised to ``capacity - used``: only ancestors now below them change."""
        j0 = self.size + i
        used, cap = self.used, self.cap
        for r, t in enumerate(self.trees):
            val = cap[r][i] - used[r][i]
            t[j0] = val
            j = j0 >> 1
            while j and t[j] < val:
                t[j] = val
                j >>= 1

    def _descend(self, need: list) -> int | None:
        """First fit from node 0: walk down, left whenever the left subtree's maxima cover ``need``.

        A subtree passed over on the right holds no fitting node, so a leaf reached is the first
        fit; when the maxima mislead (those of different resources may sit on different nodes),
        the full search with backtracking answers instead.
        """
        size = self.size
        for t, v in need:
            if t[1] < v:
                return None
        node = 1
        while node < size:
            node <<= 1
            for t, v in need:
                if t[node] < v:
                    node += 1
                    break
        for t, v in need:
            if t[node] < v:
                return self._first_fit(need, 0)
        return node - size

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
            i = self._descend(shape.need)
            return None if i is None else [(0, i)]
        used = self.recorder._used
        for r, v in shape.total:  # a necessary condition, with slack for float sums
            if self.cap_total[r] - used[r] + 1e-6 * (1 + v) < v:
                return None
        # Tasks taken by this gang are kept aside (``taken``), not written into the trees: the trees
        # are upper bounds of what is left, so they still find every node with room; a node they
        # offer is checked against what the gang already took there.
        placed: list[tuple[int, int]] = []
        taken: dict[int, list] = {}
        rtrees = range(len(trees))
        n = self.N
        for g, (count, _, vec) in enumerate(shape.groups):
            if count <= 0:
                continue
            need = [(trees[r], v - EPS) for r, v in enumerate(vec) if v > 0] or [(trees[0], -1e300)]
            pos = [(r, v - EPS) for r, v in enumerate(vec) if v > 0]
            one = len(pos) == 1
            r0, v0 = pos[0] if one else (0, 0.0)
            left, i = count, 0
            while left:
                if i >= n:
                    return None
                j = size + i
                leaf = taken.get(i)
                if leaf is None:
                    leaf = [trees[r][j] for r in rtrees]
                if not (leaf[r0] >= v0 if one else all(leaf[r] >= v for r, v in pos)):
                    i = self._first_fit(need, i + 1)
                    if i is None:
                        return None
                    continue
                while left and (leaf[r0] >= v0 if one else all(leaf[r] >= v for r, v in pos)):
                    for r in rtrees:
                        leaf[r] = leaf[r] - vec[r]
                    placed.append((g, i))
                    left -= 1
                taken[i] = leaf
                i += 1
        return placed

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
        heappop, set_leaf, task_finished = heapq.heappop, self._leaf_up, rec.task_finished
        used, w_shape, w_left, w_killed = self.used, self.w_shape, self.w_left, self.w_killed
        w_id, w_q, w_run, w_tasks, w_key = self.w_id, self.w_q, self.w_run, self.w_tasks, self.w_key
        heappush, shape_of, submitted, waiting = heapq.heappush, self._shape_of, rec.submitted, self.waiting
        qix, kill, strict = self.qix, self.options.kill_at_requested_time, self.strict
        rused, qusage, paths = rec._used, rec._qusage, self.paths
        while True:
            t_fin = finishes[0][0] if finishes else None
            if nxt is None and t_fin is None:
                break
            time = t_fin if nxt is None or (t_fin is not None and t_fin <= nxt.submit) else nxt.submit
            if horizon is not None and time > horizon:
                rec.stopped_reason = "horizon"
                break
            self.now = time
            if time > rec.last_t:
                rec.before_change(time)
            while finishes and finishes[0][0] == time:
                _, _, w, g, i = heappop(finishes)
                self.events_processed += 1
                if g < 0:
                    self._finish_gang(w, i, time)
                    released = True
                    continue
                if self.ints:
                    pairs = w_shape[w].groups[g][1]
                    for r, v in pairs:
                        used[r][i] -= v
                        rused[r] -= v
                    for p in paths[w_q[w]]:
                        acc = qusage[p]
                        for r, v in pairs:
                            acc[r] -= v
                    set_leaf(i)
                    self.releases += 1
                    left = w_left[w] - 1
                    w_left[w] = left
                    if w_killed[w]:
                        rec._killed[w] = rec._killed.get(w, 0) + 1
                    if not left:
                        rec._finished.append((w, time))
                    if time > rec.end_t:
                        rec.end_t = time
                    released = True
                    continue
                else:
                    for r, v in w_shape[w].groups[g][1]:
                        row = used[r]
                        row[i] = _add(row[i], -v)
                set_leaf(i)
                self.releases += 1
                left = w_left[w] - 1
                w_left[w] = left
                task_finished(w, g, time, w_killed[w], left == 0)
                released = True
            while nxt is not None and nxt.submit <= time:
                wl = nxt
                if wl.submit < last_fed or wl.queue not in queues or wl.id in wls:
                    self._refuse(wl, last_fed)
                last_fed = wl.submit
                self.events_processed += 1
                shape, tasks = shape_of(wl)
                w = len(w_id)
                wls[wl.id] = wl
                w_id.append(wl.id)
                w_q.append(qix[wl.queue])
                w_shape.append(shape)
                if kill and wl.requested_duration is not None and wl.requested_duration < wl.duration:
                    w_run.append(wl.requested_duration)
                    w_killed.append(True)
                else:
                    w_run.append(wl.duration)
                    w_killed.append(False)
                w_left.append(tasks)
                w_tasks.append(tasks)
                if strict:
                    self._enqueue(wl, w, shape)
                else:
                    key = (-wl.priority, wl.submit, wl.id, w)
                    w_key.append(key)
                    heappush(shape.heap, key)
                    if not shape.nowhere:
                        waiting[id(shape)] = shape
                submitted(w, wl, shape, time)
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

    def _refuse(self, wl: Workload, last_fed: float) -> None:
        """The general engine's error for a submission it would refuse."""
        from makeway.core.state import StateError
        from makeway.sim.engine import SimulationError

        if wl.submit < last_fed:
            raise SimulationError(f"workload {wl.id!r}: trace is not sorted by submit time "
                                  f"({wl.submit} after {last_fed})")
        if wl.queue not in self.state.queues:
            raise SimulationError(f"workload {wl.id!r} names unknown queue {wl.queue!r}")
        raise StateError(f"workload {wl.id!r} submitted twice")

    def _pass(self, now: float, released: bool, new_shapes: Iterable[_Shape]) -> None:
        """One greedy pass: heads of the shapes that could fit now, in the model's order."""
        releases = self.releases
        waiting = self.waiting
        if released:
            cands = list(waiting.values())
        else:
            cands = [s for s in new_shapes if s.failed_at != releases and s.heap and not s.nowhere]
        if not cands:
            return
        if len(cands) == 1:
            shape = cands[0]
            heap = shape.heap
            if shape.single and self.ints:
                self._run_single(shape, now)
                if heap:
                    shape.failed_at = releases
                    return
            elif shape.single:
                need, descend, start = shape.need, self._descend, self._start_single
                while heap:
                    i = descend(need)
                    if i is None:
                        shape.failed_at = releases
                        return
                    start(heapq.heappop(heap)[3], shape, i, now)
            else:
                while heap:
                    placed = self._place(shape)
                    if placed is None:
                        shape.failed_at = releases
                        return
                    self._start(heapq.heappop(heap)[3], placed, now)
            del waiting[id(shape)]
            return
        heads = sorted((shape.heap[0], shape) for shape in cands)
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
                del waiting[id(shape)]
                heapq.heappop(heads)

    def _run_single(self, shape: _Shape, now: float) -> None:
        """Start the workloads of one single-task shape while one fits (integer quantities):
        ``_start_single`` and the recorder's share of it, inline, as this is most of a run."""
        heap, need, pairs = shape.heap, shape.need, shape.groups[0][1]
        descend, set_leaf, heappop, heappush = self._descend, self._leaf_down, heapq.heappop, heapq.heappush
        used, finishes, w_run, w_q = self.used, self.finishes, self.w_run, self.w_q
        rec = self.recorder
        rused, qusage, pres, pn, ptasks = rec._used, rec._qusage, rec._pres, rec._pn, rec._ptasks
        paths, tracked, first, started = self.paths, rec._tracked_paths, rec._first, rec._started
        reasons = rec.reasons
        pending, current, live = reasons.pending, reasons._current, reasons.live
        in_tops, dirty = reasons.in_tops, reasons.dirty
        while heap:
            i = descend(need)
            if i is None:
                return
            w = heappop(heap)[3]
            for r, v in pairs:
                used[r][i] += v
                rused[r] += v
            self.seq += 1
            heappush(finishes, (now + w_run[w], self.seq, w, 0, i))
            q = w_q[w]
            for p in paths[q]:
                acc = qusage[p]
                for r, v in pairs:
                    acc[r] += v
            for p in tracked[q]:
                acc = pres[p]
                for r, v in pairs:
                    acc[r] -= v
                pn[p] -= 1
            ptasks[q] -= 1
            set_leaf(i)
            first[w] = now
            started.append(w)
            del pending[w]  # ``FastReasons.started``, inline (2-3% of a run with little backlog)
            current.pop(w, None)
            live[q] -= 1
            if w in in_tops:
                dirty.add(q)

    def _start_single(self, w: int, shape: _Shape, i: int, now: float) -> None:
        pairs = shape.groups[0][1]
        used = self.used
        if self.ints:
            for r, v in pairs:
                used[r][i] += v
        else:
            for r, v in pairs:
                row = used[r]
                row[i] = _add(row[i], v)
        self.seq += 1
        heapq.heappush(self.finishes, (now + self.w_run[w], self.seq, w, 0, i))
        rec = self.recorder
        rec.task_started(w, 0, now)
        self._leaf_down(i)
        rec.workload_started(w, now)

    def _start(self, w: int, placed: list[tuple[int, int]], now: float) -> None:
        shape = self.w_shape[w]
        used = self.used
        end = now + self.w_run[w]
        rec = self.recorder
        nodes = []
        ints = self.ints
        for g, i in placed:
            for r, v in shape.groups[g][1]:
                row = used[r]
                row[i] = row[i] + v if ints else _add(row[i], v)
            rec.task_started(w, g, now)
            if not nodes or nodes[-1] != i:
                nodes.append(i)
        # A gang's tasks end together, one after another in start order: one entry stands for
        # them all (-1 in the group's place), which keeps their place among other finishes.
        self.seq += 1
        if len(placed) == 1:
            heapq.heappush(self.finishes, (end, self.seq, w, placed[0][0], placed[0][1]))
        else:
            heapq.heappush(self.finishes, (end, self.seq, w, -1, placed))
        for i in nodes:
            self._leaf_down(i)
        rec.workload_started(w, now)

    def _finish_gang(self, w: int, placed: list[tuple[int, int]], now: float) -> None:
        """Every task of a gang ends, in start order, as the general engine ends them one by one."""
        used, groups, ints = self.used, self.w_shape[w].groups, self.ints
        finished = self.recorder.task_finished
        killed = self.w_killed[w]
        nodes = []
        for g, i in placed:
            for r, v in groups[g][1]:
                row = used[r]
                row[i] = row[i] - v if ints else _add(row[i], -v)
            if not nodes or nodes[-1] != i:
                nodes.append(i)
            self.releases += 1
            left = self.w_left[w] - 1
            self.w_left[w] = left
            finished(w, g, now, killed, left == 0)
        self.events_processed += len(placed) - 1
        for i in nodes:
            self._leaf_up(i)
