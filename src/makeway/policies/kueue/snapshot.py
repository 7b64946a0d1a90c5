"""Kueue's snapshot kept current across calls: the quota tree with the usage of every admitted
workload, re-read only for the ClusterQueues that may have changed, plus the stamps (per-root
admitted-set signature and version) that every cross-call memo of the model is checked against.
"""

from __future__ import annotations

from makeway.core.decisions import Decision, Preempt, Start
from makeway.core.state import ClusterState
from makeway.policies.kueue.quota import Admitted, FR, QNode, QuotaTree, units


class Snapshot:
    """Mixin of ``KueueModel``: the snapshot and its stamps (attributes set in ``KueueModel.__init__``)."""

    def _flavor(self, state: ClusterState, node: str) -> str:
        return state.nodes[node].labels.get(self.flavor_label, self.default_flavor)

    def _kept(self, state: ClusterState) -> bool:
        """Whether the kept snapshot is this state's and every start since it was read was this
        model's own (the state's start sequence is where the model expects it): what it and the
        pending index say is then exact, once brought up to date."""
        return self._tree is not None and self._bound is state and getattr(state, "_seq", None) == self._seq_expect

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
        full = not self._kept(state)
        if full:
            cohorts, cqs = self._specs  # type: ignore[misc]
            tree = QuotaTree(cohorts, cqs)
            if state is not self._bound:  # per-workload caches are keyed by id within one state
                self._prio.clear()
                self._shapes.clear()
                self._hkeys.clear()
                self._akeys.clear()
                self._adm_cache.clear()
                self._nodes_of.clear()
            self._tree, self._bound = tree, state
            self._topo = {}
            self._outcomes = {}  # stamped by versions of the tree just dropped
            self._headroom.clear()
            self._kind_one.clear()
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
                    self._moved.setdefault(q, set()).add(a.workload)
            if self._alloc_seen == (id(state), state.alloc_epoch):  # no start or end: counts are as they were
                dirty = [q for q in tree.cqs if q in self._touched] if self._touched else []
            else:
                dirty = [q for q in tree.cqs
                         if q in self._touched or len(allocs_by_q.get(q, ())) != self._counts.get(q, 0)]
        self._alloc_seen = (id(state), state.alloc_epoch)
        # the workloads that started or ended a task since the last snapshot, by queue (None: the
        # log was trimmed past the last read, so every entry of a dirty queue is looked at)
        logged = state.run_log.since(self._run_pos) if not full else None
        self._run_pos = state.run_log.position
        ran: dict[str, dict[str, None]] | None = None
        if logged is not None and dirty:
            ran = {}
            wls = state.workloads
            for w in logged:
                q = wls[w].queue
                got = ran.get(q)
                if got is None:
                    ran[q] = {w: None}
                else:
                    got[w] = None
        # Any allocation that ended since the last snapshot released quota in its cohort tree and
        # room on its node, even one admitted and finished between two calls (it never appeared
        # in the entries diffed below): the state's per-queue freed epochs say which trees.
        freed = (id(state), state.freed_epoch)
        nodes_freed = self._freed_seen is not None and freed != self._freed_seen
        everything = nodes_freed and self._freed_seen[0] != freed[0]  # another state
        released: set[str] = set()  # roots whose quota was released
        if nodes_freed and not everything:
            epochs = state.queue_freed_epoch
            for root, seen in self._root_freed.items():
                e = epochs.get(root)
                if e is None:  # a root the state does not know of: every tree, to be safe
                    everything = True
                elif e != seen:
                    released.add(root)
        self._root_freed = {r: state.queue_freed_epoch.get(r) for r in set(self._roots.values())}
        self._freed_seen = freed
        running = state.running
        moved = self._moved
        for q in dirty:
            old = self._entries[q]
            moved_q = moved.pop(q, ())
            if self._topo.get(q) != state.topology_epoch:  # new tree or nodes: flavors re-read
                self._topo[q] = state.topology_epoch
                ids = list(old)
                ids.extend(state.allocations[t].workload for t in state.queue_allocs.get(q, ()))
            else:
                # Between two calls of a kept tree a queue's running workloads change only by this
                # model's starts and marks (``_moved``), ends (the running count drops) and
                # priority changes (``_stale``); every other entry would be read back equal.
                if ran is None:
                    ids = [w for w, (_, n) in old.items() if len(running.get(w, ())) != n]
                else:
                    ids = [w for w in ran.get(q, ()) if w in old and len(running.get(w, ())) != old[w][1]]
                ids.extend(moved_q)
                if self._stale:
                    ids.extend(w for w in self._stale if w in old)
            if self._stale:
                self._stale.difference_update(ids)
            h = self._sig.get(self._roots[q], 0)
            changed = False
            for wl_id in dict.fromkeys(ids):
                prev = old.get(wl_id)
                cur = (self._admitted(state, wl_id), len(running[wl_id])) if running.get(wl_id) else None
                if prev is not None:
                    adm, n = prev
                    if cur is None or cur[1] < n or (cur[0].evicted and not adm.evicted):
                        released.add(self._roots[q])  # quota was released: the tree's inadmissible workloads are requeued
                    # An equal entry would leave the tree as it is (candidate order and iteration
                    # are by total keys), so the one already registered is kept.
                    if cur is not None and cur == prev:
                        continue
                    tree.remove_workload(adm)
                    self._release(tree.cqs[q], adm.usage)
                    del old[wl_id]
                    # The signature of a root is a hash of its set of (workload, evicted): equal
                    # exactly when the set is, as a freshly built snapshot would compare it.
                    h -= hash((wl_id, adm.evicted))
                    changed = True
                if cur is not None:
                    marks = self._borrowing_marks(tree.cqs[q], cur[0].usage)
                    tree.add_workload(cur[0])
                    self._count_added(tree.cqs[q], cur[0].usage, marks)
                    old[wl_id] = cur
                    h += hash((wl_id, cur[0].evicted))
                    changed = True
            self._sig[self._roots[q]] = h & 0xFFFFFFFFFFFFFFFF
            if changed:
                self._bump(tree.cqs[q])
            self._counts[q] = len(state.queue_allocs.get(q, ()))
        if everything:
            self._parked.clear()
        else:
            if released:
                roots = self._roots
                self._parked.release_queues({q for q in tree.cqs if roots[q] in released})
            if nodes_freed:
                self._parked.release_nodes()
        self._touched = set()
        self._watch = []
        return tree

    def _admitted(self, state: ClusterState, wl_id: str) -> Admitted:
        """A running workload as the quota tree sees it, kept while what it is read from is the
        same: its set of running allocations (start sequence numbers only grow, so the count and
        the newest one's number change whenever the set does), their eviction marks, its
        admission time and the node topology (flavors). Priority and specs changes drop it."""
        tasks = state.running[wl_id]
        if not tasks:
            return self._admitted_fresh(state, wl_id)
        allocs = state.allocations
        sig = (len(tasks), allocs[next(reversed(tasks))].seq, any(allocs[t].preempting for t in tasks),
               self._admitted_at.get(wl_id), state.topology_epoch)
        hit = self._adm_cache.get(wl_id)
        if hit is not None and hit[0] == sig:
            return hit[1]
        adm = self._admitted_fresh(state, wl_id)
        self._adm_cache[wl_id] = (sig, adm)
        return adm

    def _admitted_fresh(self, state: ClusterState, wl_id: str) -> Admitted:
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
            self._release(cq, usage)
            self._bump(cq)
        self._incall = []
        starts = 0
        for d in decisions:
            if isinstance(d, Start):
                starts += 1
                wl_id = d.task.rsplit("/", 2)[0]
                q = state.workloads[wl_id].queue
                self._touched.add(q)
                self._moved.setdefault(q, set()).add(wl_id)
                self._changed.add(wl_id)
            elif isinstance(d, Preempt):
                a = state.allocations.get(d.allocation)
                if a is not None:
                    self._watch.append((a.queue, d.allocation))
        self._seq_expect = getattr(state, "_seq", None)
        if self._seq_expect is not None:
            self._seq_expect += starts

    def _bump(self, cq: QNode) -> None:
        self._gversion += 1
        root = cq.root().name
        self._version[root] = self._version.get(root, 0) + 1
