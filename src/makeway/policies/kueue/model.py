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

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Mapping

from makeway.core.decisions import Decision, Note, Preempt, Reason, Start
from makeway.core.policy import PreemptionModel
from makeway.core.resources import Res, add_into
from makeway.core.state import ClusterState
from makeway.core.placement import first_fit
from makeway.policies.kueue.assign import FIT, NOFIT, Assignment, assign_flavors
from makeway.policies.kueue.cycle import STRICT_FIFO, tournament_winner
from makeway.policies.kueue.selectors import selector_matches, untolerated
from makeway.policies.kueue.drs import dominant_resource_share
from makeway.policies.kueue.pending import PendingIndex, runs
from makeway.policies.kueue.preemption import DEFAULT_STRATEGIES, Preemptor, Target, get_targets
from makeway.policies.kueue.quota import (ANY, FR, Admitted, CohortSpec, CQSpec, QNode, QuotaTree,
                                          units)
from makeway.policies.kueue.setup import specs_from_queues

_HUMAN = {"InClusterQueue": "prioritization in the ClusterQueue",
          "InCohortReclamation": "reclamation within the cohort",
          "InCohortFairSharing": "Fair Sharing within the cohort",
          "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing"}


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


@dataclass(slots=True)
class _Head:
    wl: str
    cq: QNode
    assignment: Assignment
    priority: int
    submit: float

    @property
    def usage(self) -> dict[FR, int]:
        return self.assignment.usage

    @property
    def borrows(self) -> bool:
        return self.assignment.borrows


class KueueModel(PreemptionModel):
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
        self._watch: list[tuple[str, str]] = []  # (queue, allocation) preempted in the last call
        self._seq_expect: int | None = None
        self._incall: list[tuple[QNode, dict]] = []
        self._idle: tuple | None = None
        self._prio: dict[str, int] = {}  # workloads are immutable: their priority is read once
        self._hkeys: dict[str, tuple] = {}
        self._version: dict[str, int] = {}  # per root, never reset: bumped at every tree change
        # Non-empty GetTargets results under the same validity stamp, and per-call flavor
        # assignments: identical heads deep in a queue cost a dictionary look-up.
        self._targets_memo: dict[tuple, tuple[tuple[int, int], list[Target]]] = {}
        self._shapes: dict[str, tuple] = {}
        self._assign_memo: dict[tuple, dict[tuple, Assignment]] = {}
        self._reads: dict[str, tuple[QNode, list]] = {}  # per queue: the usage a flavor assignment reads
        self._akeys: dict[str, tuple] = {}
        self._gversion = 0  # bumped with every per-root version: node promises and victims changed
        self._outcomes: dict[tuple, tuple[int, int | None, bool]] = {}
        self._probed_nodes = False
        # BestEffortFIFO: a workload found inadmissible is parked until quota is released (a
        # workload ends or is evicted) or the configuration changes, as Kueue requeues them.
        self._parked: set[str] = set()
        self._freed_seen: tuple[int, int] | None = None  # (id(state), freed_epoch) at the last snapshot
        self._running: dict[str, tuple[int, bool]] = {}
        # Preemptors waiting for their victims go first (Kueue's PrioritizePreemptorWorkloads): the
        # simulator frees quota at once, and without it a victim would retake its own quota.
        self.prioritize_preemptors = bool(self.settings.get("prioritizePreemptorWorkloads", True))
        self._waiting: dict[str, float] = {}
        self._index = PendingIndex()
        self._hid: dict[tuple, int] = {}
        self._alloc_seen: tuple[int, int] | None = None
        self._nodes_of: dict[frozenset, tuple[tuple, list[str]]] = {}
        self._changed: set[str] = set()  # workloads whose queue entry may have moved off the journal
        self._explained: tuple[tuple, QuotaTree] | None = None  # pending_reason's snapshot
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
        self._parked.clear()
        return []

    def on_priority_change(self, state, wl_id, old, now) -> None:
        """A pending workload's priority orders its ClusterQueue's heads and decides whom it may
        preempt (as a WorkloadPriorityClass change does in Kueue): every memo built from the old one goes."""
        self._prio.pop(wl_id, None)
        self._hkeys.clear()
        self._index.reset()
        self._idle = None
        self._no_targets.clear()
        self._targets_memo.clear()
        self._parked.clear()

    def _load_specs(self, state: ClusterState) -> None:
        self._tree = None
        self._assign_memo.clear()
        self._reads.clear()
        self._akeys.clear()
        self._no_targets.clear()
        self._specs = specs_from_queues(state.queues, state.resources, self.default_flavor,
                                        self.settings.get("defaultPreemption"))
        covered: set[str] = set()
        for spec in list(self._specs[0]) + list(self._specs[1]):
            covered |= {res for (_, res) in spec.quotas}
        self._covered = covered

    def _flavor(self, state: ClusterState, node: str) -> str:
        return state.nodes[node].labels.get(self.flavor_label, self.default_flavor)

    def build_tree(self, state: ClusterState) -> QuotaTree:
        """Kueue's snapshot: the quota tree with the usage of every admitted (running) workload.

        The tree is kept across calls. Only ClusterQueues that may have changed are re-read from
        the state: those this model started or preempted in, and those whose allocation count
        moved (a finish or an eviction). A start this model did not decide (the state's start
        sequence says so), another state or a configuration change rebuilds everything. Usage
        sums do not depend on the order they were applied in, so the tree equals a fresh build.
        """
        if self._specs is None:
            self._load_specs(state)
        tree = self._tree
        if tree is None or state is not self._bound or getattr(state, "_seq", None) != self._seq_expect:
            cohorts, cqs = self._specs  # type: ignore[misc]
            tree = QuotaTree(cohorts, cqs)
            if state is not self._bound:  # per-workload caches are keyed by id within one state
                self._prio.clear()
                self._shapes.clear()
                self._hkeys.clear()
                self._akeys.clear()
                self._nodes_of.clear()
            self._tree, self._bound = tree, state
            self._roots = {q: n.root().name for q, n in tree.cqs.items()}
            self._entries = {q: {} for q in tree.cqs}
            self._counts = {}
            self._sig = {}
            dirty = list(tree.cqs)
            self._index.reset()  # a start this model did not decide left no journal record
        else:
            allocs_by_q = state.queue_allocs
            for q, tid in self._watch:  # a victim with a grace period is marked, not yet removed
                a = state.allocations.get(tid)
                if a is not None and a.preempting:
                    self._touched.add(q)
            if self._alloc_seen == (id(state), state.alloc_epoch):  # no start or end: counts are as they were
                dirty = [q for q in tree.cqs if q in self._touched] if self._touched else []
            else:
                dirty = [q for q in tree.cqs
                         if q in self._touched or len(allocs_by_q.get(q, ())) != self._counts.get(q, 0)]
        self._alloc_seen = (id(state), state.alloc_epoch)
        # Any allocation that ended since the last snapshot released quota, even one admitted and
        # finished between two calls (it never appeared in the entries diffed below).
        freed = (id(state), state.freed_epoch)
        released = self._freed_seen is not None and freed != self._freed_seen
        self._freed_seen = freed
        for q in dirty:
            old = self._entries[q]
            new: dict[str, tuple[Admitted, int]] = {}
            for wl_id in dict.fromkeys(state.allocations[t].workload for t in state.queue_allocs.get(q, ())):
                new[wl_id] = (self._admitted(state, wl_id), len(state.running[wl_id]))
            for wl_id, (adm, n) in old.items():
                cur = new.get(wl_id)
                if cur is None or cur[1] < n or (cur[0].evicted and not adm.evicted):
                    released = True  # quota was released: inadmissible workloads are requeued
                tree.remove_workload(adm)
            for adm, _ in new.values():
                tree.add_workload(adm)
            # The signature of a root is a hash of its set of (workload, evicted): equal exactly
            # when the set is, as a freshly built snapshot would compare it.
            root = self._roots[q]
            h = self._sig.get(root, 0)
            for w, e in old.items():
                h -= hash((w, e[0].evicted))
            for w, e in new.items():
                h += hash((w, e[0].evicted))
            self._sig[root] = h & 0xFFFFFFFFFFFFFFFF
            if old != new:
                self._bump(tree.cqs[q])
            self._entries[q] = new
            self._counts[q] = len(state.queue_allocs.get(q, ()))
        if released:
            self._parked.clear()
        self._touched = set()
        self._watch = []
        return tree

    def _admitted(self, state: ClusterState, wl_id: str) -> Admitted:
        wl = state.workloads[wl_id]
        usage: dict[FR, float] = {}
        first_start, evicted = None, False
        for tid in state.running[wl_id]:
            a = state.allocations[tid]
            flv = self._flavor(state, a.node)
            for res, v in a.resources.items():
                if res in self._covered:
                    usage[(flv, res)] = usage.get((flv, res), 0) + v
            first_start = a.start if first_start is None else min(first_start, a.start)
            evicted = evicted or a.preempting
        return Admitted(wl_id, wl.queue, self.priority(wl), {fr: units(fr[1], v) for fr, v in usage.items()},
                        self._admitted_at.get(wl_id, first_start or 0.0), wl.submit, wl_id, evicted,
                        not wl.preemptible)

    def _end_call(self, state: ClusterState, tree: QuotaTree, decisions: list[Decision]) -> None:
        """Take back the usage this call added to the tree (admissions and reservations live in
        the state once applied) and note which queues the decisions will change."""
        # The stamps of cross-call memos are (admitted set, version): usage taken back here must
        # bump the version, or a later call with the same admitted set would reuse an answer
        # computed while this call's admissions were in the tree.
        for cq, usage in reversed(self._incall):
            tree.add_usage(cq, usage, -1)
            self._bump(cq)
        self._incall = []
        starts = 0
        for d in decisions:
            if isinstance(d, Start):
                starts += 1
                wl_id = d.task.rsplit("/", 2)[0]
                self._touched.add(state.workloads[wl_id].queue)
                self._changed.add(wl_id)
            elif isinstance(d, Preempt):
                a = state.allocations.get(d.allocation)
                if a is not None:
                    self._watch.append((a.queue, d.allocation))
        self._seq_expect = getattr(state, "_seq", None)
        if self._seq_expect is not None:
            self._seq_expect += starts

    # -- scheduling ---------------------------------------------------------------------------

    def _pod_sets(self, state: ClusterState, wl_id: str) -> list[dict[str, int]]:
        wl = state.workloads[wl_id]
        return [{r: units(r, v * g.count) for r, v in g.resources.items()} for g in wl.groups]

    def _assign(self, state: ClusterState, cq: QNode, wl_id: str) -> Assignment:
        """``assign_flavors``, memoised by what it reads: the request shape, the excluded flavors
        and the usage of the queue and its ancestors on the queue's flavor-resources (quotas and
        policies are fixed until the specs are reloaded, which empties the memo)."""
        if not self.caches:
            self._assign_memo.clear()
        hit = self._akeys.get(wl_id)
        if hit is None or hit[0][0] != cq.name:
            shape = self._shapes.get(wl_id)
            if shape is None:
                shape = tuple(tuple(sorted(ps.items())) for ps in self._pod_sets(state, wl_id))
                self._shapes[wl_id] = shape
            excluded = self._excluded(state, wl_id)
            hit = self._akeys[wl_id] = ((cq.name, shape, tuple(sorted(excluded.items())) if excluded else ()), excluded)
        key, excluded = hit
        per = self._assign_memo.get(key)
        if per is None:
            per = self._assign_memo[key] = {}
        reads = self._reads.get(cq.name)
        if reads is None or reads[0] is not cq:
            frs = [(f, r) for resources, flavors in cq.groups for f in flavors for r in resources]
            path = [cq, *cq.path_parent_to_root()]
            reads = self._reads[cq.name] = (cq, [(n.usage, fr) for n in path for fr in frs])
        t = tuple([u.get(fr, 0) for u, fr in reads[1]])
        a = per.get(t)
        if a is None:
            if len(per) >= 512:  # usage vectors seen under one key: a bound, not a working set
                per.clear()
            a = per[t] = assign_flavors(cq, [dict(ps) for ps in key[1]], self._covered, self.fair,
                                        (state.queues[cq.name].settings or {}).get("flavorFungibility"), excluded)
        return a

    def _excluded(self, state: ClusterState, wl_id: str) -> dict[str, str]:
        """Flavors whose node taints the workload's pods do not tolerate (flavor -> why)."""
        if not self.flavor_specs:
            return {}
        tolerations = list((state.workloads[wl_id].settings or {}).get("tolerations") or [])
        out = {}
        for name, spec in self.flavor_specs.items():
            t = untolerated(spec.get("nodeTaints") or [], tolerations + list(spec.get("tolerations") or []))
            if t is not None:
                out[name] = f"untolerated taint {t.get('key')}={t.get('value', '')}:{t.get('effect')} in flavor {name}"
        return out

    def _namespace_ok(self, state: ClusterState, cq: str, wl_id: str) -> bool:
        """The ClusterQueue's ``namespaceSelector`` against the workload's namespace labels."""
        selector = (state.queues[cq].settings or {}).get("namespaceSelector")
        if selector is None:
            return True
        ns = str((state.workloads[wl_id].settings or {}).get("namespace") or "default")
        return selector_matches(selector, self.namespaces.get(ns, {}))

    def _strict(self, state: ClusterState, cq: str) -> bool:
        return (state.queues[cq].settings or {}).get("queueingStrategy") == STRICT_FIFO

    def _entry(self, state: ClusterState, wl_id: str) -> tuple:
        """A pending workload's place in its queue (``pending.PendingIndex``) and its head id."""
        wl = state.workloads[wl_id]
        waiting = wl_id in self._waiting
        cq = self._tree.cqs.get(wl.queue) if self._tree is not None else None
        hid = -1 if cq is None else self._hid.setdefault(self._head_key(state, cq, wl_id), len(self._hid))
        return (not (self.prioritize_preemptors and waiting), -self.priority(wl), wl.submit, wl_id, hid, waiting)

    def _pending_by_queue(self, state: ClusterState, tree: QuotaTree) -> dict[str, list[tuple]]:
        """Fully pending, unparked workloads per ClusterQueue, best first (BestEffortFIFO)."""
        self._index.sync(state, lambda w: self._entry(state, w), self._changed)
        self._changed = set()
        parked = self._parked
        out = {}
        for q, lst in self._index.order.items():
            if lst and q in tree.cqs:
                out[q] = [e for e in lst if e[3] not in parked] if parked else lst
        return out

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        if not self.caches:  # the reference path: every call made, every head evaluated afresh
            self._idle = None
        if self._idle is not None and self._idle == self._epochs(state):
            return []  # nothing moved since a call that decided nothing: it would decide nothing again
        tree = self.build_tree(state)
        gversion = self._gversion
        self._targets_memo = {}
        decisions: list[Decision] = []
        promised: dict[str, Res] = {}
        victims: set[str] = set()
        queues = self._pending_by_queue(state, tree)  # read only: ``at`` says how far each was taken
        at = dict.fromkeys(queues, 0)
        ends: dict[str, list[int]] = {}
        self._outcomes = {}
        order = sorted(queues)
        while True:
            if self.caches:
                self._skip_known(state, tree, queues, at, ends)
            heads = []
            for q in order:
                i = at[q]
                if i >= len(queues[q]):
                    continue
                at[q] = i + 1
                wl_id = queues[q][i][3]
                cq = tree.cqs[q]
                wl = state.workloads[wl_id]
                a = self._assign(state, cq, wl_id)
                heads.append(_Head(wl_id, cq, a, self.priority(wl), wl.submit))
            if not heads:
                break
            if self.fair:
                while heads:
                    h = self._tournament(tree, heads)
                    heads.remove(h)
                    self._process_strict(state, tree, h, now, decisions, promised, victims, queues, at)
            else:
                heads.sort(key=lambda h: (not self._is_waiting(h), h.assignment.borrowing, -h.priority, h.submit, h.wl))
                for h in heads:
                    self._process_strict(state, tree, h, now, decisions, promised, victims, queues, at)
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
        if not self._strict(state, h.cq.name):
            return
        if not any(isinstance(d, Start) for d in decisions[n:]) and self._namespace_ok(state, h.cq.name, h.wl):
            at[h.cq.name] = len(queues[h.cq.name])  # a namespace mismatch is set aside, as Kueue does in both strategies
            self._parked.discard(h.wl)

    def _skip_known(self, state: ClusterState, tree: QuotaTree, queues: dict[str, list[tuple]],
                    at: dict[str, int], ends: dict[str, list[int]]) -> None:
        """Take the rounds in which every head is a twin of a head that decided nothing under the
        current stamps, at once. Such a round changes nothing but parking, so the next round sees
        the same stamps: each queue can go on through its runs of known twins until one queue
        reaches a head that must be evaluated. Round by round, the loop would decide the same."""
        plan = []
        step = None
        for q, lst in queues.items():
            i, n = at[q], len(lst)
            if i >= n:
                continue
            cq = tree.cqs[q]
            if self._strict(state, q):
                return
            run_ends = ends.get(q)
            if run_ends is None:
                run_ends = ends[q] = runs(lst)
            j = i
            while j < n:
                known = self._known_noop(state, cq, lst[j][3])
                if known is None:
                    break
                e = run_ends[bisect_right(run_ends, j)]
                plan.append((q, j, e, known))
                j = e
            if j < n:
                step = j - i if step is None else min(step, j - i)
                if step == 0:
                    return
        parked = self._parked
        for q, j, e, known in plan:
            stop = e if step is None else min(e, at[q] + step)
            if known and j < stop:
                parked.update(x[3] for x in queues[q][j:stop])
        for q, lst in queues.items():
            at[q] = len(lst) if step is None else min(len(lst), at[q] + step)

    @staticmethod
    def _epochs(state: ClusterState) -> tuple:
        return (id(state), state.alloc_epoch, state.freed_epoch, state.submit_epoch, state.config_epoch,
                state.topology_epoch)

    # -- heads whose twin decided nothing --------------------------------------------

    def _head_key(self, state: ClusterState, cq: QNode, wl_id: str) -> tuple:
        """Everything ``_process`` reads of a head besides the tree, the node promises and the
        victims: its queue, pod-set totals (quota), pods (placement), priority and (only where the
        policy compares it) age."""
        key = self._hkeys.get(wl_id)
        if key is not None and key[0] == cq.name:
            return key
        shape = self._shapes.get(wl_id)
        if shape is None:
            shape = tuple(tuple(sorted(ps.items())) for ps in self._pod_sets(state, wl_id))
            self._shapes[wl_id] = shape
        wl = state.workloads[wl_id]
        # node placement reads pods, not totals: 2 pods of 1 cpu and 1 pod of 2 cpu are not twins
        pods = tuple((g.count, tuple(sorted(g.resources.items()))) for g in wl.groups)
        ws = wl.settings or {}
        key = (cq.name, shape, pods, self.priority(wl),
               wl.submit if cq.policy.within_cluster_queue == "LowerOrNewerEqualPriority" else None,
               repr(ws.get("tolerations")), ws.get("namespace"))
        self._hkeys[wl_id] = key
        return key

    def _known_noop(self, state: ClusterState, cq: QNode | None, wl_id: str) -> bool | None:
        """For a head whose twin (same key) was processed since the last change that could matter
        and changed nothing: whether it was parked. None when the outcome is not known."""
        if cq is None or wl_id in self._waiting or not self.caches:
            return None
        hit = self._outcomes.get(self._head_key(state, cq, wl_id))
        if hit is None:
            return None
        root_v, global_v, parked = hit
        if root_v != self._version.get(cq.root().name, 0):
            return None
        if global_v is not None and global_v != self._gversion:
            return None
        return parked

    def _process(self, state: ClusterState, tree: QuotaTree, h: _Head, now: float, decisions: list[Decision],
                 promised: dict[str, Res], victims: set[str]) -> None:
        # A twin's no-op outcome is valid at this very moment (the memo's stamps say nothing it reads
        # changed), so the head would decide nothing: park it as the twin was parked, unevaluated.
        known = self._known_noop(state, h.cq, h.wl)
        if known is not None:
            if known:
                self._parked.add(h.wl)
            return
        root = h.cq.root().name
        before = (len(decisions), self._version.get(root, 0), self._gversion, h.wl in self._waiting)
        self._probed_nodes = False
        self._process_head(state, tree, h, now, decisions, promised, victims)
        if not before[3] and before[:3] == (len(decisions), self._version.get(root, 0), self._gversion):
            self._outcomes[self._head_key(state, h.cq, h.wl)] = (
                before[1], before[2] if self._probed_nodes else None, h.wl in self._parked)

    def _process_head(self, state: ClusterState, tree: QuotaTree, h: _Head, now: float, decisions: list[Decision],
                      promised: dict[str, Res], victims: set[str]) -> None:
        if not self.caches:
            self._no_targets.clear()
            self._targets_memo.clear()
        cq = h.cq
        wl = state.workloads[h.wl]
        if not self._namespace_ok(state, cq.name, h.wl):
            self._parked.add(h.wl)  # Misconfigured; requeued only when the configuration changes
            return
        a = self._assign(state, cq, h.wl)
        if a.mode == NOFIT:
            self._parked.add(h.wl)
            return
        if a.mode == FIT:
            starts = self._place(state, h.wl, a, promised)
            if starts is None:
                self._parked.add(h.wl)
                return
            for s in starts:
                add_into(promised.setdefault(s.node, {}), state.task_resources(s.task))
            tree.add_usage(cq, a.usage)
            self._incall.append((cq, a.usage))
            self._bump(cq)
            self._admitted_at[h.wl] = now
            self._waiting.pop(h.wl, None)
            self._changed.add(h.wl)
            decisions.extend(starts)
            return
        p = Preemptor(h.wl, cq.name, h.priority, dict(a.usage), frozenset(a.frs_need), wl.submit, h.wl)
        key = (cq.name, tuple(sorted(p.requests.items())), tuple(sorted(p.frs_need)), p.priority,
               p.created_at if "LowerOrNewerEqualPriority" == cq.policy.within_cluster_queue else None)
        root = cq.root().name
        stamp = (self._sig.get(root, 0), self._version.get(root, 0))
        if self._no_targets.get(key) == stamp:
            targets = []
        else:
            hit = self._targets_memo.get(key)
            if hit is not None and hit[0] == stamp:
                targets = hit[1]
            else:
                targets = get_targets(tree, p, self.fair, self.strategies)
                if targets:
                    self._targets_memo[key] = (stamp, targets)
        if not targets:
            if self._waiting.pop(h.wl, None) is not None:
                self._changed.add(h.wl)
            self._parked.add(h.wl)
            self._no_targets[key] = stamp
            if cq.policy.reclaim_within_cohort != ANY:
                reserve = {fr: v for fr, v in self._reserve(cq, a).items() if v > 0}
                if reserve:
                    tree.add_usage(cq, reserve)
                    self._incall.append((cq, reserve))
                    self._bump(cq)
            return
        if any(t.workload.name in victims for t in targets):
            return  # overlapping targets with an earlier preemptor in this call: wait
        if self._place(state, h.wl, a, self._without(state, targets, promised)) is None:
            # Kueue decides on quota only; the simulator also needs the pods to fit on the nodes
            # the victims free, otherwise the eviction would be wasted and the victim retake it.
            self._parked.add(h.wl)
            return
        self._waiting[h.wl] = now
        self._changed.add(h.wl)
        new: list[Decision] = []
        for t in sorted(targets, key=lambda t: t.workload.name):
            victims.add(t.workload.name)
            new.extend(self._preempt(state, t, p, tree))
        decisions.extend(new)
        if new:
                decisions.append(Note("kueue-preemption", h.wl,
                                  f"{h.wl} in {cq.name} preempts {len(targets)} workload(s) to fit",
                                  {"targets": sorted(t.workload.name for t in targets)}))
        tree.add_usage(cq, a.usage)
        self._incall.append((cq, a.usage))
        self._bump(cq)

    def _bump(self, cq: QNode) -> None:
        self._gversion += 1
        root = cq.root().name
        self._version[root] = self._version.get(root, 0) + 1

    @staticmethod
    def _without(state: ClusterState, targets: list[Target], promised: dict[str, Res]) -> dict[str, Res]:
        """Node usage promised in this call, minus what the victims hold (negative extras)."""
        extra = {n: dict(r) for n, r in promised.items()}
        for t in targets:
            for tid in state.running.get(t.workload.name, ()):
                a = state.allocations[tid]
                add_into(extra.setdefault(a.node, {}), a.resources, -1)
        return extra

    @staticmethod
    def _reserve(cq: QNode, a: Assignment) -> dict[FR, int]:
        """Quota held back for a preemptor without targets, so lower-ordered heads cannot take it."""
        out: dict[FR, int] = {}
        for fr, v in a.usage.items():
            used = cq.usage.get(fr, 0)
            q = cq.quotas.get(fr)
            if a.borrows:
                if q is None or q.borrowing_limit is None:
                    out[fr] = v
                else:
                    out[fr] = max(0, min(v, q.nominal + q.borrowing_limit - used))
            else:
                out[fr] = max(0, min(v, cq.nominal(fr) - used))
        return out

    def _place(self, state: ClusterState, wl_id: str, a: Assignment, promised: dict[str, Res]) -> list[Start] | None:
        self._probed_nodes = True
        wl = state.workloads[wl_id]
        pending = state.pending.get(wl_id, {})
        starts: list[Start] = []
        extra = {n: dict(r) for n, r in promised.items()}
        for g, grp in enumerate(wl.groups):
            tasks = [t for t in pending if int(t.rsplit("/", 2)[1]) == g]
            if not tasks:
                continue
            nodes = self._flavor_nodes(state, frozenset(a.flavors[g].values()) if g < len(a.flavors) else frozenset())
            placed = first_fit(state, tasks, extra, nodes)
            if placed is None:
                return None
            for s in placed:
                add_into(extra.setdefault(s.node, {}), state.task_resources(s.task))
            starts.extend(placed)
        return starts

    def _flavor_nodes(self, state: ClusterState, flavors: frozenset) -> list[str]:
        """The nodes of these flavors (all nodes for none), in node order; kept per node set."""
        stamp = (id(state), state.topology_epoch)
        hit = self._nodes_of.get(flavors)
        if hit is None or hit[0] != stamp:
            hit = self._nodes_of[flavors] = (stamp, [n for n in state.nodes if not flavors
                                                     or self._flavor(state, n) in flavors])
        return hit[1]

    def _preempt(self, state: ClusterState, t: Target, p: Preemptor, tree: QuotaTree) -> list[Decision]:
        victim = state.workloads[t.workload.name]
        detail = (f"Preempted to accommodate a workload (UID: {p.name}) due to {_HUMAN.get(t.reason, t.reason)}; "
                  f"preemptor path: {_path(tree.cqs[p.cq])}; preemptee path: {_path(tree.cqs[t.workload.cq])}")
        values = {"preemptorPriority": p.priority, "victimPriority": t.workload.priority,
                  "preemptorClusterQueue": p.cq, "victimClusterQueue": t.workload.cq, **t.values}
        reason = Reason("kueue", t.reason, p.name, detail, values)
        return [Preempt(tid, reason) for tid in sorted(state.running.get(victim.id, ()))
                if not state.allocations[tid].preempting]

    # -- pending reasons (read only) -------------------------------------------------------------

    def queue_order(self, state: ClusterState, queue: str, now: float) -> list[str]:
        """BestEffortFIFO as admission walks it: preemptors waiting for victims first, then
        priority (priority classes included), then creation time."""
        wls = state.workloads
        keys = [(not (self.prioritize_preemptors and w in self._waiting), -self.priority(wls[w]), wls[w].submit, w)
                for w in state.pending if wls[w].queue == queue]
        return [k[-1] for k in sorted(keys)]

    def _explain_tree(self, state: ClusterState) -> QuotaTree | None:
        """A fresh snapshot of admitted usage (the model's own tree is left untouched), kept
        while the allocations, their eviction marks and the config are unchanged."""
        if self._specs is None:
            return None
        stamp = (id(state), state.alloc_epoch, state.config_epoch, id(self._specs),
                 sum(1 for a in state.allocations.values() if a.preempting))
        hit = self._explained
        if hit is not None and hit[0] == stamp:
            return hit[1]
        cohorts, cqs = self._specs
        tree = QuotaTree(cohorts, cqs)
        for wl_id, tasks in state.running.items():
            if tasks and state.workloads[wl_id].queue in tree.cqs:
                tree.add_workload(self._admitted(state, wl_id))
        self._explained = (stamp, tree)
        return tree

    def nominal_quotas(self, state: ClusterState) -> dict[str, dict[str, float]]:
        """Each ClusterQueue's and cohort's nominal quota per resource (summed over flavors, in
        makeway's units), also when it came from native ``resourceGroups`` rather than
        ``guaranteed``: what a report draws as the queue's quota line. Read-only."""
        cohorts, cqs = self._specs or specs_from_queues(state.queues, state.resources, self.default_flavor,
                                                        self.settings.get("defaultPreemption"))
        out: dict[str, dict[str, float]] = {}
        for spec in list(cohorts) + list(cqs):
            if spec.name not in state.queues:
                continue
            per: dict[str, float] = {}
            for (_, res), fq in spec.quotas.items():
                per[res] = per.get(res, 0) + (fq.nominal / 1000 if res == "cpu" else fq.nominal)
            out[spec.name] = per
        return out

    def queue_shares(self, state: ClusterState, now: float) -> dict[str, dict[str, Any]]:
        """With fair sharing, each ClusterQueue's and cohort's dominant resource share (the rounded
        value Kueue reports in its status) over admitted usage."""
        if not self.fair:
            return {}
        tree = self._explain_tree(state)
        if tree is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for name, node in {**tree.cohorts, **tree.cqs}.items():
            if name in state.queues:
                share = dominant_resource_share(node)
                out[name] = {"drs": share.rounded, "borrowing": share.borrowing}
        return out

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """Kueue's inadmissible reasons: the flavor assignment against the quota tree (NoFit:
        insufficient quota; Preempt: quota held by others, a preemptor waiting for its victims or
        without targets); a workload that fits its quota is left to the generic rules."""
        wl = state.workloads[wl_id]
        tree = self._explain_tree(state)
        cq = None if tree is None else tree.cqs.get(wl.queue)
        if cq is None:
            return ("quota", f"queue {wl.queue} is not a ClusterQueue", {"blocking": wl.queue})
        pod_sets = self._pod_sets(state, wl_id)
        a = assign_flavors(cq, pod_sets, self._covered, self.fair,
                           (state.queues[cq.name].settings or {}).get("flavorFungibility"))
        frs = sorted({fr for fr in cq.quotas} | set(a.usage))
        values: dict[str, Any] = {
            "clusterQueue": cq.name, "blocking": cq.name,
            "nominal": {f"{f}/{r}": cq.nominal((f, r)) for f, r in frs},
            "usage": {f"{f}/{r}": cq.usage.get((f, r), 0) for f, r in frs},
            "requested": {r: v for ps in pod_sets for r, v in ps.items()}}
        if a.mode == NOFIT:
            return ("quota", f"couldn't assign flavors: insufficient quota in ClusterQueue {cq.name} ({a.reason})",
                    values)
        if a.mode == FIT:
            return None
        if wl_id in self._waiting:
            victims = sorted(t for t, al in state.allocations.items() if al.preempting)
            if victims:
                return ("preempting", f"preempting since {self._waiting[wl_id]:g}: waiting for "
                                      f"{len(victims)} evicted allocation(s) to release their quota",
                        {**values, "blocking": None, "since": self._waiting[wl_id], "victims": victims})
        return ("quota", f"ClusterQueue {cq.name} needs quota held by other workloads and none can be "
                         "preempted for it now", values)

    # -- fair-sharing admission order -----------------------------------------------------------

    def _tournament(self, tree: QuotaTree, heads: list[_Head]) -> _Head:
        """Kueue's fair-sharing iterator (``cycle.tournament_winner``, shared with the whole-cycle
        conformance runs), with preemptors waiting for their victims first."""
        return tournament_winner(tree, heads, self._is_waiting)

    def _is_waiting(self, h: _Head) -> bool:
        return self.prioritize_preemptors and h.wl in self._waiting


def _path(n: QNode) -> str:
    parts = []
    cur: QNode | None = n
    while cur is not None:
        parts.append(cur.name)
        cur = cur.parent
    return "/" + "/".join(reversed(parts))
