"""YuniKorn quota enforcement through preemption (SEMANTICS section 4).

Lowering a queue's max does not stop what already runs. With the partition flag
``quotaPreemptionEnabled`` and a queue property ``quota.preemption.delay`` (own or inherited), a
lowered max arms a timer; when it fires the queue sheds, once and best effort, what it uses above
the new max, never taking itself or an ancestor below its guarantee and never overshooting. A parent
splits its amount over its children by their releasable usage, recursively, flooring each share.

The arithmetic works on a small per-queue view (``QueueView``) built from the cluster state, so the
conformance loader (YuniKorn unit-test fixtures) and the simulator drive the same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from makeway.policies.yunikorn.events import preempted_by_quota_change_message
from makeway.core.decisions import Decision, Note, Preempt, Reason
from makeway.core.resources import MaybeRes, Res, add_into
from makeway.policies.yunikorn.resources import (comp_usage_ratio_specific_types, component_wise_min,
                                                 component_wise_min_only_existing, equals, fit_in_max_undef,
                                                 is_empty, is_zero, match_any, strictly_greater_than,
                                                 strictly_greater_than_or_equals_only_existing, sub_only_existing,
                                                 type_matching)
from makeway.core.state import ClusterState
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.policies.yunikorn.common import go_slice_stable, parse_go_duration_us

PROP_QUOTA_DELAY = "quota.preemption.delay"
TRIGGER_PERIOD = 1.0  # YuniKorn's quota-preemption trigger loop runs every second
RULE = "quota-decrease"

SUCCESSFUL = "successful"
BEST_EFFORT = "best-effort"
UNSUCCESSFUL = "unsuccessful"


# ---------------------------------------------------------------------------------------------
# Configuration helpers


def configured(r: MaybeRes) -> Res | None:
    """YuniKorn stores a configured max/guaranteed that is empty or all zero as unset (nil)."""
    if r is None or not any(v > 0 for v in r.values()):
        return None
    return dict(r)


def parse_quota_delay(value: object) -> float:
    """``quota.preemption.delay`` in seconds; negative, zero or unreadable means off (0)."""
    if value is None:
        return 0.0
    us = parse_go_duration_us(value)
    if us is None or us <= 0:
        return 0.0
    return us / 1e6


def queue_properties(state: ClusterState, queue: str) -> Mapping[str, Any]:
    return state.queues[queue].settings.get("properties") or {}


def effective_delays(state: ClusterState) -> dict[str, float]:
    """The delay of every queue: its own property, else inherited from the nearest ancestor."""
    out: dict[str, float] = {}
    for name in state.queues:
        delay = 0.0
        for q in state.path_to_root(name):
            props = queue_properties(state, q)
            if PROP_QUOTA_DELAY in props:
                delay = parse_quota_delay(props[PROP_QUOTA_DELAY])
                break
        out[name] = delay
    return out


# ---------------------------------------------------------------------------------------------
# Start-time state machine (section 4.2)


@dataclass(slots=True)
class Timer:
    """Per-queue quota-preemption clock: ``start`` None means "not armed"."""

    start: float | None = None
    delay: float = 0.0
    running: bool = False


def within_max(max_res: MaybeRes, usage: MaybeRes) -> bool:
    """Usage within max with the only-existing rules (disjoint types count as within; nil max never)."""
    return strictly_greater_than_or_equals_only_existing(max_res, usage)


def update_timer(t: Timer, old_max: MaybeRes, new_max: MaybeRes, usage: MaybeRes,
                 old_delay: float, delay: float, now: float) -> None:
    """Apply a config (re)load to a queue's timer, as YuniKorn's ``setPreemptionTime`` does.

    Consecutive lowerings keep the earliest start; a delay change shifts a pending start by the
    delta (possibly into the past); mixed changes, new types or a max set from unset never arm.
    """
    t.delay = delay
    if t.running:
        return
    if delay <= 0 or new_max is None or within_max(new_max, usage):
        t.start = None
        return
    delta = delay - old_delay
    if equals(old_max, new_max, same_ref=old_max is new_max):
        if t.start is None and old_delay <= 0 < delay:
            t.start = now + delay
        elif t.start is not None and delta != 0:
            t.start += delta
    elif strictly_greater_than(old_max, new_max):
        if t.start is None:
            t.start = now + delay
        elif delta != 0:
            t.start += delta
    elif strictly_greater_than(new_max, old_max):
        if t.start is not None and delta != 0:
            t.start += delta


def arm_on_allocation(t: Timer, max_res: MaybeRes, usage: MaybeRes, now: float, *, enabled: bool,
                      managed: bool = True) -> None:
    """An allocation added or resized outside the scheduling path may arm (never re-arm) the timer."""
    if enabled and t.start is None and managed and t.delay > 0 and max_res is not None \
            and not within_max(max_res, usage):
        t.start = now + t.delay


def try_acquire(t: Timer, max_res: MaybeRes, usage: MaybeRes, now: float, *, managed: bool = True) -> bool:
    """The atomic gate before a run: due, over max and not already running."""
    if not managed or t.running:
        return False
    if within_max(max_res, usage):
        t.start = None
        return False
    if t.start is None or t.start > now:
        return False
    t.running = True
    return True


def release(t: Timer) -> None:
    """A run finished: one run per arming, so the start time is cleared too."""
    t.running = False
    t.start = None


# ---------------------------------------------------------------------------------------------
# The view the preemptor computes on


@dataclass(slots=True)
class Victim:
    key: str
    queue: str
    resources: Res
    priority: int = 0
    created: float = 0.0  # seconds; only the clock hour matters for ordering
    originator: bool = False
    opted_out: bool = False
    pinned: bool = False
    released: bool = False
    preempted: bool = False


@dataclass(slots=True)
class QueueView:
    name: str
    parent: str | None
    children: list[str]
    guaranteed: Res | None
    max: Res | None
    usage: Res
    preempting: Res
    victims: list[Victim] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children


class View(dict):
    """Queue name -> QueueView, plus the per-type integer scale the values were converted with.

    YuniKorn computes in int64 (millicores, bytes). Types whose values are all integral keep
    their unit (scale 1); a type with fractional values (cpu in cores) is counted in thousandths,
    YuniKorn's own vcore unit, so sums and floors stay exact instead of drifting in floats.
    """

    scale: dict[str, int]

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.scale = {}

    def unscale(self, r: MaybeRes) -> Res | None:
        if r is None:
            return None
        out: Res = {}
        for k, v in r.items():
            f = self.scale.get(k, 1)
            out[k] = v if f == 1 else (v // f if v % f == 0 else v / f)
        return out


def _scales(resources: list[MaybeRes]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in resources:
        for k, v in (r or {}).items():
            if isinstance(v, float) and not v.is_integer():
                out[k] = 1000
    return out


def _scaled(r: MaybeRes, scale: dict[str, int]) -> Res | None:
    if r is None:
        return None
    return {k: (int(round(v * scale[k])) if k in scale else (int(v) if isinstance(v, float) else v))
            for k, v in r.items()}


def victim_from_state(state: ClusterState, tid: str) -> Victim | None:
    """How a running task looks to the quota preemptor; None for tasks that may never be victims.

    Workload settings read: ``allowPreemption`` (false = opted out, ordered differently but still a
    candidate), ``originator`` (marks the workload's first task), ``requiredNode`` (pinned, skipped).
    A workload with ``preemptible: false`` is makeway's hard guarantee and is never a victim.
    """
    a = state.allocations[tid]
    if not a.preemptible:
        return None
    s = state.workloads[a.workload].settings
    first = tid.endswith("/0/0")
    return Victim(tid, a.queue, a.resources, a.priority, a.start,
                  originator=bool(s.get("originator")) and first,
                  opted_out=not bool(s.get("allowPreemption", True)),
                  pinned=bool(s.get("requiredNode")),
                  preempted=a.preempting)


def view_from_state(state: ClusterState) -> View:
    preempting: dict[str, Res] = {q: {} for q in state.queues}
    for a in state.allocations.values():
        if a.preempting:
            for q in state.path_to_root(a.queue):
                add_into(preempting[q], a.resources)
    view = View()
    for name, q in state.queues.items():
        victims = [v for tid in state.queue_allocs[name] if (v := victim_from_state(state, tid)) is not None]
        view[name] = QueueView(name, q.parent, list(q.children), configured(q.guaranteed), configured(q.max),
                               dict(state.queue_usage[name]), preempting[name], victims)
    scale = _scales([r for qv in view.values() for r in (qv.guaranteed, qv.max, qv.usage, qv.preempting)]
                    + [v.resources for qv in view.values() for v in qv.victims])
    if scale:
        view.scale = scale
        for qv in view.values():
            qv.guaranteed, qv.max = _scaled(qv.guaranteed, scale), _scaled(qv.max, scale)
            qv.usage, qv.preempting = _scaled(qv.usage, scale) or {}, _scaled(qv.preempting, scale) or {}
            for v in qv.victims:
                v.resources = _scaled(v.resources, scale) or {}
    return view


def _chain(view: View, queue: str) -> list[str]:
    out: list[str] = []
    cur: str | None = queue
    while cur is not None:
        out.append(cur)
        cur = view[cur].parent
    return out


# ---------------------------------------------------------------------------------------------
# Amount to shed (4.4), distribution (4.5), victims (4.6)


def guarantee_cap(view: View, queue: str) -> Res:
    """How far the tightest queue of the chain is above its guarantee, per type where it is."""
    low: Res | None = None
    for q in _chain(view, queue):
        qv = view[q]
        g = dict(qv.usage) if qv.guaranteed is None else sub_only_existing(qv.guaranteed, qv.usage)
        low = component_wise_min(low, g)
    return {k: -v for k, v in (low or {}).items() if v < 0}


def amount_to_shed(view: View, queue: str) -> Res | None:
    """Usage above the max (max's types only), capped by the guarantee floor; None = nothing to do."""
    qv = view[queue]
    used = sub_only_existing(qv.usage, qv.preempting)
    if is_empty(qv.max) or is_empty(used):
        return None
    over = {k: used.get(k, 0) - v for k, v in qv.max.items() if used.get(k, 0) - v > 0}  # type: ignore[union-attr]
    amount = component_wise_min_only_existing(over, guarantee_cap(view, queue))
    return amount or None


def over_max(view: View, queue: str) -> Res:
    qv = view[queue]
    used = sub_only_existing(qv.usage, qv.preempting) or {}
    return {k: used.get(k, 0) - v for k, v in (qv.max or {}).items() if used.get(k, 0) - v > 0}


def releasable(qv: QueueView) -> Res | None:
    """A child's weight in the split; None when it is empty or at/under its guarantee (skipped)."""
    if is_empty(qv.usage) or strictly_greater_than_or_equals_only_existing(qv.guaranteed, qv.usage):
        return None
    base = sub_only_existing(qv.guaranteed, qv.usage) if not is_empty(qv.guaranteed) else qv.usage
    return {k: abs(v) for k, v in (base or {}).items()}


def distribute(view: View, queue: str, amount: Res, out: dict[str, Res] | None = None) -> dict[str, Res]:
    """Leaf targets below ``queue``: each child gets floor(rel/total x parent amount), per type."""
    out = {} if out is None else out
    rels = [(c, r) for c in view[queue].children if (r := releasable(view[c])) is not None]
    total: Res = {}
    for _, r in rels:
        add_into(total, r)
    for child, rel in rels:
        share: Res = {}
        for k, v in rel.items():
            if k in amount:
                frac = (v / total[k] if total.get(k) else float(v)) if v != 0 else 0.0
                share[k] = int(math.floor(frac * float(amount[k])))
        if view[child].is_leaf:
            out[child] = share
        else:
            distribute(view, child, share, out)
    return out


def filter_victims(qv: QueueView, amount: MaybeRes) -> list[Victim]:
    if is_zero(amount):
        return []
    return [v for v in qv.victims
            if match_any(amount, v.resources) and not v.pinned and not v.released and not v.preempted]


def sort_victims(victims: list[Victim], total: MaybeRes, amount: Res) -> list[Victim]:
    """YuniKorn's quota order: score (originator/opt-out bits + type match) high first, lower
    priority, later clock hour, smaller share of the leaf max. Full ties answer "less", which under
    Go's stable sort reverses equal runs; we keep that, as the code does."""

    def score(v: Victim) -> int:
        return (2**33 if v.originator else 0) + (2**34 if v.opted_out else 0) + type_matching(v.resources, amount)

    def less(left: Victim, right: Victim) -> bool:
        sl, sr = score(left), score(right)
        if sl != sr:
            return sl > sr
        if left.priority != right.priority:
            return left.priority < right.priority
        hl, hr = math.floor(left.created / 3600), math.floor(right.created / 3600)
        if hl != hr:
            return hl > hr
        return comp_usage_ratio_specific_types(left.resources, right.resources, total, amount) <= 0

    return go_slice_stable(victims, less)


class GuaranteeFloor:
    """Room above guarantee of the triggering queue and its ancestors, shared by all leaves of a run.

    makeway addition: YuniKorn's amount cap protects these queues only in the types of the amount;
    a leaf target that dropped a type (4.5) or a victim's extra types could still take a parent below
    its guarantee. A victim is refused when it would; no visible case reaches that edge.
    """

    def __init__(self, view: View, queue: str):
        self.room: dict[str, Res] = {}
        for q in _chain(view, queue):
            qv = view[q]
            used = sub_only_existing(qv.usage, qv.preempting) or {}
            # only types above guarantee are protected from crossing it; a type already at or under
            # its guarantee is not what the quota change is about (YuniKorn sheds there freely)
            self.room[q] = {k: used.get(k, 0) - g for k, g in (qv.guaranteed or {}).items()
                            if used.get(k, 0) > g}

    def allows(self, v: Victim) -> bool:
        return all(v.resources.get(k, 0) <= r for room in self.room.values() for k, r in room.items())

    def take(self, v: Victim) -> None:
        for room in self.room.values():
            for k in room:
                room[k] -= v.resources.get(k, 0)


def select_victims(ordered: list[Victim], amount: Res,
                   floor: GuaranteeFloor | None = None) -> tuple[list[Victim], Res]:
    """Greedy without overshoot: keep a victim only if the running total still fits the amount."""
    chosen: list[Victim] = []
    total: Res = {}
    for v in ordered:
        if not fit_in_max_undef(amount, v.resources):
            continue
        if floor is not None and not floor.allows(v):
            continue
        add_into(total, v.resources)
        if strictly_greater_than_or_equals_only_existing(amount, total):
            chosen.append(v)
            if floor is not None:
                floor.take(v)
        else:
            add_into(total, v.resources, -1)
    return chosen, total


@dataclass(slots=True)
class LeafResult:
    queue: str
    amount: Res
    selected: list[Victim]
    preempted: list[Victim]
    claimed: Res | None


@dataclass(slots=True)
class QuotaRun:
    """The outcome of one run on the triggering queue."""

    queue: str
    amount: Res | None
    over: Res
    leaves: list[LeafResult]

    @property
    def selected(self) -> int:
        return sum(len(lr.selected) for lr in self.leaves)

    @property
    def preempted(self) -> list[Victim]:
        return [v for lr in self.leaves for v in lr.preempted]

    @property
    def claimed(self) -> Res | None:
        if not any(lr.claimed is not None for lr in self.leaves):
            return None
        out: Res = {}
        for lr in self.leaves:
            add_into(out, lr.claimed)
        return out

    @property
    def event(self) -> bool:
        """YuniKorn sends its queue summary event only when some candidate was selected."""
        return self.selected > 0

    @property
    def verdict(self) -> str:
        if not self.preempted:
            return UNSUCCESSFUL
        claimed = self.claimed or {}
        if all(claimed.get(k, 0) >= v for k, v in self.over.items()):
            return SUCCESSFUL
        return BEST_EFFORT

    def why(self) -> str:
        if self.amount is None:
            return "nothing to shed (within max, or at the guarantee floor)"
        if any(self.amount.get(k, 0) < v for k, v in self.over.items()):
            floor = "guarantee floor limits the amount; "
        else:
            floor = ""
        if not self.selected:
            return floor + "no candidate victims"
        if self.verdict == UNSUCCESSFUL:
            return floor + "no candidate fits the amount without overshooting or crossing a guarantee"
        if self.verdict == BEST_EFFORT:
            return floor + "no further victim fits without overshooting"
        return floor.rstrip("; ") or "all excess claimed"


def run_leaf(qv: QueueView, amount: Res, floor: GuaranteeFloor | None = None) -> LeafResult:
    selected = sort_victims(filter_victims(qv, amount), qv.max, amount) if not is_zero(amount) else []
    chosen, total = select_victims(selected, amount, floor) if selected else ([], {})
    return LeafResult(qv.name, amount, selected, chosen, total if chosen else None)


def plan(view: View, queue: str) -> QuotaRun:
    """What a run on ``queue`` preempts, computed on the view (pure)."""
    amount = amount_to_shed(view, queue)
    over = over_max(view, queue)
    if amount is None:
        return QuotaRun(queue, None, over, [])
    floor = GuaranteeFloor(view, queue)
    if view[queue].is_leaf:
        return QuotaRun(queue, amount, over, [run_leaf(view[queue], amount, floor)])
    targets = distribute(view, queue, amount)
    return QuotaRun(queue, amount, over, [run_leaf(view[leaf], a, floor) for leaf, a in targets.items()])


# ---------------------------------------------------------------------------------------------
# The enforcement component the YuniKorn model composes


def _flag(settings: Mapping[str, Any], *names: str, default: bool) -> bool:
    for n in names:
        if n in settings:
            v = settings[n]
            return v if isinstance(v, bool) else str(v).strip().lower() == "true"
    return default


class QuotaPreemption:
    """Quota-change preemption: timers per queue, one best-effort run per arming.

    ``settings`` are the model-wide ``preemption.settings``; the partition flag is
    ``quotaPreemptionEnabled`` (default false). Queue properties come from
    ``state.queues[q].settings["properties"]``.
    """

    def __init__(self, settings: Mapping[str, Any] | None = None):
        s = dict(settings or {})
        self.enabled = _flag(s, "quotaPreemptionEnabled", "quotapreemptionenabled", default=False)
        self.timers: dict[str, Timer] = {}
        self.runs: list[QuotaRun] = []

    def bind(self, state: ClusterState) -> None:
        self.timers = {q: Timer(delay=d) for q, d in effective_delays(state).items()}

    def build_view(self, state: ClusterState) -> View:
        return view_from_state(state)

    def _timer(self, q: str) -> Timer:
        return self.timers.setdefault(q, Timer())

    def on_config_change(self, state: ClusterState, queue: str, old_queue: Any, now: float) -> list[Decision]:
        """Re-evaluate the timer of the changed queue and of descendants whose inherited delay moved."""
        delays = effective_delays(state)
        for q in state.descendants(queue):
            t = self._timer(q)
            old_delay, new_max = t.delay, configured(state.queues[q].max)
            old_max = configured(old_queue.max) if q == queue else new_max
            if q != queue and old_delay == delays[q]:
                continue
            update_timer(t, old_max, new_max, state.queue_usage[q], old_delay, delays[q], now)
        return []

    def on_allocation_added(self, state: ClusterState, queue: str, now: float) -> None:
        """For allocations that bypass the scheduler (recovery, resize): may arm the leaf's timers."""
        for q in state.path_to_root(queue):
            arm_on_allocation(self._timer(q), configured(state.queues[q].max), state.queue_usage[q], now,
                              enabled=self.enabled)

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        if not self.enabled:
            return None
        due = [t.start for t in self.timers.values() if t.start is not None and not t.running]
        if not due:
            return None
        first = min(due)
        return first if first > now else now + TRIGGER_PERIOD

    def run_due(self, state: ClusterState, now: float) -> list[Decision]:
        """The trigger loop: walk from the roots; a queue that acquires runs and blocks its subtree."""
        if not self.enabled:
            return []
        out: list[Decision] = []
        view: View | None = None
        stack = list(reversed(state.roots))
        while stack:
            q = stack.pop()
            t = self._timer(q)
            if t.running:
                continue
            if try_acquire(t, configured(state.queues[q].max), state.queue_usage[q], now):
                if view is None:
                    view = self.build_view(state)
                out.extend(self.run_queue(state, q, now, view))
                release(t)
                continue
            stack.extend(reversed(state.queues[q].children))
        return out

    def run_queue(self, state: ClusterState, queue: str, now: float, view: View | None = None) -> list[Decision]:
        """One run on ``queue`` (no timer check): Preempt decisions, then the summary Note."""
        view = self.build_view(state) if view is None else view
        result = plan(view, queue)
        self.runs.append(result)
        u = view.unscale
        if result.amount is None:
            return [Note(kind="quota-preemption", subject=queue,
                         message=f"Quota preemption on {queue}: nothing preempted ({UNSUCCESSFUL}: {result.why()})",
                         values={"queue": queue, "preemptable": None, "over": u(result.over), "claimed": None,
                                 "selectedVictims": 0, "preemptedVictims": 0, "victims": [],
                                 "leafPreemptable": {}, "verdict": UNSUCCESSFUL, "event": False})]
        for v in result.preempted:
            v.preempted = True  # the view is reused by later runs of the same pass
            for q in _chain(view, v.queue):
                add_into(view[q].preempting, v.resources)
        trigger = f"quota-decrease:{queue}"
        out: list[Decision] = []
        for lr in result.leaves:
            for v in lr.preempted:
                out.append(Preempt(v.key, Reason(
                    model="yunikorn", rule=RULE, preemptor=trigger,
                    detail=f"quota change on {queue}: {lr.queue} sheds {lr.amount}",
                    values={"queue": queue, "leaf": lr.queue, "preemptable": u(result.amount),
                            "leafPreemptable": u(lr.amount), "victim": u(v.resources),
                            "max": u(view[queue].max or {}), "usage": u(view[queue].usage),
                            "event": preempted_by_quota_change_message(lr.queue)})))
        claimed = u(result.claimed)
        values = {"queue": queue, "preemptable": u(result.amount), "over": u(result.over),
                  "claimed": claimed, "selectedVictims": result.selected,
                  "preemptedVictims": len(result.preempted), "victims": [v.key for v in result.preempted],
                  "leafPreemptable": {lr.queue: u(lr.amount) for lr in result.leaves},
                  "verdict": result.verdict, "event": result.event}
        message = (f"Quota Preemption results summary: preemptable resources: {u(result.amount)}, claimed "
                   f"resources: {claimed}, selected victims: {result.selected}, preempted victims: "
                   f"{len(result.preempted)} ({result.verdict}: {result.why()})")
        out.append(Note(kind="quota-preemption", subject=queue, message=message, values=values))
        return out


class QuotaModel(PriorityFirstFit):
    """Priority/FIFO first-fit placement plus quota enforcement; a stand-in until the full YuniKorn model."""

    name = "yunikorn-quota"

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        self.quota = QuotaPreemption(self.settings)

    def bind(self, state: ClusterState) -> None:
        self.quota.bind(state)

    def on_config_change(self, state: ClusterState, queue: str, old: Any, now: float) -> list[Decision]:
        return self.quota.on_config_change(state, queue, old, now)

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        return self.quota.next_wakeup(state, now)

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        return self.quota.run_due(state, now) + super().schedule(state, now)
