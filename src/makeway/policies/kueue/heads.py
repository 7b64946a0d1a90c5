"""One head's admission attempt in the Kueue model: flavor assignment (memoised by what it
reads), then admission with all pods placed first-fit, or a target search and the victims'
evictions, or parking. The caller orders the heads and decides which ones to evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass

from makeway.core.decisions import Decision, Note, Preempt, Reason, Start
from makeway.core.placement import first_fit
from makeway.core.resources import Res, add_into
from makeway.core.state import ClusterState
from makeway.policies.kueue.assign import FIT, NOFIT, Assignment, assign_flavors
from makeway.policies.kueue.preemption import Preemptor, Target, classic_search_headroom, get_targets
from makeway.policies.kueue.quota import ANY, FR, LOWER_PRIORITY, NEVER, QNode, QuotaTree, cq_available, units
from makeway.policies.kueue.selectors import selector_matches, untolerated

_HUMAN = {"InClusterQueue": "prioritization in the ClusterQueue",
          "InCohortReclamation": "reclamation within the cohort",
          "InCohortFairSharing": "Fair Sharing within the cohort",
          "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing"}


@dataclass(slots=True)
class _Head:
    wl: str
    cq: QNode
    assignment: Assignment
    priority: int
    submit: float
    version: int = -1  # the root's version the assignment was made at (-1: made afresh when used)

    @property
    def usage(self) -> dict[FR, int]:
        return self.assignment.usage

    @property
    def borrows(self) -> bool:
        return self.assignment.borrows


class HeadAdmission:
    """Mixin of ``KueueModel``: evaluate one head against the snapshot (attributes set in
    ``KueueModel.__init__``)."""

    def _pod_sets(self, state: ClusterState, wl_id: str) -> list[dict[str, int]]:
        wl = state.workloads[wl_id]
        return [{r: units(r, v * g.count) for r, v in g.resources.items()} for g in wl.groups]

    def _shape(self, state: ClusterState, wl_id: str) -> tuple:
        """The workload's pod-set totals as a hashable key (quota reads totals), kept per workload."""
        shape = self._shapes.get(wl_id)
        if shape is None:
            shape = self._shapes[wl_id] = tuple(tuple(sorted(ps.items())) for ps in self._pod_sets(state, wl_id))
        return shape

    def _assign(self, state: ClusterState, cq: QNode, wl_id: str) -> Assignment:
        """``assign_flavors``, memoised by what it reads: the request shape, the excluded flavors
        and the usage of the queue and its ancestors on the queue's flavor-resources (quotas and
        policies are fixed until the specs are reloaded, which empties the memo)."""
        if not self.caches:
            self._assign_memo.clear()
        hit = self._akeys.get(wl_id)
        if hit is None or hit[0][0] != cq.name:
            shape = self._shape(state, wl_id)
            excluded = self._excluded(state, wl_id)
            key = (cq.name, shape, tuple(sorted(excluded.items())) if excluded else ())
            # an int per distinct key: the look-up below hashes it, not the nested key
            hit = self._akeys[wl_id] = (key, excluded, self._akey_ids.setdefault(key, len(self._akey_ids)))
        key, excluded, kid = hit
        # while the root's version is unchanged no usage the assignment reads moved
        version = self._version.get(self._roots[cq.name], 0)
        last = self._assign_last.get(kid)
        if last is not None and last[0] is cq and last[1] == version and self.caches:
            return last[2]
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
        self._assign_last[kid] = (cq, version, a)
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

    def _process_head(self, state: ClusterState, tree: QuotaTree, h: _Head, now: float, decisions: list[Decision],
                      promised: dict[str, Res], victims: set[str]) -> None:
        if not self.caches:
            self._no_targets.clear()
            self._targets_memo.clear()
            self._doomed.clear()
            self._doomed_from.clear()
            self._headroom.clear()
        cq = h.cq
        wl = state.workloads[h.wl]
        if not self._namespace_ok(state, cq.name, h.wl):
            self._parked.add(h.wl)  # Misconfigured; requeued only when the configuration changes
            return
        # the assignment made when the head was taken holds while nothing in its cohort tree changed
        a = h.assignment if h.version == self._version.get(self._roots[cq.name], 0) and self.caches \
            else self._assign(state, cq, h.wl)
        if a.mode == NOFIT:
            self._parked.add(h.wl)
            if not self.fair:
                self._settled = -1
            return
        if a.mode == FIT:
            starts = self._place(state, h.wl, a, promised)
            if starts is None:
                self._parked.add(h.wl, node=True)
                return
            for s in starts:
                add_into(promised.setdefault(s.node, {}), state.task_resources(s.task))
            self._add_in_call(tree, cq, a.usage)
            self._admitted_at[h.wl] = now
            self._waiting.pop(h.wl, None)
            self._changed.add(h.wl)
            decisions.extend(starts)
            return
        p = Preemptor(h.wl, cq.name, h.priority, dict(a.usage), frozenset(a.frs_need), wl.submit, h.wl)
        key = (cq.name, a.preemptor_key(), p.priority,
               p.created_at if "LowerOrNewerEqualPriority" == cq.policy.within_cluster_queue else None)
        root = cq.root().name
        stamp = (self._sig.get(root, 0), self._version.get(root, 0))
        flips = self._flips.get(root, 0)
        # one flavor-resource asked for (and needed): a doomed classic search for no more of it
        # in this call dooms this one too (``test_doomed_stays_doomed_for_a_larger_request``)
        one = None
        if not self.fair and len(p.requests) == 1 and len(p.frs_need) == 1:
            fr, v = next(iter(p.requests.items()))
            if fr in p.frs_need:
                one = (cq.name, fr, key[2], key[3])
        smallest = self._doomed_from.get(one) if one is not None else None
        # a head refused this way holds no quota back (reclaim Any): settled till the next flip
        settles = cq.policy.reclaim_within_cohort == ANY
        if one is not None and settles:
            self._note_one(state, cq, h.wl, one, v, root)
        if (one is not None and self._short_of(one, v, root)) or self._doomed.get(key) == flips or (
                smallest is not None and smallest[0] == flips and smallest[1] <= v):
            targets = []
            if settles:
                self._settled = flips
        elif self._no_targets.get(key) == stamp:
            targets = []
        else:
            hit = self._targets_memo.get(key)
            if hit is not None and hit[0] == stamp:
                targets = hit[1]
            elif self.fair:
                targets = get_targets(tree, p, True, self.strategies)
            else:
                targets, doomed, headroom = classic_search_headroom(tree, p)
                if doomed:
                    self._doomed[key] = flips
                    if settles:
                        self._settled = flips
                    if one is not None and (smallest is None or smallest[0] != flips or v < smallest[1]):
                        self._doomed_from[one] = (flips, v)
                    if one is not None and headroom is not None:
                        rf = (root, one[1])
                        self._headroom[one] = (flips, self._released.get(rf, 0), headroom.available,
                                               headroom.root_free, self._within.get(rf, 0),
                                               self._within.get((*rf, cq.name), 0))
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
                    self._add_in_call(tree, cq, reserve)
            return
        if any(t.workload.name in victims for t in targets):
            return  # overlapping targets with an earlier preemptor in this call: wait
        if self._place(state, h.wl, a, self._without(state, targets, promised)) is None:
            # Kueue decides on quota only; the simulator also needs the pods to fit on the nodes
            # the victims free, otherwise the eviction would be wasted and the victim retake it.
            self._parked.add(h.wl, node=True)
            return
        self._waiting[h.wl] = now
        self._changed.add(h.wl)
        new: list[Decision] = []
        for t in sorted(targets, key=lambda t: t.workload.name):
            victims.add(t.workload.name)
            new.extend(self._preempt(state, t, p, tree))
        decisions.extend(new)
        if new:
            decisions.append(preemption_note(h.wl, cq.name, [t.workload.name for t in targets]))
        self._add_in_call(tree, cq, a.usage)

    def _short_of(self, one: tuple, v: int, root: str) -> bool:
        """Whether a one-fr preemptor asking for ``v`` is doomed by the headroom of an earlier
        search of its key (``classic_search_headroom``): no node of the tree started borrowing
        since, and either less than ``v`` minus that headroom left the tree (``_released``), or,
        where the tree has no lending limit, the root's free quota then plus what left, less
        what other queues took within their nominal quota since (``_within``), is below ``v``."""
        hit = self._headroom.get(one)
        if hit is None or hit[0] != self._flips.get(root, 0):
            return False
        rf = (root, one[1])
        released = self._released.get(rf, 0) - hit[1]
        if hit[2] + released < v:
            return True
        if hit[3] is None:
            return False
        within = self._within
        took = within.get(rf, 0) - hit[4] - (within.get((*rf, one[0]), 0) - hit[5])
        return hit[3] + released - took < v

    def _held_over_nominal(self, one: tuple, v: int) -> bool:
        """Whether a one-fr preemptor asking for ``v`` would be refused quota by the tree as it
        stands, in the pattern of a queue at its nominal quota that may not borrow while it
        preempts. Its queue is under the root (or alone), borrowWithinCohort is Never, its usage
        is at or over nominal, and it has no candidate of its own (withinClusterQueue Never, or
        LowerPriority with nothing lower admitted). Then a search tries only with borrowing, and
        every candidate elsewhere is one reclaimed without borrowing (no ancestor below the root
        gives a hierarchical advantage), which that attempt may not take: with none valid it
        needs the request to fit now. If ``available`` is below it, that fails, and so does a
        Fit: the flavor assignment is NoFit or Preempt, the search is doomed, and with reclaim
        Any nothing is held back. The answer holds only for the tree as it stands (usage added
        later in the call keeps it so, but a lower-priority admission in the queue would not),
        so it is kept under the tree and its root's version (``_bump``), which every change of
        usage or admitted workloads moves."""
        tree = self._tree
        cq = None if tree is None else tree.cqs.get(one[0])
        if cq is None:
            return False
        version = self._version.get(self._roots[one[0]], 0)
        hit = self._over.get((one, v))
        if hit is not None and hit[0] is tree and hit[1] == version:
            return hit[2]
        out = self._over_nominal(cq, one, v)
        if len(self._over) >= 4096:  # kinds long gone: a bound, not a working set
            self._over.clear()
        self._over[(one, v)] = (tree, version, out)
        return out

    @staticmethod
    def _over_nominal(cq: QNode, one: tuple, v: int) -> bool:
        """``_held_over_nominal`` computed from the tree."""
        if cq.parent is not None and cq.parent.parent is not None:
            return False
        policy = cq.policy
        if policy.borrow_within_cohort not in (NEVER, "", None):
            return False
        fr = one[1]
        if cq.usage.get(fr, 0) < cq.nominal(fr):
            return False
        within = policy.within_cluster_queue
        if within not in (NEVER, "", None):
            if within != LOWER_PRIORITY:
                return False
            prio = one[2]
            if any(n and wp < prio and fr in used for (wp, used), (n, _) in cq.buckets.items()):
                return False
        return cq_available(cq, fr) < v

    def _note_one(self, state: ClusterState, cq: QNode, wl_id: str, one: tuple, v: int, root: str) -> None:
        """The head's kind asks for ``v`` of one flavor-resource in a queue with reclaim Any: its
        heads are settled while a doom of that request holds (``TwinSkipping._doomed_kind``),
        where its queue has one flavor for the resource, so that every head of the kind asks for
        ``v`` of ``one``'s fr. Noted once per kind: its key, request and root never change."""
        hid = self._head_id(state, cq, wl_id)
        if hid not in self._kind_one and _one_flavor(cq, one[1]):
            self._kind_one[hid] = (one, v, root)

    def _add_in_call(self, tree: QuotaTree, cq: QNode, usage: dict[FR, int]) -> None:
        """Usage this call adds to the snapshot (taken back at its end). Within a call usage only
        grows, so a doomed target search stays doomed (``classic_search``) until some node of the
        cohort tree goes from within nominal to borrowing: that bumps the root's flip count."""
        before = self._borrowing_marks(cq, usage)
        tree.add_usage(cq, usage)
        self._count_added(cq, usage, before)
        self._incall.append((cq, usage))
        self._bump(cq)

    @staticmethod
    def _borrowing_marks(cq: QNode, usage: dict[FR, int]) -> list[bool]:
        return [n.usage.get(fr, 0) <= n.subtree.get(fr, 0) for n in (cq, *cq.path_parent_to_root()) for fr in usage]

    def _count_added(self, cq: QNode, usage: dict[FR, int], before: list[bool]) -> None:
        """``usage`` was added at ``cq`` (``before``: the borrowing marks of its path then). A
        node of the path that started borrowing moves the root's flip count, which ends every
        doomed memo. Usage that leaves ``cq`` within its nominal quota is counted per root and
        fr, and per queue (``_short_of``): no search takes it until a node starts borrowing."""
        root = self._roots[cq.name]
        if before != self._borrowing_marks(cq, usage):
            self._flips[root] = self._flips.get(root, 0) + 1
        within = self._within
        for fr, v in usage.items():
            if v > 0 and cq.usage.get(fr, 0) <= cq.subtree.get(fr, 0):
                within[(root, fr)] = within.get((root, fr), 0) + v
                within[(root, fr, cq.name)] = within.get((root, fr, cq.name), 0) + v

    def _release(self, cq: QNode, usage: dict[FR, int]) -> None:
        """Usage left the tree at ``cq``: counted per root and fr (``_short_of``)."""
        root = self._roots[cq.name]
        released = self._released
        for fr, v in usage.items():
            if v > 0:
                released[(root, fr)] = released.get((root, fr), 0) + v

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
        reason = preemption_reason(p.name, p.priority, tree.cqs[p.cq], t.workload.priority, tree.cqs[t.workload.cq],
                                   t.reason, t.values)
        return [Preempt(tid, reason) for tid in sorted(state.running.get(victim.id, ()))
                if not state.allocations[tid].preempting]


def preemption_reason(preemptor: str, priority: int, cq: QNode, victim_priority: int, victim_cq: QNode,
                      rule: str, values: dict, paths: tuple[str, str] | None = None) -> Reason:
    """The reason a victim of ``preemptor`` (in ClusterQueue ``cq``) carries: Kueue's event text and
    the search's values (variant, allowBorrowing, lca) after the two workloads' priority and queue.
    ``paths``: the two queues' ``queue_path``, where the caller keeps them."""
    cq_path, victim_path = paths or (queue_path(cq), queue_path(victim_cq))
    detail = (f"Preempted to accommodate a workload (UID: {preemptor}) due to {_HUMAN.get(rule, rule)}; "
              f"preemptor path: {cq_path}; preemptee path: {victim_path}")
    return Reason("kueue", rule, preemptor, detail,
                  {"preemptorPriority": priority, "victimPriority": victim_priority,
                   "preemptorClusterQueue": cq.name, "victimClusterQueue": victim_cq.name, **values})


def preemption_note(preemptor: str, cq: str, targets: list[str]) -> Note:
    """The note a preemptor's targets are announced with."""
    return Note("kueue-preemption", preemptor, f"{preemptor} in {cq} preempts {len(targets)} workload(s) to fit",
                {"targets": sorted(targets)})


def _one_flavor(cq: QNode, fr: FR) -> bool:
    """Whether the queue has one flavor for ``fr``'s resource, so a head asking for that resource
    alone is always assigned ``fr``."""
    return any(fr[1] in resources and tuple(flavors) == (fr[0],) for resources, flavors in cq.groups)


def queue_path(n: QNode) -> str:
    """``/cohort/.../queue``: a queue's place in its tree, as Kueue's preemption events name it."""
    parts = []
    cur: QNode | None = n
    while cur is not None:
        parts.append(cur.name)
        cur = cur.parent
    return "/" + "/".join(reversed(parts))
