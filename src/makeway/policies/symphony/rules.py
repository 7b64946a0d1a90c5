"""Symphony session preemption as pure rules over slot counts.

IBM Spectrum Symphony's session manager (SSM) divides the slots of one application's consumer among
its open sessions. Every rule is phrased against a session's *deserved* slot count, so this module
keeps the three questions apart, each a small function the simulator model and the conformance
loader both call:

* how many slots each session deserves (``proportional_deserved``),
* who may preempt (``preemptors``: preemptive, under-allocated, unmet demand),
* whom and which tasks (``select_victims``: over-allocated sessions only and only down to their
  deserved share, rank scope, lowest rank first, ``preemptionCriteria`` within a rank, youngest
  tasks first, shared slots judged by their highest rank and protected by an under-allocated
  co-tenant, falling through to the next rank when nothing can be taken).

Selection is *session-greedy*: a victim session is picked by rank and criterion and gives up to its
excess before the next one is considered (the reading the conformance cases name first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

LOWER_OR_EQUAL = "LowerOrEqualRankedSessions"
LOWER = "LowerRankedSessions"
MOST_OVER_ALLOCATED = "MostOverAllocatedSession"
MOST_RECENT_TASK = "MostRecentTask"

DEFAULT_RANK = 1
DEFAULT_PRIORITY = 1

_SCOPES = {s.lower(): s for s in (LOWER_OR_EQUAL, LOWER)}
# IBM documents the two behaviours but we found no literal XML token; accept the spellings a
# profile or a user is likely to write and map them onto our two names.
_CRITERIA = {
    "mostoverallocatedsession": MOST_OVER_ALLOCATED, "mostoverallocated": MOST_OVER_ALLOCATED,
    "overallocated": MOST_OVER_ALLOCATED, "mostoverallocatedsessions": MOST_OVER_ALLOCATED,
    "mostrecenttask": MOST_RECENT_TASK, "mostrecentlystartedtask": MOST_RECENT_TASK,
    "mostrecentstartedtask": MOST_RECENT_TASK, "recenttask": MOST_RECENT_TASK,
    "mostrecenttasks": MOST_RECENT_TASK,
}


def normalize_scope(value: object | None) -> str:
    """``preemptionScope`` as one of the two documented values; None means the default."""
    if value is None or value == "":
        return LOWER_OR_EQUAL
    found = _SCOPES.get(str(value).strip().lower())
    if found is None:
        raise ValueError(f"preemptionScope {value!r} is not one of {LOWER_OR_EQUAL}, {LOWER}")
    return found


def normalize_criteria(value: object | None) -> str:
    """``preemptionCriteria`` as one of our two names; None means the default."""
    if value is None or value == "":
        return MOST_OVER_ALLOCATED
    key = "".join(ch for ch in str(value).lower() if ch.isalnum())
    found = _CRITERIA.get(key)
    if found is None:
        raise ValueError(f"preemptionCriteria {value!r} is not one of {MOST_OVER_ALLOCATED}, {MOST_RECENT_TASK}")
    return found


@dataclass(slots=True, frozen=True)
class TaskView:
    """One running task as the SSM sees it. ``slot`` names a shared slot (None: not shared)."""

    id: str
    session: str
    start: float
    elapsed: float
    slots: int = 1
    slot: str | None = None
    movable: bool = True


@dataclass(slots=True)
class SessionView:
    name: str
    rank: int = DEFAULT_RANK
    preemptive: bool = False
    deserved: int = 0
    allocated: int = 0
    demand: int = 0
    priority: int = DEFAULT_PRIORITY
    order: tuple = ()
    tasks: list[TaskView] = field(default_factory=list)

    @property
    def under_allocated(self) -> bool:
        return self.allocated < self.deserved

    @property
    def over_allocated(self) -> bool:
        return self.allocated > self.deserved

    @property
    def excess(self) -> int:
        return max(0, self.allocated - self.deserved)


@dataclass(slots=True)
class Selection:
    """What one preemptor takes: victims in selection order, slots per victim, what is still missing."""

    preemptor: str
    need: int
    victims: list[TaskView] = field(default_factory=list)
    from_sessions: dict[str, int] = field(default_factory=dict)
    shortfall: int = 0
    slot_ranks: dict[str, int] = field(default_factory=dict)


def proportional_deserved(capacity: int, sessions: Iterable[tuple[str, int, int]]) -> dict[str, int]:
    """Deserved slots under ``R_Proportion``: shares by priority, capped by demand, surplus shared out.

    ``sessions`` are ``(name, priority, demand)``. Water-filling: sessions whose proportional share
    covers their demand get exactly their demand and leave the rest to the others; the last round is
    split in whole slots by largest remainder (ties: higher priority, then name), so the result sums
    to ``min(capacity, total demand)``.
    """
    items = sorted(((n, max(int(p), 1), max(int(d), 0)) for n, p, d in sessions), key=lambda s: s[0])
    deserved = {n: 0 for n, _, _ in items}
    active = [s for s in items if s[2] > 0]
    remaining = max(int(capacity), 0)
    while remaining > 0 and active:
        # shares are remaining * w / total_w: compared, floored and ranked in integers (exact)
        total_w = sum(w for _, w, _ in active)
        capped = [s for s in active if remaining * s[1] >= (s[2] - deserved[s[0]]) * total_w]
        if capped:
            for n, _, d in capped:
                remaining -= d - deserved[n]
                deserved[n] = d
            names = {s[0] for s in capped}
            active = [s for s in active if s[0] not in names]
            continue
        given = 0
        frac: dict[str, int] = {}
        for n, w, _ in active:
            whole, frac[n] = divmod(remaining * w, total_w)
            deserved[n] += whole
            given += whole
        left = remaining - given
        by_remainder = sorted(active, key=lambda s: (-frac[s[0]], -s[1], s[0]))
        for n, _, _ in by_remainder[:left]:
            deserved[n] += 1
        remaining = 0
    return deserved


@dataclass(slots=True)
class ClassShares:
    """``proportional_deserved`` over (priority, demand) classes: what each member of a class
    deserves before remainder slots, the classes in the final split, and the remainder slots as
    (priority, k): the first k sessions of that priority by name among those classes get one more."""

    per: dict[tuple[int, int], int]
    active: set[tuple[int, int]]
    extra: list[tuple[int, int]]


def class_deserved(capacity: int, classes: Mapping[tuple[int, int], int]) -> ClassShares:
    """``proportional_deserved`` for sessions given by class counts, ``{(priority, demand): n}``.

    Members of a class are alike to the water-filling but for the name order of remainder slots,
    and a remainder slot goes by (remainder, priority, name), the remainder being a function of
    the priority: so the rounds run per class and only the remainder slots are named (by the
    caller), at a cost in classes rather than sessions."""
    counts = {(max(int(w), 1), max(int(d), 0)): 0 for w, d in classes}
    for (w, d), n in classes.items():
        counts[(max(int(w), 1), max(int(d), 0))] += n
    per = dict.fromkeys(counts, 0)
    active = sorted(c for c, n in counts.items() if c[1] > 0 and n > 0)
    remaining = max(int(capacity), 0)
    final: set[tuple[int, int]] = set()
    extra: list[tuple[int, int]] = []
    while remaining > 0 and active:
        total_w = sum(w * counts[(w, d)] for w, d in active)
        capped = [c for c in active if remaining * c[0] >= c[1] * total_w]
        if capped:
            for c in capped:
                remaining -= c[1] * counts[c]
                per[c] = c[1]
            gone = set(capped)
            active = [c for c in active if c not in gone]
            continue
        given = 0
        frac: dict[int, int] = {}
        by_w: dict[int, int] = {}
        for w, d in active:
            whole, frac[w] = divmod(remaining * w, total_w)
            per[(w, d)] = whole
            given += whole * counts[(w, d)]
            by_w[w] = by_w.get(w, 0) + counts[(w, d)]
        left = remaining - given
        for w in sorted(by_w, key=lambda w: (-frac[w], -w)):
            if left <= 0:
                break
            k = min(left, by_w[w])
            extra.append((w, k))
            left -= k
        final = set(active)
        remaining = 0
    return ClassShares(per, final, extra)


def need_of(session: SessionView, free: int) -> int:
    """Slots to take by preemption: the deficit bounded by demand, after free slots are used."""
    want = min(session.deserved - session.allocated, session.demand - session.allocated)
    return max(0, want - max(free, 0))


def may_preempt(session: SessionView) -> bool:
    return session.preemptive and session.under_allocated and session.demand > session.allocated


def preemptors(sessions: Iterable[SessionView]) -> list[SessionView]:
    """Sessions allowed to preempt, most important first (rank, deficit, priority, then their order key)."""
    found = [s for s in sessions if may_preempt(s)]
    return sorted(found, key=lambda s: (-s.rank, -(s.deserved - s.allocated), -s.priority, s.order, s.name))


def in_scope(victim_rank: int, preemptor_rank: int, scope: str) -> bool:
    return victim_rank < preemptor_rank if scope == LOWER else victim_rank <= preemptor_rank


def slot_tenants(sessions: Iterable[SessionView]) -> dict[str, list[SessionView]]:
    """Sessions with a task on each labelled slot, for the shared-slot rule."""
    out: dict[str, dict[str, SessionView]] = {}
    for s in sessions:
        for t in s.tasks:
            if t.slot is not None:
                out.setdefault(t.slot, {})[s.name] = s
    return {slot: list(by_name.values()) for slot, by_name in out.items()}


def task_eligible(task: TaskView, victim: SessionView, preemptor: SessionView, scope: str,
                  tenants: Mapping[str, list[SessionView]]) -> tuple[bool, int]:
    """Whether ``task`` may be taken, and the rank its slot is judged by.

    A slot hosting tasks of several sessions counts at the highest rank among them, and an
    under-allocated co-tenant protects it: interrupting the slot would hurt that session too.
    """
    if not task.movable:
        return False, victim.rank
    rank = victim.rank
    others = tenants.get(task.slot, ()) if task.slot is not None else ()
    for co in others:
        if co.name == victim.name:
            continue
        if co.under_allocated:
            return False, max(rank, co.rank)
        rank = max(rank, co.rank)
    return in_scope(rank, preemptor.rank, scope), rank


def _task_order(t: TaskView) -> tuple:
    return (t.elapsed, -t.start, t.id)


def select_victims(preemptor: SessionView, sessions: Iterable[SessionView], free: int,
                   scope: str = LOWER_OR_EQUAL, criteria: str = MOST_OVER_ALLOCATED,
                   shared_slots: bool = True) -> Selection:
    """Tasks ``preemptor`` takes, in selection order (rules of SEMANTICS §2 / README rules 2-10).
    ``shared_slots``: False where no task has a shared slot (``slotSharing: none``), so that only
    the candidate victims' tasks are read."""
    sessions = list(sessions)
    need = need_of(preemptor, free)
    sel = Selection(preemptor.name, need, shortfall=need)
    if need <= 0 or not may_preempt(preemptor):
        return sel
    tenants = slot_tenants(sessions) if shared_slots else {}
    candidates: list[tuple[tuple, SessionView, list[TaskView]]] = []
    for s in sessions:
        if s.name == preemptor.name or not s.over_allocated:
            continue
        if not in_scope(s.rank, preemptor.rank, scope):
            continue
        eligible = []
        for t in s.tasks:
            ok, rank = task_eligible(t, s, preemptor, scope, tenants)
            if ok:
                eligible.append(t)
                sel.slot_ranks[t.id] = rank
        if not eligible:
            continue
        eligible.sort(key=_task_order)
        if criteria == MOST_RECENT_TASK:
            newest = max(eligible, key=lambda t: (t.start, t.id))
            crit: tuple = (-newest.start,)
        else:
            crit = (-s.excess,)
        candidates.append(((s.rank, *crit, s.order, s.name), s, eligible))
    candidates.sort(key=lambda c: c[0])
    remaining = need
    for _, victim, eligible in candidates:
        if remaining <= 0:
            break
        room = victim.excess
        taken = 0
        for t in eligible:
            if remaining <= 0:
                break
            if t.slots > room - taken:
                continue
            sel.victims.append(t)
            taken += t.slots
            remaining -= t.slots
        if taken:
            sel.from_sessions[victim.name] = taken
    sel.shortfall = max(0, remaining)
    sel.slot_ranks = {t.id: sel.slot_ranks[t.id] for t in sel.victims}
    return sel


__all__ = [
    "LOWER", "LOWER_OR_EQUAL", "MOST_OVER_ALLOCATED", "MOST_RECENT_TASK", "DEFAULT_RANK",
    "DEFAULT_PRIORITY", "ClassShares", "Selection", "SessionView", "TaskView", "class_deserved", "in_scope",
    "may_preempt", "need_of",
    "normalize_criteria", "normalize_scope", "preemptors", "proportional_deserved", "select_victims",
    "slot_tenants", "task_eligible",
]
