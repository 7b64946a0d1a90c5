"""Read-only reporting of the Kueue model: queue order, pending reasons, nominal quotas and
fair-sharing shares, on a snapshot of its own (the model's tree is never touched).
"""

from __future__ import annotations

from heapq import merge
from typing import Any

from makeway.core.state import ClusterState
from makeway.policies.kueue.assign import FIT, NOFIT, assign_flavors
from makeway.policies.kueue.drs import dominant_resource_share
from makeway.policies.kueue.quota import QuotaTree
from makeway.policies.kueue.setup import specs_from_queues


class Explain:
    """Mixin of ``KueueModel``: what a report or ``makeway explain`` reads."""

    def queue_order(self, state: ClusterState, queue: str, now: float) -> list[str]:
        """BestEffortFIFO as admission walks it: preemptors waiting for victims first, then
        priority (priority classes included), then creation time."""
        # the index is exact while every start since the snapshot was this model's own
        if self.caches and self._kept(state):
            return self._indexed_order(state, queue)
        wls = state.workloads
        keys = [self._order_key(wls[w]) for w in state.pending if wls[w].queue == queue]
        return [k[-1] for k in sorted(keys)]

    def _order_key(self, wl) -> tuple:
        return (not (self.prioritize_preemptors and wl.id in self._waiting), -self.priority(wl), wl.submit, wl.id)

    def _indexed_order(self, state: ClusterState, queue: str) -> list[str]:
        """``queue_order`` read from the pending index, brought up to date first (its entries
        start with the same key): the fully pending workloads in order, merged with the few
        that have tasks running too, instead of sorting the whole backlog at every read."""
        index = self._index
        index.sync(state, lambda w: self._entry(state, w), self._changed)
        self._changed = set()
        entries = index.order.get(queue, [])
        wls = state.workloads
        blocked = sorted(self._order_key(wls[w]) for w in index.blocked if wls[w].queue == queue)
        return [e[3] for e in (merge(entries, blocked) if blocked else entries)]

    def _explain_tree(self, state: ClusterState) -> QuotaTree | None:
        """A fresh snapshot of admitted usage (the model's own tree is left untouched), kept
        while the allocations and the config are unchanged. Eviction marks are not in the stamp:
        an evicted workload keeps its usage, and only usage is read here (flavor assignment and
        shares; no target search), so counting the marks at every call would buy nothing."""
        if self._specs is None:
            return None
        if self._current(state) or self._refresh(state):
            return self._tree
        stamp = (id(state), state.alloc_epoch, state.config_epoch, id(self._specs))
        hit = self._explained
        if hit is not None and hit[0] == stamp:
            return hit[1]
        cohorts, cqs = self._specs
        tree = QuotaTree(cohorts, cqs)
        running, workloads = state.running, state.workloads
        for wl_id in self._running_ids(state):
            if running.get(wl_id) and workloads[wl_id].queue in tree.cqs:
                tree.add_workload(self._admitted(state, wl_id))
        self._explained = (stamp, tree)
        return tree

    def _running_ids(self, state: ClusterState) -> list[str]:
        """Every workload that may have running tasks, without walking every workload that ever
        ran (``state.running`` keeps them): while every start since the model's snapshot was
        its own, the snapshot's entries and the workloads it started since; else the owners of
        the current allocations. Usage sums do not depend on the order they are added in."""
        if self._kept(state):
            ids: dict[str, None] = {}
            for entries in self._entries.values():
                ids.update(dict.fromkeys(entries))
            for started in self._moved.values():
                ids.update(dict.fromkeys(started))
            return list(ids)
        return list(dict.fromkeys(a.workload for a in state.allocations.values()))

    def _current(self, state: ClusterState) -> bool:
        """Whether the model's own snapshot is the state's admitted usage as it is now (as after a
        call that decided nothing, the last one of an instant): it was built at this allocation
        epoch, no usage of a call is in it and nothing waits to be re-read. Its usage then equals
        a fresh build's, and it is only read here."""
        return (self.caches and self._kept(state) and not self._incall and not self._touched and not self._watch
                and self._alloc_seen == (id(state), state.alloc_epoch))

    def _refresh(self, state: ClusterState) -> bool:
        """Bring the model's own snapshot up to date for a read, as the next call's first step
        (``build_tree``) would, instead of building a second snapshot of every admitted workload:
        a reason round after each instant that started something would otherwise cost the whole
        running set. Only when every decision of the last call is applied (its starts moved the
        state's start sequence as expected, each preemption ended or marked its allocation), so
        the update reads what that call left to be read; whether it then is current."""
        if not (self.caches and self._kept(state) and not self._incall):
            return False
        allocs = state.allocations
        if any(tid in allocs and not allocs[tid].preempting for _, tid in self._watch):
            return False
        self.build_tree(state)
        return self._current(state)

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

    def _reason_assignment(self, state: ClusterState, cq, pod_sets: list[dict[str, int]]):
        """``assign_flavors`` as a pending reason asks for it (no excluded flavors), memoised by
        what it reads: the request and the usage of the queue and its ancestors on the queue's
        flavor-resources. Quotas, policies and flavor groups come from the specs, the same in
        every tree built from them, so the memo lives as long as the specs object."""
        memo = self._reason_memo
        if memo is None or memo[0] is not self._specs:
            memo = self._reason_memo = (self._specs, {})
        frs = [(f, r) for resources, flavors in cq.groups for f in flavors for r in resources]
        path = [cq, *cq.path_parent_to_root()]
        key = (cq.name, tuple(tuple(sorted(ps.items())) for ps in pod_sets),
               tuple([n.usage.get(fr, 0) for n in path for fr in frs]))
        a = memo[1].get(key)
        if a is None:
            if len(memo[1]) >= 4096:
                memo[1].clear()
            a = memo[1][key] = assign_flavors(cq, pod_sets, self._covered, self.fair,
                                              (state.queues[cq.name].settings or {}).get("flavorFungibility"))
        return a

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """Kueue's inadmissible reasons: the flavor assignment against the quota tree (NoFit:
        insufficient quota; Preempt: quota held by others, a preemptor waiting for its victims or
        without targets); a workload that fits its quota is left to the generic rules."""
        wl = state.workloads[wl_id]
        waiting = wl_id in self._waiting
        # Apart from a waiting preemptor's victims, the answer is read from the workload's queue
        # and pod-set totals and from the admitted usage, the same at one allocation epoch:
        # twins asked at one epoch (a reason round asks every queue's first 32) share one.
        stamp = (id(state), state.alloc_epoch, state.config_epoch, id(self._specs))
        memo = self._pending_memo
        if memo[0] != stamp:
            memo = self._pending_memo = (stamp, {})
        key = (wl.queue, self._shape(state, wl_id))
        if not waiting and self.caches and key in memo[1]:
            hit = memo[1][key]
            return hit if hit is None else (hit[0], hit[1], dict(hit[2]))
        found = self._pending_reason(state, wl_id, wl, waiting)
        if not waiting:
            memo[1][key] = found
            return found if found is None else (found[0], found[1], dict(found[2]))
        return found

    def _pending_reason(self, state: ClusterState, wl_id: str, wl, waiting: bool) -> tuple[str, str, dict] | None:
        tree = self._explain_tree(state)
        cq = None if tree is None else tree.cqs.get(wl.queue)
        if cq is None:
            return ("quota", f"queue {wl.queue} is not a ClusterQueue", {"blocking": wl.queue})
        pod_sets = self._pod_sets(state, wl_id)
        a = self._reason_assignment(state, cq, pod_sets)
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
        if waiting:
            victims = sorted(t for t, al in state.allocations.items() if al.preempting)
            if victims:
                return ("preempting", f"preempting since {self._waiting[wl_id]:g}: waiting for "
                                      f"{len(victims)} evicted allocation(s) to release their quota",
                        {**values, "blocking": None, "since": self._waiting[wl_id], "victims": victims})
        return ("quota", f"ClusterQueue {cq.name} needs quota held by other workloads and none can be "
                         "preempted for it now", values)
