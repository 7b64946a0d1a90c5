"""The Kueue simulator model: quota-based admission with flavor assignment, then classic or
fair-sharing preemption of whole workloads, on makeway's cluster state.

Each ``schedule`` call rebuilds Kueue's snapshot (the quota tree with every admitted workload's
usage, keyed by the flavor of the nodes its pods run on) and runs admission cycles: one head per
ClusterQueue (BestEffortFIFO: priority, then creation time), heads ordered as Kueue orders them
(classic: lower borrowing level first, priority, time; fair sharing: the DRS tournament), each
head either admitted (gang: all pods placed first-fit on nodes of its flavors, or none), or, in Preempt mode,
its targets evicted (every allocation of each victim). The preemptor is admitted in a later call,
once its victims have released their quota, as in Kueue.
"""

from __future__ import annotations

from typing import Any, Mapping

from makeway.core.decisions import Decision, Start
from makeway.core.policy import PreemptionModel
from makeway.core.resources import Res
from makeway.core.state import ClusterState
from makeway.policies.kueue.assign import Assignment
from makeway.policies.kueue.cycle import STRICT_FIFO, tournament_winner
from makeway.policies.kueue.explain import Explain
from makeway.policies.kueue.heads import HeadAdmission, _Head
from makeway.policies.kueue.parked import Parked
from makeway.policies.kueue.pending import PendingIndex
from makeway.policies.kueue.preemption import DEFAULT_STRATEGIES, Target
from makeway.policies.kueue.quota import Admitted, CohortSpec, CQSpec, QNode, QuotaTree
from makeway.policies.kueue.setup import specs_from_queues
from makeway.policies.kueue.snapshot import Snapshot
from makeway.policies.kueue.twins import TwinSkipping


def fair_sharing_config(settings: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """``fairSharing`` present (and not ``enable: false``) turns fair sharing on."""
    fs = settings.get("fairSharing")
    if fs is None or fs is False:
        return False, DEFAULT_STRATEGIES
    if fs is True:
        return True, DEFAULT_STRATEGIES
    if isinstance(fs, Mapping) and fs.get("enable") is False:
        return False, DEFAULT_STRATEGIES
    strategies = tuple((fs or {}).get("preemptionStrategies") or DEFAULT_STRATEGIES) if isinstance(fs, Mapping) \
        else DEFAULT_STRATEGIES
    return True, strategies


class KueueModel(Explain, TwinSkipping, HeadAdmission, Snapshot, PreemptionModel):
    name = "kueue"
    all_or_nothing = True  # a workload is admitted with all its pods or not at all

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        self.fair, self.strategies = fair_sharing_config(self.settings)
        self.flavor_label = str(self.settings.get("flavorLabel", "flavor"))
        self.default_flavor = str(self.settings.get("defaultFlavor", "default"))
        self._specs: tuple[list[CohortSpec], list[CQSpec]] | None = None
        self._covered: set[str] = set()
        self._admitted_at: dict[str, float] = {}
        # GetTargets results that found nothing, valid while the admitted set (signature) and the
        # in-call snapshot (version) are unchanged: a deep queue of identical heads costs one search.
        self._no_targets: dict[tuple, tuple[int, int]] = {}
        self._sig: dict[str, int] = {}  # per root of the cohort forest: a hash of its admitted set
        self._tree: QuotaTree | None = None
        self._bound: ClusterState | None = None
        self._roots: dict[str, str] = {}
        self._entries: dict[str, dict[str, tuple[Admitted, int]]] = {}
        self._counts: dict[str, int] = {}
        self._touched: set[str] = set()  # queues this model started workloads in
        # per queue: workloads this model started or marked since the last snapshot
        self._moved: dict[str, set[str]] = {}
        self._stale: set[str] = set()  # running workloads whose priority changed
        self._topo: dict[str, int] = {}  # per queue: the topology epoch its entries were read at
        self._watch: list[tuple[str, str]] = []  # (queue, allocation) preempted in the last call
        self._seq_expect: int | None = None
        self._incall: list[tuple[QNode, dict]] = []
        self._idle: tuple | None = None
        self._prio: dict[str, int] = {}  # workloads are immutable: their priority is read once
        self._hkeys: dict[str, tuple] = {}
        self._adm_cache: dict[str, tuple[tuple, Admitted]] = {}  # Snapshot._admitted, per workload
        self._version: dict[str, int] = {}  # per root, never reset: bumped at every tree change
        # Non-empty GetTargets results under the same validity stamp, and per-call flavor
        # assignments: identical heads deep in a queue cost a dictionary look-up.
        self._targets_memo: dict[tuple, tuple[tuple[int, int], list[Target]]] = {}
        self._shapes: dict[str, tuple] = {}
        self._assign_memo: dict[tuple, dict[tuple, Assignment]] = {}
        self._reads: dict[str, tuple[QNode, list]] = {}  # per queue: the usage a flavor assignment reads
        self._akeys: dict[str, tuple] = {}
        self._assign_last: dict[int, tuple[QNode, int, Assignment]] = {}  # per key id: (queue, root version, result)
        self._akey_ids: dict[tuple, int] = {}
        self._gversion = 0  # bumped with every per-root version: node promises and victims changed
        self._nversion = 0  # bumped when the nodes changed between calls (``TwinSkipping._carry_outcomes``)
        # Per call: classic target searches found doomed (``preemption.classic_search``), valid
        # while the root's flip count (``_add_in_call``) is unchanged.
        self._doomed: dict[tuple, int] = {}
        # Per call: (queue, fr, priority, age) -> (flip count, smallest request) of a doomed
        # one-fr search; a request at least that large is doomed too while the count holds.
        self._doomed_from: dict[tuple, tuple[int, int]] = {}
        self._flips: dict[str, int] = {}
        # Across calls: per (root, fr), the usage that has left the tree (ends, evictions, in-call
        # usage taken back); per (queue, fr, priority, age), the headroom of the last one-fr search
        # doomed by its first test, with the root's flip count and that release count then
        # (``HeadAdmission._short_of``); per head key id, the (key, request, root) of a kind asking
        # for one flavor-resource of a one-flavor queue with reclaim Any, whose heads are settled
        # while a headroom or a smaller doomed request holds (``_doomed_kind``).
        self._released: dict[tuple[str, tuple[str, str]], int] = {}
        self._headroom: dict[tuple, tuple] = {}
        # per (root, fr) and per (root, fr, queue): usage added to a ClusterQueue that stayed
        # within its nominal quota (``HeadAdmission._count_added``)
        self._within: dict[tuple, int] = {}
        self._kind_one: dict[int, tuple[tuple, int, str]] = {}
        # ``HeadAdmission._held_over_nominal``'s answers: (key, request) -> (tree, root version, answer)
        self._over: dict[tuple, tuple] = {}
        # Per call: head key id -> (flip count, or -1 for NoFit; ``Parked.kind``) of a head that
        # decided nothing in a way more usage cannot undo (``TwinSkipping._settled_kind``).
        self._settles: dict[int, tuple[int, int]] = {}
        self._settled: int | None = None  # what the head just processed left for ``_settles``
        # per head key id, kept across calls (``TwinSkipping._carry_outcomes``)
        self._outcomes: dict[int, tuple[int, int | None, int | None, int]] = {}
        self._nodes_seen: tuple | None = None
        self._probed_nodes = False
        # BestEffortFIFO: a workload found inadmissible is parked until quota is released in its
        # cohort tree (a workload there ends or is evicted) or the configuration changes, as Kueue
        # requeues them; one that found no room on the nodes, until any allocation ends (``Parked``).
        self._freed_seen: tuple[int, int] | None = None  # (id(state), freed_epoch) at the last snapshot
        self._root_freed: dict[str, int | None] = {}  # per root of the cohort forest: its freed epoch then
        self._running: dict[str, tuple[int, bool]] = {}
        # Preemptors waiting for their victims go first (Kueue's PrioritizePreemptorWorkloads): the
        # simulator frees quota at once, and without it a victim would retake its own quota.
        self.prioritize_preemptors = bool(self.settings.get("prioritizePreemptorWorkloads", True))
        self._waiting: dict[str, float] = {}
        self._index = PendingIndex()
        self._parked = Parked(self._index)
        self._walked_unparked: dict[str, set[str]] = {}  # per call: walked heads left unparked
        self._cursors: dict[tuple, tuple] = {}  # per call: ``TwinSkipping._first_unknown``'s places
        self._strict_of: dict[str, bool] = {}  # per call: ``_strict`` by queue
        self._hid: dict[tuple, int] = {}
        self._alloc_seen: tuple[int, int] | None = None
        self._run_pos = 0  # where ``state.run_log`` was read up to at the last snapshot
        self._nodes_of: dict[frozenset, tuple[tuple, list[str]]] = {}
        self._changed: set[str] = set()  # workloads whose queue entry may have moved off the journal
        self._explained: tuple[tuple, QuotaTree] | None = None  # pending_reason's snapshot
        self._reason_memo: tuple | None = None  # (specs, {key: Assignment}): Explain._reason_assignment
        self._pending_memo: tuple = (None, {})  # (stamp, {(queue, shape): answer}): Explain.pending_reason
        self.priority_classes: dict[str, int] = {str(k): int(v) for k, v in
                                                 (self.settings.get("priorityClasses") or {}).items()}
        self.flavor_specs: dict[str, dict] = {str(k): dict(v or {}) for k, v in
                                              (self.settings.get("resourceFlavors") or {}).items()}
        self.namespaces: dict[str, dict] = {str(k): dict(v or {}) for k, v in
                                            (self.settings.get("namespaces") or {}).items()}

    def priority(self, wl) -> int:
        """A workload's ``settings.priorityClassName`` (WorkloadPriorityClass) wins over its priority."""
        p = self._prio.get(wl.id)
        if p is None:
            name = (wl.settings or {}).get("priorityClassName")
            if name is not None and str(name) in self.priority_classes:
                p = self.priority_classes[str(name)]
            else:
                p = wl.priority
            self._prio[wl.id] = p
        return p

    # -- configuration -----------------------------------------------------------------------

    def bind(self, state: ClusterState) -> None:
        self._load_specs(state)
        self.build_tree(state)  # the snapshot is paid for once here, then kept current
        self._seq_expect = getattr(state, "_seq", None)

    def on_config_change(self, state, queue, old, now) -> list[Decision]:
        self._load_specs(state)
        self._hkeys.clear()  # the queue's policy may have changed
        self._index.reset()
        self._idle = None
        self._no_targets.clear()
        self._targets_memo.clear()
        self._headroom.clear()
        self._kind_one.clear()
        self._parked.clear()
        self._outcomes = {}
        return []

    def on_priority_change(self, state, wl_id, old, now) -> None:
        """A pending workload's priority orders its ClusterQueue's heads and decides whom it may
        preempt (as a WorkloadPriorityClass change does in Kueue): every memo built from the old one goes."""
        self._prio.pop(wl_id, None)
        self._adm_cache.pop(wl_id, None)
        self._stale.add(wl_id)
        self._hkeys.clear()
        self._index.reset()
        self._idle = None
        self._no_targets.clear()
        self._targets_memo.clear()
        self._headroom.clear()
        self._kind_one.clear()
        self._parked.clear()
        self._outcomes = {}

    def _load_specs(self, state: ClusterState) -> None:
        self._tree = None
        self._outcomes = {}
        self._adm_cache.clear()  # the covered resources may have changed
        self._assign_memo.clear()
        self._assign_last.clear()
        self._reads.clear()
        self._akeys.clear()
        self._no_targets.clear()
        self._specs = specs_from_queues(state.queues, state.resources, self.default_flavor,
                                        self.settings.get("defaultPreemption"))
        covered: set[str] = set()
        for spec in list(self._specs[0]) + list(self._specs[1]):
            covered |= {res for (_, res) in spec.quotas}
        self._covered = covered

    # -- scheduling ---------------------------------------------------------------------------

    def _strict(self, state: ClusterState, cq: str) -> bool:
        """Whether the queue is StrictFIFO, read once per call (settings change only between calls)."""
        hit = self._strict_of.get(cq)
        if hit is None:
            hit = self._strict_of[cq] = (state.queues[cq].settings or {}).get("queueingStrategy") == STRICT_FIFO
        return hit

    def _entry(self, state: ClusterState, wl_id: str) -> tuple:
        """A pending workload's place in its queue (``pending.PendingIndex``) and its head id."""
        wl = state.workloads[wl_id]
        waiting = wl_id in self._waiting
        cq = self._tree.cqs.get(wl.queue) if self._tree is not None else None
        hid = -1 if cq is None else self._head_id(state, cq, wl_id)
        return (*self._order_key(wl), hid, waiting)

    def _pending_by_queue(self, state: ClusterState, tree: QuotaTree) -> dict[str, list[tuple]]:
        """Fully pending, unparked workloads per ClusterQueue, best first (BestEffortFIFO)."""
        self._index.sync(state, lambda w: self._entry(state, w), self._changed)
        self._changed = set()
        unparked = self._parked.unparked
        out = {}
        for q, lst in self._index.order.items():
            if lst and q in tree.cqs:
                out[q] = unparked(q)
        return out

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        if not self.caches:  # the reference path: every call made, every head evaluated afresh
            self._idle = None
        if self._idle is not None and self._idle == self._epochs(state):
            return []  # nothing moved since a call that decided nothing: it would decide nothing again
        self._strict_of = {}
        tree = self.build_tree(state)
        self._carry_outcomes(state)
        gversion = self._gversion
        self._targets_memo = {}
        self._doomed = {}
        self._doomed_from = {}
        self._settles = {}
        decisions: list[Decision] = []
        promised: dict[str, Res] = {}
        victims: set[str] = set()
        queues = self._pending_by_queue(state, tree)  # read only: ``at`` says how far each was taken
        at = dict.fromkeys(queues, 0)
        ends: dict[str, list[int]] = {}
        order = sorted(queues)
        self._walked_unparked = {q: set() for q in queues}
        self._cursors = {}
        trees: dict[str, list[str]] = {}
        if self.caches and not self.fair:
            for q in order:
                trees.setdefault(self._roots[q], []).append(q)
        by_tree = len(trees) > 1  # one tree: the skip of every queue together is the same
        resume: dict[str, int] = {}  # per cohort tree sitting rounds out: the round it takes heads again
        rnd = 0
        while True:
            if self.caches:
                # with a tree sitting rounds out, the rounds of the others are not aligned with its
                if not resume or all(r <= rnd for r in resume.values()):
                    self._skip_known(state, tree, queues, at, ends)
                if by_tree:
                    self._skip_known_trees(state, tree, queues, at, trees, rnd, resume)
            heads = []
            held = None
            for q in order:
                i = at[q]
                if i >= len(queues[q]):
                    continue
                back = resume.get(self._roots[q], 0) if resume else 0
                if back > rnd:
                    held = back if held is None or back < held else held
                    continue
                at[q] = i + 1
                wl_id = queues[q][i][3]
                cq = tree.cqs[q]
                wl = state.workloads[wl_id]
                a = self._assign(state, cq, wl_id)
                heads.append(_Head(wl_id, cq, a, self.priority(wl), wl.submit, self._version.get(self._roots[q], 0)))
            if not heads:
                if held is None:
                    break
                rnd = held  # every tree with heads left sits rounds out: the first to come back
                continue
            rnd += 1
            if self.fair:
                while heads:
                    h = self._tournament(tree, heads)
                    heads.remove(h)
                    self._process_strict(state, tree, h, now, decisions, promised, victims, queues, at)
            else:
                heads.sort(key=lambda h: (not self._is_waiting(h), h.assignment.borrowing, -h.priority, h.submit, h.wl))
                for h in heads:
                    self._process_strict(state, tree, h, now, decisions, promised, victims, queues, at)
        if self.caches:
            self._mark_walked(state, tree)
        self._end_call(state, tree, decisions)
        # A call can change the model without deciding anything (a preemptor whose victims are all
        # still terminating is re-admitted in the snapshot); only a call that changed nothing is
        # a fixed point that a repeat with unchanged state may skip.
        self._idle = None if decisions or self._gversion != gversion else self._epochs(state)
        return decisions

    def _process_strict(self, state: ClusterState, tree: QuotaTree, h: _Head, now: float, decisions: list[Decision],
                        promised: dict[str, Res], victims: set[str], queues: dict[str, list[tuple]],
                        at: dict[str, int]) -> None:
        """``_process``, then StrictFIFO: a head that did not start blocks the rest of its queue
        for this call and is never parked (Kueue requeues it at once, at the head)."""
        n = len(decisions)
        self._process(state, tree, h, now, decisions, promised, victims)
        if h.wl not in self._parked:
            self._walked_unparked[h.cq.name].add(h.wl)
        if not self._strict(state, h.cq.name):
            return
        if not any(isinstance(d, Start) for d in decisions[n:]) and self._namespace_ok(state, h.cq.name, h.wl):
            at[h.cq.name] = len(queues[h.cq.name])  # a namespace mismatch is set aside, as Kueue does in both strategies
            self._parked.discard(h.wl)

    def _mark_walked(self, state: ClusterState, tree: QuotaTree) -> None:
        """Every queue but a StrictFIFO one was walked to its end: mark it (``Parked.mark``).
        A queue with no unparked entry at the call's start is wholly parked already."""
        walked = self._walked_unparked
        for q in self._index.order:
            if q in tree.cqs and not self._strict(state, q):
                self._parked.mark(q, walked.get(q) or set())

    @staticmethod
    def _epochs(state: ClusterState) -> tuple:
        return (id(state), state.alloc_epoch, state.freed_epoch, state.submit_epoch, state.config_epoch,
                state.topology_epoch)

    # -- fair-sharing admission order -----------------------------------------------------------

    def _tournament(self, tree: QuotaTree, heads: list[_Head]) -> _Head:
        """Kueue's fair-sharing iterator (``cycle.tournament_winner``, shared with the whole-cycle
        conformance runs), with preemptors waiting for their victims first."""
        return tournament_winner(tree, heads, self._is_waiting)

    def _is_waiting(self, h: _Head) -> bool:
        return self.prioritize_preemptors and h.wl in self._waiting
