"""YuniKorn's ask-triggered (inter-queue) and required-node (DaemonSet) preemption, SEMANTICS §2-§3.

One ``Preemptor`` serves one ask. It snapshots the queues in scope, walks nodes for victim lists,
asks a predicate oracle which node works, tops the ask queue up to its guarantee with queue-level
victims, then trims the list to the ask and commits (marks victims, bumps ``preempting``). All
arithmetic uses the YuniKorn helpers of ``core.resources`` because their nil/empty and
missing-type rules decide the outcomes.

With ``Partition.shortcuts`` off (the model's ``caches: false``), every shortcut here takes its
general path (the guarantee check loops over victims, every usable node is tried and
``choose_node`` picks, sorts use Go's comparators, the per-leaf candidate memo is neither read nor
written). Decisions must be the same either way (tests/yunikorn_queue/test_cache_equivalence.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from makeway.core.resources import Res, add
from makeway.policies.yunikorn.resources import (ask_queue_under, equals_or_empty, fit_in, fit_in_actual,
                                                 fit_in_max_undef, is_empty, strictly_greater_than_only_existing,
                                                 sub_eliminate_negative, victim_queue_over)
from makeway.policies.yunikorn.common import (MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US, Partition, YAlloc,
                                              YAsk, go_slice_stable, log_failure)
from makeway.policies.yunikorn.search import Snap, VictimSearch, find_fence_root, find_victims
from makeway.policies.yunikorn.node_candidates import NodeCandidates, NodeRejects
from makeway.policies.yunikorn.required_node import required_node_preemption
from makeway.policies.yunikorn import events
from makeway.policies.yunikorn.shortcuts import extras_irrelevant, one_may_do, reversible
from makeway.policies.yunikorn.victim_index import first_index0

# ask log reasons (symbolic names of YuniKorn's log texts)
PRECONDITIONS_FAILED = "PreemptionPreconditionsFailed"
DOES_NOT_GUARANTEE = "PreemptionDoesNotGuarantee"
SHORTFALL = "PreemptionShortfall"
DOES_NOT_HELP = "PreemptionDoesNotHelp"
MAX_ATTEMPTS = "PreemptionMaxAttemptsExhausted"
VICTIMS_RELEASED = "PreemptionVictimsReleased"

SCORE_ORIGINATOR = 1 << 33
SCORE_NO_PREEMPT = 1 << 34
SCORE_UNFIT = 1 << 35


# ---------------------------------------------------------------------------------------------
# Predicate oracle (§2.9)


class PredicateOracle(Protocol):
    def allocate(self, ask: str, node: str) -> bool: ...

    def preemption(self, ask: str, node: str, victims: list[str], start_index: int) -> tuple[bool, int]: ...


@dataclass(slots=True)
class PreemptionResult:
    ok: bool
    node: str | None = None
    victims: list[YAlloc] = field(default_factory=list)
    start_index: int = -1


@dataclass(slots=True)
class _Check:
    node: str
    start_index: int
    victims: list[YAlloc]


def _sort_node_candidates(allocs: list[YAlloc], shortcuts: bool) -> list[YAlloc]:
    """Preemptible first, then non-originators, then newest first. The comparator answers "not
    less" on full ties, so it is a strict weak order and a keyed stable sort gives what Go's
    ``sort.SliceStable`` gives."""
    if not shortcuts:
        def less(l: YAlloc, r: YAlloc) -> bool:
            if l.allow_preemption != r.allow_preemption:
                return l.allow_preemption
            if l.originator != r.originator:
                return not l.originator
            return l.create_us > r.create_us
        return go_slice_stable(allocs, less)
    return sorted(allocs, key=lambda a: (not a.allow_preemption, a.originator, -a.create_us))


class _SortedOnUse:
    """Candidates per node, each node's list sorted the first time it is asked for: the node
    search usually stops long before it has looked at every node."""

    __slots__ = ("raw", "done", "shortcuts")

    def __init__(self, raw: "dict[str, list[YAlloc]] | NodeCandidates", shortcuts: bool):
        self.raw, self.shortcuts = raw, shortcuts
        self.done: dict[str, list[YAlloc]] = {}

    def get(self, node: str, default: list[YAlloc] | None = None) -> list[YAlloc] | None:
        out = self.done.get(node)
        if out is None:
            raw = self.raw.get(node)
            if raw is None:
                return default
            out = self.done[node] = _sort_node_candidates(raw, self.shortcuts)
        return out


def _additional_score(a: YAlloc) -> int:
    return (1 if a.originator else 0) + (2 if not a.allow_preemption else 0)


class Preemptor:
    """Ask-triggered preemption for one ask (``Preemptor.TryPreemption`` and its stages)."""

    def __init__(self, part: Partition, ask: YAsk, headroom: Res | None = None, nodes_tried: bool = False,
                 oracle: PredicateOracle | None = None, link_root: bool = True):
        self.part = part
        self.ask = ask
        self.headroom = headroom
        self.nodes_tried = nodes_tried
        self.no_node_fits = False  # known: the ask fits no usable node as it is
        self.remaining_memo: dict[str, Res | None] = {}  # see ``shortcuts._remaining``
        self.oracle = oracle
        self.link_root = link_root
        self._search: VictimSearch | None = None
        self.by_node: _SortedOnUse | None = None
        self.node_free: dict[str, Res] = {}
        self._usable: list[str] | None = None
        self.flat: bool | None = None  # whether no queue above the ask queue has a guarantee

    # -- preconditions (§2.2) ---------------------------------------------------------------

    def check_preconditions(self, now_us: int, delay_us: int | None = None) -> bool:
        return preconditions_hold(self.part, self.ask, now_us, delay_us)

    # -- snapshots ----------------------------------------------------------------------------

    @property
    def search(self) -> VictimSearch:
        if self._search is None:
            self._search = find_victims(self.part, self.ask, self.link_root)
        return self._search

    def _dup(self) -> dict[str, Snap]:
        cache: dict[str, Snap] = {}
        for s in self.search.snapshots.values():
            s.duplicate(cache)
        return cache

    def all_candidates(self) -> list[YAlloc]:
        return [a for s in self.search.snapshots.values() for a in s.victims]

    def check_queue_guarantees(self) -> bool:
        snaps = self.search.snapshots
        ask_snap = snaps[self.ask.queue]
        r = ask_snap.remaining_guaranteed()
        if r is not None and fit_in_actual(r, self.ask.resources):
            return True
        work = self._dup()
        aq = work[self.ask.queue]
        aq.add_allocation(self.ask.resources)
        fixed = self._ask_remaining_fixed(work, aq) if self.part.shortcuts else None
        if fixed is not None:
            return fixed
        for path in list(work):
            s = work[path]
            for a in s.victims:
                s.remove_allocation(a.resources)
                r = aq.remaining_guaranteed()
                if r is not None and ask_queue_under(self.ask.resources, r):
                    return True
        return False

    def _ask_remaining_fixed(self, work: dict[str, Snap], aq: Snap) -> bool | None:
        """The loop of ``check_queue_guarantees`` in closed form, when removing victims cannot move
        the ask queue's remaining guarantee: no ancestor of the ask queue has a guarantee (so each
        of them answers None whatever its usage) and no victim sits in the ask queue's subtree.
        Then every step of the loop sees the same value, and the answer is whether there is a step
        at all and that value passes. None when the shortcut does not apply."""
        p = aq.parent
        while p is not None:
            if not is_empty(p.guaranteed):
                return None
            p = p.parent
        any_victim = False
        for s in work.values():
            if s.victims:
                any_victim = True
                q: Snap | None = s
                while q is not None:
                    if q is aq:
                        return None
                    q = q.parent
        if not any_victim:
            return False
        r = aq.remaining_guaranteed()
        return r is not None and ask_queue_under(self.ask.resources, r)

    # -- node working state (§2.7) ------------------------------------------------------------

    def init_working_state(self) -> None:
        """Candidates by node (only usable nodes are ever asked for theirs); usable nodes are
        listed on first use: the shortcut node search checks them one by one as it goes. When
        every leaf's candidates are a filter (``LeafScope``), a node's list is read from the node
        when asked for (``NodeCandidates``) instead of grouping every candidate here."""
        if self.by_node is not None:
            return
        snaps = [s for s in self.search.snapshots.values() if s.memo is not None or s.victims]
        if self.part.shortcuts and getattr(self.part, "state", None) is not None \
                and all(s.memo is not None for s in snaps):
            self.by_node = _SortedOnUse(NodeCandidates(self.part, [s.memo for s in snaps]), True)  # type: ignore[misc]
            return
        by_node: dict[str, list[YAlloc]] = {}
        for a in self.all_candidates():
            by_node.setdefault(a.node, []).append(a)
        self.by_node = _SortedOnUse(by_node, self.part.shortcuts)

    def node_usable(self, node_id: str) -> bool:
        node = self.part.nodes[node_id]
        return node.schedulable and (node.reserved_for is None or node.reserved_for == self.ask.key) \
            and fit_in(node.capacity, self.ask.resources)

    @property
    def usable(self) -> list[str]:
        """The nodes the ask may preempt on, in node order."""
        if self._usable is None:
            self._usable = [n for n in self.part.nodes if self.node_usable(n)]
        return self._usable

    def free_of_node(self, node_id: str) -> Res:
        """A usable node's free resources, computed on first use (most nodes are never looked at)."""
        free = self.node_free.get(node_id)
        if free is None:
            free = self.node_free[node_id] = self.part.nodes[node_id].free
        return free

    def all_free(self) -> dict[str, Res]:
        """Free resources of every usable node, in node order."""
        return {n: self.free_of_node(n) for n in self.usable}

    # -- victims per node (§2.8) --------------------------------------------------------------

    def victims_by_node(self, free: Res, candidates: list[YAlloc]) -> tuple[int, list[YAlloc] | None]:
        ask = self.ask.resources
        if fit_in(free, ask):
            return -1, []
        if not candidates and self.part.shortcuts:
            return -1, None  # what the two passes below come to with nothing to try
        work = self._dup()
        aq = work[self.ask.queue]
        avail = dict(free)
        head: list[YAlloc] = []
        tail: list[YAlloc] = []
        for v in candidates:
            qs = work.get(v.queue)
            if qs is None:
                continue
            r = qs.remaining_guaranteed()
            qs.remove_allocation(v.resources)
            if r is None or victim_queue_over(ask, r):
                ar = aq.remaining_guaranteed()
                if ar is not None and fit_in_actual(ar, v.resources):
                    aq.add_allocation(v.resources)
                else:
                    qs.add_allocation(v.resources)
                    break
                shortfall = sub_eliminate_negative(ask, avail)
                new_short = sub_eliminate_negative(ask, add(avail, v.resources))
                if equals_or_empty(shortfall, new_short):
                    qs.add_allocation(v.resources)
                    aq.remove_allocation(v.resources)
                    tail.append(v)
                else:
                    avail = add(avail, v.resources)
                    head.append(v)
            else:
                qs.add_allocation(v.resources)
        order = head + tail
        if not order:
            return -1, None
        work = self._dup()
        avail = dict(free)
        results: list[YAlloc] = []
        index = -1
        for v in order:
            qs = work.get(v.queue)
            if qs is None:
                continue
            r = qs.remaining_guaranteed()
            qs.remove_allocation(v.resources)
            if r is None or victim_queue_over(ask, r):
                avail = add(avail, v.resources)
                if index < 0 and fit_in_max_undef(avail, ask):
                    index = len(results)
                results.append(v)
            else:
                qs.add_allocation(v.resources)
        if index < 0:
            return -1, None
        return index, results

    # -- node choice (§2.9) -------------------------------------------------------------------

    def _score(self, node: str, index: int) -> int:
        cands = (self.by_node or {}).get(node)
        if cands is None:
            return SCORE_UNFIT
        score = 0
        for a in cands[: index + 1] if index >= 0 else []:
            if a.originator:
                score |= SCORE_ORIGINATOR
            if not a.allow_preemption:
                score |= SCORE_NO_PREEMPT
        return score + (index + 1 if index >= 0 else 0)

    def choose_node(self, checks: list[_Check]) -> tuple[str, int] | None:
        if not checks:
            return None
        checks = go_slice_stable(checks, lambda l, r: (l.node < r.node) if l.start_index == r.start_index
                                 else l.start_index < r.start_index)
        if self.oracle is None:
            return checks[0].node, checks[0].start_index
        best: tuple[int, str, int] | None = None
        for b in range(0, len(checks), 10):
            for c in checks[b:b + 10]:
                if not c.victims:
                    ok, idx = self.oracle.allocate(self.ask.key, c.node), -1
                else:
                    ok, idx = self.oracle.preemption(self.ask.key, c.node, [v.key for v in c.victims],
                                                     c.start_index)
                if not ok:
                    continue
                score = self._score(c.node, idx)
                if best is None or score < best[0]:
                    best = (score, c.node, idx)
            if best is not None and best[0] < SCORE_ORIGINATOR:
                break
        if best is None:
            return None
        return best[1], best[2]

    def _least_check(self, victims_for: dict[str, list[YAlloc]]) -> tuple[str, int] | None:
        """What ``choose_node`` picks without an oracle, the least (start index, node name), found
        without trying every node: an index of -1 comes only with an empty victim list (the node
        fits as it is), any other index is at least 0, so once nodes are tried in name order the
        first one with index 0 is the answer. Trying a node has no side effects, so skipping the
        rest changes nothing but the time taken."""
        assert self.by_node is not None
        ask = self.ask.resources
        if not self.nodes_tried and not self.no_node_fits:
            fitting = [n for n, free in self.all_free().items() if fit_in(free, ask)]
            if fitting:
                best = min(fitting)
                victims_for[best] = []
                return best, -1
        found = first_index0(self)
        if found is not None:
            victims_for[found[0]] = found[1]
            return found[0], 0
        chosen: tuple[int, str] | None = None
        raw = self.by_node.raw
        rejects = self._rejects()
        for node_id in self.part.names_in_order():
            if chosen is not None and chosen[0] <= 1:
                if rejects is not None and rejects.known(node_id, ask):
                    continue  # no single candidate made the ask fit when last tried, nor can now
                if not self.node_usable(node_id):
                    continue
                if not one_may_do(self, node_id, raw.get(node_id)):
                    if rejects is not None:
                        rejects.note(node_id, raw, self.free_of_node(node_id), ask)
                    continue  # this node's index is at least 1: it cannot beat the one chosen
            elif not self.node_usable(node_id):
                continue
            idx, lst = self.victims_by_node(self.free_of_node(node_id), self.by_node.get(node_id, []))
            if not lst:
                continue
            if chosen is None or idx < chosen[0]:
                chosen = (idx, node_id)
                victims_for[node_id] = lst
                if idx <= 0:
                    break
        return None if chosen is None else (chosen[1], chosen[0])

    def _rejects(self) -> "NodeRejects | None":
        """The kept node verdicts for this attempt's candidate filter, when the partition keeps them
        and every leaf's candidates are a filter (``LeafScope``)."""
        memo = getattr(self.part, "node_rejects", None)
        raw = self.by_node.raw if self.by_node is not None else None
        if memo is None or not isinstance(raw, NodeCandidates):
            return None
        scope = tuple((s.path, s.memo.key) for s in self.search.snapshots.values() if s.memo is not None)
        return NodeRejects(memo, self.part.state, scope)  # type: ignore[attr-defined]

    # -- queue-level victims (§2.10) ----------------------------------------------------------

    def additional_victims(self, node_victims: list[YAlloc]) -> tuple[list[YAlloc], bool]:
        ask = self.ask.resources
        work = self._dup()
        aq = work[self.ask.queue]
        seen = set()
        for v in node_victims:
            qs = work.get(v.queue)
            if qs is not None:
                qs.remove_allocation(v.resources)
                seen.add(v.key)
        rest = [a for a in self.all_candidates() if a.key not in seen]
        # a strict weak order (full ties answer "not less"): a keyed stable sort is Go's result
        if self.part.shortcuts:
            rest.sort(key=lambda a: (_additional_score(a), -a.create_us))
        else:
            rest = go_slice_stable(rest, lambda l, r: (l.create_us > r.create_us)
                                   if _additional_score(l) == _additional_score(r)
                                   else _additional_score(l) < _additional_score(r))
        out: list[YAlloc] = []
        # Queues that refused a victim since the last one kept: with nothing moved since, they
        # refuse again (``reversible``: the refusal's remove and add gave the same numbers back).
        memo = self.part.shortcuts
        refused: set[str] = set()
        for v in rest:
            qs = work.get(v.queue)
            if qs is None:
                continue
            same = memo and reversible(qs, v.resources)
            if same and v.queue in refused:
                continue
            r = qs.remaining_guaranteed()
            qs.remove_allocation(v.resources)
            if not (r is None or victim_queue_over(ask, r)):
                qs.add_allocation(v.resources)
                if same:
                    refused.add(v.queue)
                elif refused:
                    refused.clear()
                continue
            before = aq.remaining_guaranteed()
            if before is None or not fit_in_actual(before, v.resources):
                qs.add_allocation(v.resources)
                break
            aq.add_allocation(v.resources)
            after = aq.remaining_guaranteed()
            if refused:
                refused.clear()
            if after == before:
                aq.remove_allocation(v.resources)
                qs.add_allocation(v.resources)
                continue
            out.append(v)
        if out:
            final = aq.remaining_guaranteed()
            if final is None or not ask_queue_under(ask, final):
                return [], False
        return out, True

    # -- the whole attempt (§2.8-§2.11) -------------------------------------------------------

    def try_preemption(self) -> PreemptionResult:
        if not self.check_queue_guarantees():
            log_failure(self.ask, DOES_NOT_GUARANTEE)
            return PreemptionResult(False)
        self.init_working_state()
        assert self.by_node is not None
        victims_for: dict[str, list[YAlloc]] = {}
        if self.oracle is None and self.part.shortcuts:
            chosen = self._least_check(victims_for)
        else:
            checks: list[_Check] = []
            for node_id, free in self.all_free().items():
                idx, lst = self.victims_by_node(free, self.by_node.get(node_id, []))
                if lst is None:
                    continue
                if self.nodes_tried and not lst:
                    continue
                checks.append(_Check(node_id, idx, lst))
                victims_for[node_id] = lst
            chosen = self.choose_node(checks)
        if chosen is None:
            return PreemptionResult(False)
        node_id, index = chosen
        node_victims = victims_for[node_id][: index + 1] if index >= 0 else []
        if extras_irrelevant(self, node_id, node_victims):
            extra, ok = [], True
        else:
            extra, ok = self.additional_victims(node_victims)
        if not ok:
            return PreemptionResult(False)
        victims = node_victims + extra
        if not victims:
            return PreemptionResult(False)
        ask = self.ask.resources
        fits = fit_in(self.free_of_node(node_id), ask)
        total: Res = {}
        final: list[YAlloc] = []
        for v in victims:
            if not fits and v.node != node_id:
                continue
            if strictly_greater_than_only_existing(ask, total):
                final.append(v)
            total = add(total, v.resources)
        if strictly_greater_than_only_existing(ask, total):
            log_failure(self.ask, SHORTFALL)
            return PreemptionResult(False)
        marked: list[YAlloc] = []
        for v in final:
            if v.released or v.released_during_preemption:
                for m in marked:
                    m.preempted = False
                log_failure(self.ask, VICTIMS_RELEASED)
                return PreemptionResult(False)
            v.preempted = True
            marked.append(v)
        for v in final:
            self.part.add_preempting(v.queue, v.resources)
            self.part.events.append(events.preempted_by_scheduler(v.key, v.app, self.ask.key, self.ask.app,
                                                                  self.ask.queue, v.resources))
        self.ask.triggered_preemption = True
        return PreemptionResult(True, node_id, final, index)


def preconditions_hold(part: Partition, ask: YAsk, now_us: int, delay_us: int | None = None) -> bool:
    """§2.2: whether the ask may try preemption now; a yes sets its check clock."""
    if not ask.allow_preempt_other or ask.triggered_preemption or ask.required_node:
        return False
    delay = part.queues[ask.queue].props.preemption_delay_us if delay_us is None else delay_us
    if now_us < ask.create_us + delay:
        return False
    if ask.last_check_us is not None and now_us < ask.last_check_us + PREEMPT_ATTEMPT_FREQUENCY_US:
        return False
    ask.last_check_us = now_us
    return True


def attempt_preemption(part: Partition, ask: YAsk, now_us: int, budget: list[int], headroom: Res | None,
                       nodes_tried: bool, oracle: PredicateOracle | None = None,
                       delay_us: int | None = None, no_node_fits: bool = False) -> PreemptionResult:
    """The scheduler side of §2.1/2.2: attempt budget, preconditions, then ``try_preemption``.

    ``budget`` is the leaf's remaining attempts for this pass, a one-element list updated in place.
    ``no_node_fits``: the caller knows the ask fits no usable node as it is (the shortcut node
    search then does not look for one).
    """
    if budget[0] <= 0:
        log_failure(ask, MAX_ATTEMPTS, DOES_NOT_HELP)
        return PreemptionResult(False)
    if not preconditions_hold(part, ask, now_us, delay_us):
        log_failure(ask, PRECONDITIONS_FAILED, DOES_NOT_HELP)
        return PreemptionResult(False)
    p = Preemptor(part, ask, headroom, nodes_tried, oracle)
    p.no_node_fits = no_node_fits
    budget[0] -= 1
    result = p.try_preemption()
    if not result.ok:
        log_failure(ask, DOES_NOT_HELP)
    return result


__all__ = ["Preemptor", "PreemptionResult", "Snap", "find_victims", "find_fence_root", "attempt_preemption",
           "ask_queue_under", "victim_queue_over", "MAX_PREEMPTION_ATTEMPTS"]


# ---------------------------------------------------------------------------------------------
# The allocation path around preemption (§2.1, §2.11 reserved allocation)


@dataclass(slots=True)
class AllocateResult:
    kind: str | None  # "Allocated", "AllocatedReserved", "Reserved" or None
    node: str | None = None
    victims: list[YAlloc] = field(default_factory=list)
    rule: str = ""


def _first_fit_node(part: Partition, res: Res, order: list[str]) -> str | None:
    for n in order:
        node = part.nodes[n]
        if node.schedulable and fit_in(node.free, res):
            return n
    return None


def try_allocate(part: Partition, ask: YAsk, now_us: int, budget: list[int], reservations: dict[str, str],
                 oracle: PredicateOracle | None = None, preemption_enabled: bool = True,
                 node_order: list[str] | None = None, headroom: Res | None = None,
                 known_no_fit: bool = False) -> AllocateResult:
    """One scheduling attempt for one ask: reserved node first, headroom, placement, preemption.

    ``reservations`` maps ask key -> reserved node and is updated in place (a successful
    preemption reserves the node; an allocation consumes the reservation). Placing the ask itself
    is left to the caller (it returns the node). ``headroom`` overrides the queue headroom the
    partition would compute (the caller may also count user/group limits or promised placements).
    ``known_no_fit`` says the caller already knows no node it may use fits the ask (the simulator's
    first-fit index said so), which skips the node scans before and during preemption.
    """
    order = list(part.nodes) if node_order is None else node_order
    res = ask.resources
    if headroom is None:
        headroom = part.headroom(ask.queue)
    reserved = reservations.get(ask.key)
    if reserved is not None:
        if not fit_in_max_undef(headroom, res):
            return AllocateResult(None)
        others = [n for n in order if n != reserved]
        node = _first_fit_node(part, res, [reserved] + others)
        if node is not None:
            del reservations[ask.key]
            part.nodes[reserved].reserved_for = None
            return AllocateResult("AllocatedReserved", node)
        if ask.required_node:
            victims = required_node_preemption(part, ask)
            if victims:
                return AllocateResult(None, ask.required_node, victims, "required-node-preemption")
        return AllocateResult(None)
    if not fit_in_max_undef(headroom, res):
        if preemption_enabled:
            r = attempt_preemption(part, ask, now_us, budget, headroom, False, oracle, no_node_fits=known_no_fit)
            if r.ok:
                return _reserve(part, ask, r, reservations)
        return AllocateResult(None)
    if ask.required_node:
        node_id = ask.required_node
        if node_id in part.nodes and part.nodes[node_id].schedulable and fit_in(part.nodes[node_id].free, res):
            return AllocateResult("Allocated", node_id)
        if node_id in part.nodes and part.nodes[node_id].reserved_for is None:
            reservations[ask.key] = node_id
            part.nodes[node_id].reserved_for = ask.key
            victims = required_node_preemption(part, ask)
            if victims:
                return AllocateResult("Reserved", node_id, victims, "required-node-preemption")
        return AllocateResult(None)
    if not known_no_fit:
        free_order = [n for n in order if part.nodes[n].reserved_for in (None, ask.key)]
        node = _first_fit_node(part, res, free_order)
        if node is not None:
            return AllocateResult("Allocated", node)
    if preemption_enabled:
        r = attempt_preemption(part, ask, now_us, budget, headroom, True, oracle)
        if r.ok:
            return _reserve(part, ask, r, reservations)
    return AllocateResult(None)


def _reserve(part: Partition, ask: YAsk, r: PreemptionResult, reservations: dict[str, str]) -> AllocateResult:
    assert r.node is not None
    node = part.nodes[r.node]
    if node.reserved_for is None:
        node.reserved_for = ask.key
        reservations[ask.key] = r.node
    return AllocateResult("Reserved", r.node, r.victims, "inter-queue-preemption")
