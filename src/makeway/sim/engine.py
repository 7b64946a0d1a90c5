"""The simulator: a virtual clock and an event heap driving the core and one preemption model.

Events at the same instant are applied in a fixed order (finishes and grace expiries free resources
first, then config changes, then submissions), then the model's ``schedule`` runs once, then node
heartbeats. Every tie is broken by a sequence number, so a run is a pure function of its inputs.

Idle stretches cost nothing: when the model says it is ``quiet`` (nothing it could place or
preempt until the next submission, finish, grace expiry, config change or timer) the periodic
events up to that next event are skipped in one step, and the model catches up on the few things
they would have moved (``skip_periodic``: e.g. the time of YTsaurus's last fair share update).
Skipped periodic times are computed by the same repeated float additions as the unskipped run, so
every later event falls on the same instant and the decisions are the same
(``SimOptions.skip_idle=False`` pays for every call, as a check). Likewise a stretch made only of
the model's own wake-ups, before the next other event or pending-reason round, is handed to the
model (``skip_wakes``), which runs those instants itself when each call there would decide
nothing; the engine counts them as run.

A zero-length task finishes at the instant it starts: its finish is a new event at the same time,
so the instant is processed again (finish first, then ``schedule``) before the clock moves; the
freed resources can be used at once. (Simulators such as AccaSim wait for the next event instead.)

A run that can make no more progress (allocations preempted and restarted for ever, nothing left to
submit) is stopped by ``progress.NoProgressWatch``; the recorder then carries ``stopped_reason``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from makeway.core.decisions import Decision, Note, Preempt, Start
from makeway.core.objects import Workload
from makeway.core.policy import PreemptionModel
from makeway.core.state import ClusterState
from makeway.errors import MakewayError
from makeway.sim.collector import fewer_young_collections
from makeway.sim.metrics import Recorder
from makeway.core.periodic import QuietExcept, Row, Skipped, advance, push_order
from makeway.sim.progress import NoProgressWatch
from makeway.sim.trace import ConfigChange


# Event kinds, in the order they are applied within one instant.
FINISH, GRACE, CONFIG, SUBMIT, WAKE, TICK, HEARTBEAT = range(7)
_PERIODIC = (TICK, HEARTBEAT)
_INPUTS = (CONFIG, SUBMIT, WAKE)


class SimulationError(MakewayError):
    """A model asked for something impossible (a Start that does not fit, an unknown victim)."""


def first_other_than(heap: list[tuple], kind: int) -> float:
    """The earliest time of an entry of the heap not of ``kind`` (inf if none), visiting only the
    entries of ``kind`` at its top and their children: below an entry of another kind every entry
    comes later, so the walk need not go there. Costs the number of ``kind`` entries, not the heap."""
    best = math.inf
    stack = [0] if heap else []
    n = len(heap)
    while stack:
        i = stack.pop()
        t, k = heap[i][0], heap[i][1]
        if t >= best:
            continue
        if k != kind:
            best = t
            continue
        for c in (2 * i + 1, 2 * i + 2):
            if c < n:
                stack.append(c)
    return best


@dataclass(slots=True)
class SimOptions:
    horizon: float | None = None
    kill_at_requested_time: bool = False
    heartbeat_period: float | None = None
    record_starts: bool = False
    check_invariants: bool = False
    progress: Callable[[float, int], None] | None = None
    # seconds without progress before a cycling run is stopped; None: max(600 s, 50 heartbeat or
    # tick periods); math.inf: never
    no_progress_window: float | None = None
    # skip ticks and heartbeats across stretches the model reports quiet (same decisions, less work)
    skip_idle: bool = True
    # "auto": the struct-of-arrays core (makeway.sim.fast) where it applies, and Kueue's classic
    # admission decided by its compiled loop (makeway.sim.fast.kueue); "general": always this
    # engine and the model's own ``schedule`` (the reference path)
    engine: str = "auto"


@dataclass(slots=True)
class Simulation:
    state: ClusterState
    model: PreemptionModel
    options: SimOptions = field(default_factory=SimOptions)
    recorder: Recorder = field(init=False)
    now: float = 0.0
    _heap: list = field(default_factory=list)
    _seq: int = 0
    _real_events: int = 0
    _wakes: set = field(default_factory=set)
    _killed: set = field(default_factory=set)
    events_processed: int = 0
    _feed: Any = None
    _next: Any = None
    _last_fed: float = float("-inf")
    _inputs: int = 0                     # submissions, config events and wake-ups in the heap
    _watch: NoProgressWatch | None = None
    _preempted_now: bool = False
    skipped_calls: int = 0               # periodic events skipped over quiet stretches
    skipped_wakes: int = 0               # instants of the model's own wake-ups run by the model

    # A model whose victims leave at once is asked again in the same instant, so the preemptor can
    # use what was freed; bounded, so a model that keeps preempting cannot spin forever.
    MAX_ROUNDS = 16

    def __post_init__(self) -> None:
        self.recorder = Recorder(self.state, record_starts=self.options.record_starts, model=self.model)
        self.recorder.model_options = self.model.options()

    # -- event heap ----------------------------------------------------------------------------

    def _push(self, time: float, kind: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, kind, self._seq, payload))
        if kind not in _PERIODIC:
            self._real_events += 1
            if kind in _INPUTS:
                self._inputs += 1

    def add_workloads(self, workloads: Iterable[Workload]) -> None:
        for wl in workloads:
            self._push(wl.submit, SUBMIT, wl)

    def stream_workloads(self, workloads: Iterable[Workload]) -> None:
        """Feed workloads sorted by submit time lazily: only the next one sits in memory unsubmitted."""
        self._feed = iter(workloads)
        self._advance_feed()

    def _advance_feed(self) -> None:
        self._next = next(self._feed, None) if self._feed is not None else None
        if self._next is not None:
            self._real_events += 1

    def _pull_feed(self, until: float | None) -> None:
        """Move streamed workloads due at or before ``until`` (or the next one) into the heap."""
        while self._next is not None and (until is None or self._next.submit <= until):
            wl = self._next
            if wl.submit < self._last_fed:
                raise SimulationError(f"workload {wl.id!r}: trace is not sorted by submit time "
                                      f"({wl.submit} after {self._last_fed})")
            self._last_fed = wl.submit
            self._real_events -= 1
            self._push(wl.submit, SUBMIT, wl)
            self._advance_feed()
            until = wl.submit if until is None else until

    def add_changes(self, changes: Iterable[ConfigChange]) -> None:
        for ch in changes:
            if ch.queue not in self.state.queues:
                raise SimulationError(f"config event at t={ch.time}: unknown queue {ch.queue!r}")
            self._push(ch.time, CONFIG, ch)

    # -- applying decisions ----------------------------------------------------------------------

    def _apply(self, decisions: list[Decision]) -> bool:
        """Apply decisions in order; True when a victim left at once (resources freed this instant)."""
        state, now = self.state, self.now
        freed = False
        for d in decisions:
            if isinstance(d, Start):
                self._start(d, now)
            elif isinstance(d, Preempt):
                alloc = state.allocations.get(d.allocation)
                if alloc is None:
                    raise SimulationError(f"model {self.model.name!r} preempted unknown allocation {d.allocation!r}")
                if alloc.preempting:
                    continue
                grace = self.model.grace_period(state, d.allocation)
                self.recorder.preempt(alloc, d.reason, now, grace)
                if self._watch is not None:
                    self._watch.preempted(d.allocation, d.reason.preemptor, now)
                    self._preempted_now = True
                if grace > 0:
                    state.mark_preempting(d.allocation)
                    self._push(now + grace, GRACE, (d.allocation, alloc.seq))
                else:
                    self._evict(d.allocation, now)
                    freed = True
            elif isinstance(d, Note):
                self.recorder.note(d, now)
            else:
                raise SimulationError(f"model {self.model.name!r} returned {d!r}, not a decision")
        return freed

    def _start(self, d: Start, now: float) -> None:
        state = self.state
        wl_id = d.task.rsplit("/", 2)[0]
        if d.task not in state.pending.get(wl_id, ()):
            raise SimulationError(f"model {self.model.name!r} started {d.task!r}, which is not pending")
        if d.node not in state.nodes:
            raise SimulationError(f"model {self.model.name!r} started {d.task!r} on unknown node {d.node!r}")
        if not state.fits_node(state.task_resources(d.task), d.node):
            raise SimulationError(f"model {self.model.name!r} started {d.task!r} on {d.node!r}, where it does not fit")
        self.recorder.before_change(now)
        alloc = state.start(d.task, d.node, now)
        wl = state.workloads[wl_id]
        run = wl.duration
        if self.options.kill_at_requested_time and wl.requested_duration is not None and wl.requested_duration < run:
            run = wl.requested_duration
            self._killed.add(d.task)
        self.recorder.start(alloc, now)
        if self._watch is not None:
            self._watch.started(d.task, now)
        self._push(now + run, FINISH, (d.task, alloc.seq))

    def _evict(self, tid: str, now: float) -> None:
        self.recorder.before_change(now)
        alloc = self.state.end(tid)
        self.state.requeue(tid)
        self.recorder.evicted(alloc, now)

    # -- the loop --------------------------------------------------------------------------------

    @property
    def _max_period(self) -> float:
        periods = [p for p in (self.options.heartbeat_period or self.model.heartbeat_period,
                               self.model.tick_period) if p]
        return max(periods, default=0.0)

    def _seed_periodic(self) -> None:
        period = self.options.heartbeat_period or self.model.heartbeat_period
        if period:
            nodes = list(self.state.nodes)
            splay = self.model.heartbeat_splay or 0.0
            for i, n in enumerate(nodes):
                offset = (splay * i / len(nodes)) if splay else 0.0
                self._push(offset, HEARTBEAT, (n, period))
        if self.model.tick_period:
            self._push(0.0, TICK, self.model.tick_period)

    def _window(self) -> float:
        w = self.options.no_progress_window
        return max(600.0, 50 * self._max_period) if w is None else w

    def _stuck(self, time: float) -> bool:
        """True (and the stop recorded) when the no-progress watch finds the run cycling."""
        watch = self._watch
        assert watch is not None
        allocs = self.state.allocations
        pending = self._inputs > 0 or self._next is not None
        if not watch.stuck(time, ((t, a.start) for t, a in allocs.items()), pending):
            return False
        message, workloads = watch.describe(time, lambda t: t.rsplit("/", 2)[0])
        self.recorder.stop(time, "no-progress", message, workloads)
        return True

    def _idle(self) -> bool:
        """True when nothing but periodic events remain and nothing can change any more."""
        return self._real_events == 0 and not self.state.allocations

    def run(self) -> Recorder:
        with fewer_young_collections():
            return self._run()

    def _run(self) -> Recorder:
        state, model = self.state, self.model
        model.bind(state)
        self._seed_periodic()
        horizon = self.options.horizon
        idle_since: float | None = None
        window = self._window()
        self._watch = NoProgressWatch(window) if window < float("inf") else None
        while True:
            self._pull_feed(self._heap[0][0] if self._heap else None)
            if not self._heap:
                break
            if self.options.skip_idle and self._heap[0][1] == WAKE and self._skip_wakes():
                idle_since = None
                continue
            time = self._heap[0][0]
            if horizon is not None and time > horizon:
                self.recorder.stopped_reason = "horizon"
                break
            self.now = time
            beats: list[str] = []
            changed = False
            self._preempted_now = False
            while self._heap and self._heap[0][0] == time:
                _, kind, _, payload = heapq.heappop(self._heap)
                self.events_processed += 1
                if kind not in _PERIODIC:
                    self._real_events -= 1
                    if kind in _INPUTS:
                        self._inputs -= 1
                changed |= self._handle(kind, payload, beats)
            made = False
            for _ in range(self.MAX_ROUNDS):
                decisions = model.schedule(state, time)
                made |= bool(decisions)
                if not self._apply(decisions):
                    break
            for node in beats:
                d = model.heartbeat(state, node, time)
                self._apply(d)
                made |= bool(d)
            if made or changed:  # the same instants with or without idle skipping
                self.recorder.after_instant(time)
            wake = model.next_wakeup(state, time)
            if wake is not None and wake > time and wake not in self._wakes:
                self._wakes.add(wake)
                self._push(wake, WAKE, None)
            if self.options.check_invariants:
                problems = state.check_invariants()
                if problems:
                    raise SimulationError(f"t={time}: invariant broken: {problems[0]}")
            if self.options.progress is not None:
                self.options.progress(time, self.events_processed)
            if self._preempted_now and self._stuck(time):
                break
            if self._idle() and not (made or changed):
                if idle_since is None:
                    idle_since = time
                elif time - idle_since > 2 * self._max_period:
                    break
            else:
                idle_since = None
            if self.options.skip_idle and self._heap and self._heap[0][1] in _PERIODIC:
                self._skip_quiet(time)
        self.recorder.close(self.now)
        return self.recorder

    def _skip_wakes(self) -> bool:
        """Run the instants made only of the model's own wake-ups in one step, when the model can
        (``skip_wakes``): those before the next other event, the next streamed submission, the
        next pending-reason round and the horizon (an instant there is run as usual). Each would
        have cost one event, one ``schedule`` call that decides nothing and one reason
        observation that records nothing; the engine counts them as run."""
        heap = self._heap
        if len(self._wakes) == 1:  # the only wake-up is the top: the next other event is a child
            wakes = [heap[0][0]]
            limit = min(heap[1][0] if len(heap) > 1 else math.inf, heap[2][0] if len(heap) > 2 else math.inf)
        else:
            wakes = sorted(self._wakes)  # every wake-up in the heap, each once
            limit = first_other_than(heap, WAKE)
        if self._next is not None:
            limit = min(limit, self._next.submit)
        if self.options.horizon is not None:
            limit = min(limit, self.options.horizon)
        reasons = self.recorder.reasons
        if reasons is not None:
            limit = min(limit, reasons.clock.next)
        wakes = [t for t in wakes if t < limit]
        if not wakes or limit == math.inf:
            return False
        done = self.model.skip_wakes(self.state, wakes, limit)
        if done is None:
            return False
        count, last, limit, later = done
        run = [t for t in self._wakes if t < limit]
        if len(run) == 1 and heap[0][1] == WAKE and heap[0][0] == run[0]:
            heapq.heappop(heap)
        elif run:
            self._heap = [e for e in heap if e[1] != WAKE or e[0] >= limit]
            heapq.heapify(self._heap)
        for t in run:
            self._wakes.discard(t)
            self._real_events -= 1
            self._inputs -= 1
        self.events_processed += count
        self.skipped_wakes += count
        self.now = last
        for wake in (*later, self.model.next_wakeup(self.state, last)):
            if wake is not None and wake > last and wake not in self._wakes:
                self._wakes.add(wake)
                self._push(wake, WAKE, None)
        if self.options.progress is not None:
            self.options.progress(last, self.events_processed)
        return True

    def _skip_quiet(self, now: float) -> None:
        """Move every tick and heartbeat past a stretch the model reports quiet (see the module doc).

        The stretch ends before the next non-periodic event (streamed submissions included): the
        periodic events due exactly then are kept. Past the horizon, every periodic time up to the
        horizon is skipped and the clock is left at the last of them, where the unskipped run stops.
        A model quiet only until some time (a timer of its own that the periodic calls would
        notice) has the periodic times from then on kept. A model quiet but for the heartbeats of
        some nodes (``QuietExcept``) is asked about each node in the order of their next
        heartbeats, and the stretch ends at the first heartbeat of one that decides. Each row
        moves in closed form (``makeway.core.periodic``); the model gets the rows, not the times.
        """
        verdict = self.model.quiet(self.state, now)
        if verdict is False or verdict is None:
            return
        if isinstance(verdict, QuietExcept):
            self._skip_to_deciding(now, verdict)
            return
        until = math.inf if verdict is True else float(verdict)
        if until <= now:
            return
        real = self._next.submit if self._next is not None else math.inf
        periodic = []
        others = []
        for entry in self._heap:
            if entry[1] in _PERIODIC:
                periodic.append(entry)
            else:
                others.append(entry)
                if entry[0] < real:
                    real = entry[0]
        if real == math.inf:
            return  # nothing left to happen: the idle rule of ``run`` ends the run
        horizon = self.options.horizon
        limit = min(real, until)
        beyond = horizon is not None and limit > horizon
        if beyond:
            limit = horizon
        skipped = Skipped(now, limit, beyond)
        last = -math.inf
        total = 0
        moved = []
        for e in periodic:
            row = _advance(e, limit, beyond)
            if not row.count:  # not called in the stretch: it keeps its entry, as unskipped
                others.append(e)
                continue
            total += row.count
            last = max(last, row.last)
            (skipped.ticks if e[1] == TICK else skipped.beats).append(row)
            moved.append((row, e[2], e[3]))
        for row, _, payload in push_order(moved):
            self._seq += 1
            others.append((row.next, row.kind, self._seq, payload))
        if total:
            self.skipped_calls += total
            self.model.skip_periodic(self.state, skipped)
        heapq.heapify(others)
        self._heap = others
        if beyond and last > self.now:
            self.now = last

    def _skip_to_deciding(self, now: float, verdict: QuietExcept) -> None:
        """``_skip_quiet`` for a model quiet but for the heartbeats of some nodes: the periodic
        events are taken off the heap in time order, each heartbeat's node asked whether it
        decides, up to the first that does, the first other event or the verdict's end. Only the
        events taken are moved, so a short stretch costs what it skips, not every row; the others
        keep their place and sequence number, as in the run that calls them, where none of them
        was pushed again. Past the horizon, as in ``_skip_quiet``: every periodic time up to it
        is skipped and the clock is left at the last of them."""
        heap = self._heap
        limit = verdict.until
        if self._next is not None and self._next.submit < limit:
            limit = self._next.submit
        horizon = self.options.horizon
        beyond = horizon is not None and limit > horizon
        if beyond:
            limit = horizon
        decides = verdict.decides
        taken = []
        while heap:
            time, kind, _, payload = heap[0]
            if time > limit or (time == limit and not beyond):
                break
            if kind not in _PERIODIC or (kind == HEARTBEAT and decides(payload[0])):
                limit, beyond = time, False
                break
            taken.append(heapq.heappop(heap))
        if not taken:
            return
        if limit == math.inf:  # nothing left to happen: the idle rule of ``run`` ends the run
            for e in taken:
                heapq.heappush(heap, e)
            return
        skipped = Skipped(now, limit, beyond)
        last = -math.inf
        total = 0
        moved = []
        for e in taken:
            row = _advance(e, limit, beyond)
            if not row.count:  # due with the one that decides: it keeps its place before it
                heapq.heappush(heap, e)
                continue
            total += row.count
            last = max(last, row.last)
            (skipped.ticks if e[1] == TICK else skipped.beats).append(row)
            moved.append((row, e[2], e[3]))
        for row, _, payload in push_order(moved):
            self._seq += 1
            heapq.heappush(heap, (row.next, row.kind, self._seq, payload))
        if total:
            self.skipped_calls += total
            self.model.skip_periodic(self.state, skipped)
        if beyond and last > self.now:
            self.now = last

    def _handle(self, kind: int, payload: Any, beats: list[str]) -> bool:
        state, now = self.state, self.now
        if kind == FINISH:
            tid, seq = payload
            alloc = state.allocations.get(tid)
            if alloc is None or alloc.seq != seq:
                return False
            self.recorder.before_change(now)
            state.finish(tid)
            self.recorder.finish(alloc, now, killed=tid in self._killed)
            if self._watch is not None:
                self._watch.progress(now)
            return True
        if kind == GRACE:
            tid, seq = payload
            alloc = state.allocations.get(tid)
            if alloc is None or alloc.seq != seq:
                return False
            self._evict(tid, now)
            return True
        if kind == CONFIG:
            ch: ConfigChange = payload
            old = state.update_queue(ch.queue, **ch.changes)
            self.recorder.config_change(ch, now)
            if self._watch is not None:
                self._watch.progress(now)
            self._apply(self.model.on_config_change(state, ch.queue, old, now))
            return True
        if kind == SUBMIT:
            wl: Workload = payload
            if wl.queue not in state.queues:
                raise SimulationError(f"workload {wl.id!r} names unknown queue {wl.queue!r}")
            state.submit(wl)
            self.recorder.submit(wl, now)
            if self._watch is not None:
                self._watch.progress(now)
            return True
        if kind == WAKE:
            self._wakes.discard(now)
            return True
        if kind == TICK:
            self._push(now + payload, TICK, payload)
            return False
        if kind == HEARTBEAT:
            node, period = payload
            beats.append(node)
            self._push(now + period, HEARTBEAT, payload)
            return False
        raise SimulationError(f"unknown event kind {kind}")


def _advance(entry: tuple, end: float, inclusive: bool) -> Row:
    """A periodic heap entry's row over a skipped stretch ending at ``end``: the same floats the
    unskipped run's re-pushes (``now + period``) give, computed in closed form."""
    time, kind, _, payload = entry
    period = payload if kind == TICK else payload[1]
    count, last, nxt = advance(time, period, end, inclusive)
    return Row(kind, payload if kind == TICK else payload[0], time, period, count, last, nxt)


def simulate(state: ClusterState, model: PreemptionModel, workloads: Iterable[Workload],
             changes: Iterable[ConfigChange] = (), options: SimOptions | None = None,
             streamed: bool = False) -> Recorder:
    """Run a simulation. ``streamed=True`` takes ``workloads`` as an iterator sorted by submit time.

    Runs the fast core (``makeway.sim.fast``) when it applies and ``options.engine`` allows it;
    the results are the same either way.
    """
    options = options or SimOptions()
    changes = list(changes)
    sim = make_simulation(state, model, options, bool(changes))
    if isinstance(sim, Simulation):
        if streamed:
            sim.stream_workloads(workloads)
        else:
            sim.add_workloads(workloads)
        sim.add_changes(changes)
        return sim.run()
    return sim.run(workloads if streamed else sorted(workloads, key=lambda w: w.submit))


def make_simulation(state: ClusterState, model: PreemptionModel, options: SimOptions, has_changes: bool) -> Any:
    """The fast core's simulation when it can run this one, else the general ``Simulation``.

    The fast one is fed by ``run(workloads)`` (sorted by submit time); the general one as usual.
    """
    from makeway.sim.fast.dispatch import core_for, why_not

    if options.engine not in ("auto", "general"):
        raise SimulationError(f"engine: {options.engine!r} is not one of auto, general")
    if why_not(state, model, options, has_changes) is None:
        model.bind(state)
        return core_for(model)(state, model, options)
    from makeway.sim.fast import kueue

    if kueue.why_not(state, model, options, has_changes) is None:
        return kueue.CompiledKueue(state, model, options)
    if getattr(model, "name", None) == "yunikorn":
        from makeway.sim.fast import yunikorn

        if yunikorn.why_not(state, model, options, has_changes) is None:
            return yunikorn.CompiledYuniKorn(state, model, options)
    if getattr(model, "name", None) == "ytsaurus":
        from makeway.sim.fast import ytsaurus

        if ytsaurus.why_not(state, model, options, has_changes) is None:
            return ytsaurus.CompiledYTsaurus(state, model, options)
    return Simulation(state, model, options)
