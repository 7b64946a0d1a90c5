"""Heads whose twin decided nothing: a head with the same key (everything ``_process`` reads
of it besides the tree, node promises and victims) processed since the last change that could
matter is parked as its twin was, without evaluation; whole rounds of such heads are taken at once,
for every queue together or, in classic order, for one cohort tree while the others are evaluated.

Within a call usage only grows, so some no-ops hold past later changes of the tree (``_settles``):
a NoFit flavor assignment for the rest of the call, and a doomed classic target search (with
reclaim Any, so it holds no quota back) until a node of the tree starts borrowing, as
``preemption.classic_search`` proves. Their twins are skipped though the tree's version moved.
A kind asking for one flavor-resource whose search was doomed by a headroom that still holds is
settled the same way, in any later call, and so is one asking for more than a request doomed
earlier in the call, or one whose queue stands at its nominal quota unable to borrow while it
preempts (``_doomed_kind``, ``HeadAdmission._held_over_nominal``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from makeway.core.decisions import Decision
from makeway.core.resources import Res
from makeway.core.state import ClusterState
from makeway.policies.kueue.heads import _Head
from makeway.policies.kueue.parked import NODE, QUOTA
from makeway.policies.kueue.pending import runs
from makeway.policies.kueue.quota import QNode, QuotaTree


class TwinSkipping:
    """Mixin of ``KueueModel``: the per-call memo of no-op outcomes (``_outcomes``) and its use."""

    def _head_key(self, state: ClusterState, cq: QNode, wl_id: str) -> tuple:
        """Everything ``_process`` reads of a head besides the tree, the node promises and the
        victims: its queue, pod-set totals (quota), pods (placement), priority and (only where the
        policy compares it) age."""
        hit = self._hkeys.get(wl_id)
        if hit is not None and hit[0][0] == cq.name:
            return hit[0]
        shape = self._shape(state, wl_id)
        wl = state.workloads[wl_id]
        # node placement reads pods, not totals: 2 pods of 1 cpu and 1 pod of 2 cpu are not twins
        pods = tuple((g.count, tuple(sorted(g.resources.items()))) for g in wl.groups)
        ws = wl.settings or {}
        key = (cq.name, shape, pods, self.priority(wl),
               wl.submit if cq.policy.within_cluster_queue == "LowerOrNewerEqualPriority" else None,
               repr(ws.get("tolerations")), ws.get("namespace"))
        # the int id of the key (one per distinct key, never reused) keys the outcome memo: a
        # lookup then hashes an int, not the nested key
        self._hkeys[wl_id] = (key, self._hid.setdefault(key, len(self._hid)))
        return key

    def _head_id(self, state: ClusterState, cq: QNode, wl_id: str) -> int:
        hit = self._hkeys.get(wl_id)
        if hit is None or hit[0][0] != cq.name:
            self._head_key(state, cq, wl_id)
            hit = self._hkeys[wl_id]
        return hit[1]

    def _known_noop(self, state: ClusterState, cq: QNode | None, wl_id: str, hid: int | None = None,
                    local: bool = False) -> int | None:
        """For a head whose twin (same key) was processed since the last change that could matter
        and changed nothing: whether it was parked and why (``Parked.kind``). None when the
        outcome is not known. ``hid``: the head's key id when the caller has it (a pending entry
        carries it). ``local``: an outcome stamped with the global version counts as not known
        (``_skip_known_trees``)."""
        if cq is None or wl_id in self._waiting or not self.caches:
            return None
        if hid is None:
            hid = self._head_id(state, cq, wl_id)
        hit = self._outcomes.get(hid)
        if hit is None:
            return self._settled_kind(cq, hid)
        root_v, nodes_v, global_v, parked = hit
        if root_v != self._version.get(self._roots[cq.name], 0):
            return self._settled_kind(cq, hid)
        if nodes_v is not None and nodes_v != self._nversion or global_v is not None and (
                local or global_v != self._gversion):
            return self._settled_kind(cq, hid)
        return parked

    def _settled_kind(self, cq: QNode, hid: int) -> int | None:
        """How a head settled earlier in this call is parked (``_settles``), or None."""
        hit = self._settles.get(hid)
        if hit is None or hit[0] >= 0 and hit[0] != self._flips.get(self._roots[cq.name], 0):
            return self._doomed_kind(hid)
        return hit[1]

    def _doomed_kind(self, hid: int) -> int | None:
        """QUOTA for a kind asking for one flavor-resource (``_kind_one``) whose doom holds: by a
        headroom (``HeadAdmission._short_of``), or by a search in this call, since the last flip,
        doomed for no more of it (``_doomed_from``), or by the tree as it stands
        (``HeadAdmission._held_over_nominal``, not kept), as evaluating a head would find.
        Checked when asked: a search of its flavor-resource later in the call, after a node
        started borrowing, may give a new headroom that settles it again. Its heads would be refused
        quota (NoFit, or a doomed search that holds nothing back; a Fit needs more than the
        doomed request too), so they are parked unevaluated, as twins of a settled head are."""
        hit = self._kind_one.get(hid)
        if hit is None:
            return None
        one, v, root = hit
        flips = self._flips.get(root, 0)
        smallest = self._doomed_from.get(one)
        if (smallest is None or smallest[0] != flips or smallest[1] > v) and not self._short_of(one, v, root):
            return QUOTA if self._held_over_nominal(one, v) else None
        self._settles[hid] = (flips, QUOTA)
        return QUOTA

    def _carry_outcomes(self, state: ClusterState) -> None:
        """Keep the no-op outcomes of earlier calls. One that did not look at the nodes read only
        its cohort tree (quotas, usage, admitted workloads), whose root version moves with every
        change of it, in-call usage taken back included; a call starts with no node promises and
        no victims (victims come with in-call usage, so their root's version moved). One that
        placed pods also read the nodes: the node and global versions are bumped when they changed."""
        nodes = (id(state), state.alloc_epoch, state.topology_epoch)
        if nodes != self._nodes_seen:
            self._nodes_seen = nodes
            self._gversion += 1
            self._nversion += 1

    def _process(self, state: ClusterState, tree: QuotaTree, h: _Head, now: float, decisions: list[Decision],
                 promised: dict[str, Res], victims: set[str]) -> None:
        # A twin's no-op outcome is valid at this very moment (the memo's stamps say nothing it reads
        # changed), so the head would decide nothing: park it as the twin was parked, unevaluated.
        known = self._known_noop(state, h.cq, h.wl)
        if known is not None:
            if known:
                self._parked.add(h.wl, known == NODE)
            return
        root = self._roots[h.cq.name]
        before = (len(decisions), self._version.get(root, 0), self._gversion, h.wl in self._waiting)
        self._probed_nodes = False
        self._settled = None
        self._process_head(state, tree, h, now, decisions, promised, victims)
        if not before[3] and before[:3] == (len(decisions), self._version.get(root, 0), self._gversion):
            if self._settled is not None:
                self._settles[self._head_id(state, h.cq, h.wl)] = (self._settled, self._parked.kind(h.wl))
            nodes_v = global_v = None
            if self._probed_nodes:
                groups = state.workloads[h.wl].groups
                if len(groups) == 1 and groups[0].count == 1:
                    nodes_v = self._nversion
                else:
                    global_v = before[2]
            self._outcomes[self._head_id(state, h.cq, h.wl)] = (before[1], nodes_v, global_v, self._parked.kind(h.wl))

    def _first_unknown(self, state: ClusterState, cq: QNode, lst: list[tuple], i: int,
                       groups: dict[tuple, list[tuple]], local: bool = False) -> tuple[int, dict[tuple, int]] | None:
        """The position of the first entry from ``i`` on whose outcome is not known (``len(lst)``
        if none), and the known outcome of every kind of entry before it, read once per kind
        (head id, waiting mark) instead of once per run: the entries of a kind are twins. Entries
        from ``i`` on were not processed in this call, so their waiting marks are current, and
        they are in ``lst`` (the queue's entries less those parked when the call began) exactly
        when they are not parked now. None when an unknown kind's first such entry is not
        found within a few steps (the caller then walks the runs). ``local``: outcomes stamped
        with the global version count as unknown (``_skip_known_trees``)."""
        first = len(lst)
        known_of: dict[tuple, int] = {}
        head = lst[i]
        parked = self._parked
        # ``_known_noop`` inlined (the caller runs with the caches on): no entry of a kind at or
        # after the head waits (they are current), and a kind's outcome is one per head id
        outcomes, root_v = self._outcomes, self._version.get(self._roots[cq.name], 0)
        settles, flips = self._settles, self._flips.get(self._roots[cq.name], 0)
        ones = self._kind_one
        nodes_v, global_v = self._nversion, self._gversion
        cursors, q = self._cursors, cq.name
        for kind, ents in groups.items():
            if ents[-1] < head:
                continue
            if not kind[1]:
                hit = outcomes.get(kind[0])
                if hit is not None and hit[0] == root_v and (hit[1] is None or hit[1] == nodes_v) \
                        and (hit[2] is None or hit[2] == global_v and not local):
                    known_of[kind] = hit[3]
                    continue
                hit = settles.get(kind[0]) if settles else None
                if hit is not None and (hit[0] < 0 or hit[0] == flips):
                    known_of[kind] = hit[1]
                    continue
                if kind[0] in ones and self._doomed_kind(kind[0]) is not None:
                    known_of[kind] = QUOTA
                    continue
            # the kind's first unparked entry from the head on and its place in ``lst`` stay
            # the same while the head has not passed it (nothing after the head is parked or
            # moved within a call): kept per call in ``cursors``
            hit = cursors.get((q, kind))
            if hit is not None and hit[0] >= head:
                pos = hit[1]
            else:
                k = bisect_left(ents, head)
                end = min(len(ents), k + 8)
                while k < end and ents[k][3] in parked:
                    k += 1
                if k == end:
                    if end < len(ents):
                        return None
                    continue  # every entry of this kind from the head on is parked
                pos = bisect_left(lst, ents[k])
                cursors[(q, kind)] = (ents[k], pos)
            if pos < first:
                first = pos
        return first, known_of

    def _skip_known(self, state: ClusterState, tree: QuotaTree, queues: dict[str, list[tuple]],
                    at: dict[str, int], ends: dict[str, list[int]]) -> None:
        """Take the rounds in which every head is a twin of a head that decided nothing under the
        current stamps, at once. Such a round changes nothing but parking, so the next round sees
        the same stamps: each queue can go on through its runs of known twins until one queue
        reaches a head that must be evaluated. Round by round, the loop would decide the same."""
        # Heads first: one head that must be evaluated ends the skip, so no queue is walked for
        # nothing (with runs of length 1 the walk would visit every known head of every queue).
        live = []
        for q, lst in queues.items():
            i = at[q]
            if i >= len(lst):
                continue
            if self._strict(state, q) or self._known_noop(state, tree.cqs[q], lst[i][3], lst[i][4]) is None:
                return
            live.append(q)
        plan = []
        step = None
        kinds: dict[str, dict[tuple, int]] = {}
        for q in live:
            lst = queues[q]
            i, n = at[q], len(lst)
            cq = tree.cqs[q]
            found = self._first_unknown(state, cq, lst, i, self._index.groups[q])
            if found is not None:
                u, kinds[q] = found
                if u < n:
                    step = u - i if step is None else min(step, u - i)
                continue
            run_ends = ends.get(q)
            if run_ends is None:
                run_ends = ends[q] = runs(lst)
            # past the smallest step found so far, no head can lower it or be taken
            limit = n if step is None else min(n, i + step)
            j = i
            while j < limit:
                known = self._known_noop(state, cq, lst[j][3], lst[j][4])
                if known is None:
                    break
                e = run_ends[bisect_right(run_ends, j)]
                plan.append((q, j, e, known))
                j = e
            if j < limit:
                step = j - i if step is None else min(step, j - i)
        unparked = self._walked_unparked
        for q, j, e, known in plan:
            stop = e if step is None else min(e, at[q] + step)
            if not known and j < stop:
                unparked[q].update(x[3] for x in queues[q][j:stop])
            elif known == NODE:
                self._parked.add_nodes(q, [x[3] for x in queues[q][j:stop]])
        for q, known_of in kinds.items():
            self._take_known(queues[q], q, at[q], step, known_of)
        for q, lst in queues.items():
            at[q] = len(lst) if step is None else min(len(lst), at[q] + step)

    def _take_known(self, lst: list[tuple], q: str, i: int, step: int | None, known_of: dict[tuple, int]) -> int:
        """Take ``step`` rounds (None: all) of a queue's known twins from ``i`` on; where its
        next entry is. The runs taken are parked by the queue's mark at the call's end
        (``Parked``): only the ones left unparked are named."""
        stop = len(lst) if step is None else min(len(lst), i + step)
        if not all(known_of.values()):
            self._walked_unparked[q].update(x[3] for x in lst[i:stop] if not known_of[x[4], x[5]])
        if NODE in known_of.values():
            self._parked.add_nodes(q, [x[3] for x in lst[i:stop] if known_of[x[4], x[5]] == NODE])
        return stop

    def _skip_known_trees(self, state: ClusterState, tree: QuotaTree, queues: dict[str, list[tuple]],
                          at: dict[str, int], trees: dict[str, list[str]], rnd: int, resume: dict[str, int]) -> None:
        """``_skip_known`` per cohort tree, in classic order: a tree whose heads are all known
        twins for the next ``s`` rounds takes those rounds at once and sits them out (``resume``:
        the round its queues take heads again), while other trees go on round by round.

        Nothing processed in another tree moves this tree's root version, and node promises only
        grow within a call, so a no-room outcome holds (node version); only outcomes stamped
        with the global version, which another tree's admission moves, are not skipped this way.
        A no-op's place in a round then does not matter: the classic order is total, so the
        other heads keep their order, and each tree's first head that must be evaluated is still
        taken in its own round. StrictFIFO queues and waiting preemptors are never skipped."""
        for root, qs in trees.items():
            if resume.get(root, 0) > rnd:
                continue
            live = []
            ok = True
            for q in qs:  # heads first: one that must be evaluated ends it cheaply
                i, lst = at[q], queues[q]
                if i >= len(lst):
                    continue
                if self._strict(state, q) or self._known_noop(state, tree.cqs[q], lst[i][3], lst[i][4], local=True) is None:
                    ok = False
                    break
                live.append(q)
            if not ok or not live:
                continue
            step = None
            kinds: dict[str, dict[tuple, int]] = {}
            for q in live:
                found = self._first_unknown(state, tree.cqs[q], queues[q], at[q], self._index.groups[q], local=True)
                if found is None:
                    ok = False
                    break
                u, kinds[q] = found
                if u < len(queues[q]):
                    step = u - at[q] if step is None else min(step, u - at[q])
            if not ok or step == 0:
                continue
            for q in live:
                at[q] = self._take_known(queues[q], q, at[q], step, kinds[q])
            if step is not None:
                resume[root] = rnd + step
