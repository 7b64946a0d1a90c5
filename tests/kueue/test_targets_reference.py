"""Classic target selection against a plain re-statement of it (hypothesis).

``preemption.classic_targets`` reads each queue's workloads from a list kept in candidate order,
collects candidates in one inlined loop with a priority cut, gives up early on two bounds and
searches on usage alone. The reference below walks every admitted workload, classifies and sorts
them, and searches by removing and re-adding workloads, with no bound: on random cohort trees and
admitted sets both must pick the same victims, with the same reasons, and leave the tree as found.
"""

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from makeway.policies.kueue import preemption as P

from makeway.policies.kueue.preemption import (HIERARCHICAL, Headroom, RECLAIM_WHILE_BORROWING, RECLAIM_WITHOUT_BORROWING,
                                               WITHIN_CQ, _VARIANT_REASON, Preemptor, _borrow_within_cohort_allowed,
                                               _valid, classic_search, classic_search_headroom, classic_targets,
                                               ordering_key, satisfies_policy, workload_fits)
from makeway.policies.kueue.quota import (NEVER, Admitted, CohortSpec, CQSpec, FlavorQuota, Policy, QuotaTree,
                                          cq_available, quantities_fit_in_quota, within_nominal_in)

FR = ("f", "cpu")


class _C:
    def __init__(self, wl, variant, lca):
        self.wl, self.variant, self.lca = wl, variant, lca


def _classify(p, cq, wl, advantage):
    if not wl.uses_any(p.frs_need):
        return None
    if wl.cq == cq.name:
        return WITHIN_CQ if satisfies_policy(p, wl, cq.policy.within_cluster_queue) else None
    if not satisfies_policy(p, wl, cq.policy.reclaim_within_cohort):
        return None
    if advantage:
        return HIERARCHICAL
    if not _borrow_within_cohort_allowed(cq):
        return RECLAIM_WITHOUT_BORROWING
    t = cq.policy.max_priority_threshold
    if wl.priority >= p.priority or (t is not None and wl.priority > t):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _collect(p, cq, current, lca, skip, advantage, out):
    for child in current.child_cohorts:
        if child is not skip and not within_nominal_in(child, p.frs_need):
            _collect(p, cq, child, lca, skip, advantage, out)
    for child in current.child_cqs:
        if child is not cq and not within_nominal_in(child, p.frs_need):
            for wl in child.workloads.values():
                v = _classify(p, cq, wl, advantage)
                if v is not None:
                    out.append(_C(wl, v, lca))


def reference_targets(tree, p):
    cq = tree.cqs[p.cq]
    same, hier, prio = [], [], []
    if cq.policy.within_cluster_queue not in (NEVER, "", None):
        same = [_C(wl, WITHIN_CQ, None) for wl in cq.workloads.values() if _classify(p, cq, wl, False) is not None]
    if cq.parent is not None and cq.policy.reclaim_within_cohort not in (NEVER, "", None):
        advantage, remaining = quantities_fit_in_quota(cq, p.requests)
        prev = None
        for anc in cq.path_parent_to_root():
            _collect(p, cq, anc, anc, prev, advantage, hier if advantage else prio)
            fits, remaining = quantities_fit_in_quota(anc, remaining)
            advantage, prev = advantage or fits, anc
    for lst in (hier, prio, same):
        lst.sort(key=lambda c: ordering_key(c.wl, p.cq))
    seq = [c for lst in (hier, prio, same) for c in lst if c.wl.evicted] + \
          [c for lst in (hier, prio, same) for c in lst if not c.wl.evicted]
    forbidden = not _borrow_within_cohort_allowed(cq)
    under = all(cq.usage.get(fr, 0) < cq.nominal(fr) for fr in p.frs_need)
    if (not hier and not prio) or (forbidden and not under):
        attempts = [True]
    elif forbidden and not hier:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for allow in attempts:
        taken = []
        for c in seq:
            if not _valid(tree, p, c, allow):
                continue
            tree.remove_workload(c.wl)
            taken.append(c)
            if workload_fits(tree, p, allow):
                kept = list(taken)
                for c2 in reversed(taken[:-1]):
                    tree.add_workload(c2.wl)
                    if workload_fits(tree, p, allow):
                        kept.remove(c2)
                    else:
                        tree.remove_workload(c2.wl)
                for c2 in kept:
                    tree.add_workload(c2.wl)
                return [(c2.wl.name, _VARIANT_REASON[c2.variant], c2.variant, allow, c2.lca.name if c2.lca else None)
                        for c2 in kept]
        for c in taken:
            tree.add_workload(c.wl)
    return []


@st.composite
def trees(draw):
    pol = st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Any", "Never"])
    cohorts = [CohortSpec("org", None, quotas={FR: FlavorQuota(draw(st.integers(0, 4)))}),
               CohortSpec("sub", "org", quotas={FR: FlavorQuota(draw(st.integers(0, 4)))})]
    cqs = []
    for i in range(draw(st.integers(2, 5))):
        q = FlavorQuota(draw(st.integers(0, 6)), draw(st.none() | st.integers(0, 6)), draw(st.none() | st.integers(0, 6)))
        cqs.append(CQSpec(f"q{i}", draw(st.sampled_from(["org", "sub"])), quotas={FR: q},
                          policy=Policy(draw(pol), draw(st.sampled_from(["LowerPriority", "Any", "Never"])),
                                        draw(st.sampled_from(["Never", "LowerPriority"])),
                                        draw(st.none() | st.integers(0, 3)))))
    admitted = [Admitted(f"w{j}", f"q{draw(st.integers(0, len(cqs) - 1))}", draw(st.integers(0, 3)),
                         {FR: draw(st.integers(1, 3))}, float(draw(st.integers(0, 5))), float(j), f"w{j}",
                         draw(st.booleans()), draw(st.integers(0, 5)) == 0)
                for j in range(draw(st.integers(0, 14)))]
    p = Preemptor("p", f"q{draw(st.integers(0, len(cqs) - 1))}", draw(st.integers(0, 4)),
                  {FR: draw(st.integers(1, 6))}, frozenset({FR}), float(draw(st.integers(0, 14))), "p")
    return cohorts, cqs, admitted, p


@settings(max_examples=150, deadline=None)
@given(trees())
def test_classic_targets_match_the_plain_search(case):
    cohorts, cqs, admitted, p = case
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    before = {n.name: dict(n.usage) for n in tree.nodes()}
    got = [(t.workload.name, t.reason, t.values["variant"], t.values["allowBorrowing"], t.values["lca"])
           for t in classic_targets(tree, p)]
    assert {n.name: dict(n.usage) for n in tree.nodes()} == before
    eager = P._EAGER
    try:  # small lists are sorted at once, long ones merged lazily: both must take the same order
        P._EAGER = -1
        lazy = [(t.workload.name, t.reason, t.values["variant"], t.values["allowBorrowing"], t.values["lca"])
                for t in classic_targets(tree, p)]
    finally:
        P._EAGER = eager
    assert lazy == got
    assert [e[1].name for e in tree.cqs[p.cq].ordered] == sorted(
        (w.name for w in tree.cqs[p.cq].workloads.values()),
        key=lambda n: ordering_key(tree.cqs[p.cq].workloads[n], p.cq))
    P.ONE_FR = False
    try:  # the general search on dicts of dicts must agree with the one-fr search on ints
        general = classic_search(tree, p)
    finally:
        P.ONE_FR = True
    assert general == classic_search(tree, p)
    assert got == reference_targets(tree, p)


def _buckets_from_entries(node):
    out = {}
    for _, wl in node.ordered:
        if not wl.protected:
            b = out.setdefault((wl.priority, frozenset(wl.usage)), [0, {}])
            b[0] += 1
            for fr, v in wl.usage.items():
                b[1][fr] = b[1].get(fr, 0) + v
    return out


@settings(max_examples=50, deadline=None)
@given(trees(), st.lists(st.integers(0, 13), max_size=6), st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)),
                                                                  max_size=4))
def test_doomed_stays_doomed_while_usage_grows_without_a_flip(case, drop, grow):
    """``classic_search`` says doomed when no attempt fits with every starting candidate gone; the
    model then skips that search for the rest of a call while usage only grows and no node goes
    from within nominal to borrowing. Checked here: the priority buckets the sums are read from
    equal the entries after removals, and a doomed answer survives any such growth."""
    cohorts, cqs, admitted, p = case
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    for j in drop:
        if j < len(admitted) and admitted[j].name in tree.cqs[admitted[j].cq].workloads:
            tree.remove_workload(admitted[j])
    for node in tree.cqs.values():
        assert node.buckets == _buckets_from_entries(node)
    targets, doomed = classic_search(tree, p)
    assert [t.workload.name for t in targets] == [e[0] for e in reference_targets(tree, p)]
    if not doomed:
        return
    assert not targets
    for i, amount in grow:
        node = tree.cqs[f"q{i % len(cqs)}"]
        path = [node, *node.path_parent_to_root()]
        before = [within_nominal_in(n, [FR]) for n in path]
        tree.add_usage(node, {FR: amount})
        if [within_nominal_in(n, [FR]) for n in path] != before:
            tree.add_usage(node, {FR: amount}, -1)  # a flip: the model would search again
            continue
        assert classic_search(tree, p) == ([], True)


@settings(max_examples=150, deadline=None)
@given(trees(), st.integers(1, 8))
def test_doomed_stays_doomed_for_a_larger_request(case, more):
    """A doomed search stays doomed for the same preemptor asking for more of its one
    flavor-resource: the candidates' sum is the same, the valid ones only lose the hierarchical
    advantage, the attempts are the same set, and every fit test is harder. The model then skips
    the searches of larger requests of the same queue, priority and age within a call."""
    cohorts, cqs, admitted, p = case
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    targets, doomed = classic_search(tree, p)
    if not doomed:
        return
    bigger = Preemptor(p.name, p.cq, p.priority, {FR: p.requests[FR] + more}, p.frs_need, p.created_at, p.uid)
    assert classic_search(tree, bigger) == ([], True)
    P.ONE_FR = False
    try:
        assert classic_search(tree, bigger) == ([], True)
    finally:
        P.ONE_FR = True


def _two_queues(cohort: int, q1: int, ask: int) -> tuple:
    """A cohort (``cohort`` of its own) over q0 (4, filled by w0 at priority 0) and q1 (``q1``,
    holding w1, 4 at priority 2); p asks ``ask`` in q1 at w1's priority. Reclaim Any, and
    borrowing while reclaiming from lower priorities."""
    policy = Policy("LowerPriority", "Any", "LowerPriority", None)
    cohorts = [CohortSpec("org", None, quotas={FR: FlavorQuota(cohort)})]
    cqs = [CQSpec("q0", "org", quotas={FR: FlavorQuota(4)}, policy=policy),
           CQSpec("q1", "org", quotas={FR: FlavorQuota(q1)}, policy=policy)]
    admitted = [Admitted("w0", "q0", 0, {FR: 4}, 0.0, 0.0, "w0", False, False),
                Admitted("w1", "q1", 2, {FR: 4}, 0.0, 1.0, "w1", False, False)]
    return cohorts, cqs, admitted, Preemptor("p", "q1", 2, {FR: ask}, frozenset({FR}), 5.0, "p")


def _flip_case():
    """q0 and q1 fill their nominal quota and the cohort has 1 of its own. p (q1, 4, as high as
    w1) has no candidate, so its headroom is 1. x0 (1 in q0) makes q0 borrow: w0 and x0 become
    candidates, reclaimed while p borrows (q1's policy allows it), and p fits without w0, though
    nothing was released: only the flip says search again."""
    return _two_queues(1, 4, 4), [(False, 0, 0, 0, 1)]


def _retaken_case(own: bool = False):
    """The cohort has no quota of its own; q0 (4) is full and q1 (8) holds w1 (4). p (q1, 5,
    as high as w1) has no candidate: its headroom and the root's free quota are 4. w0's end
    releases 4, enough for p, but x1 then takes them in q0 within its nominal quota: the root's
    free quota is 4 again, and p stays doomed. ``own``: x1 is taken in p's own queue instead,
    at a lower priority: a candidate of p's, which then fits without it."""
    return _two_queues(0, 8, 5), [(True, 0, 0, 0, 1), (False, 0, 1 if own else 0, 0, 4)]


@settings(max_examples=200, deadline=None)
@given(trees(), st.lists(st.tuples(st.booleans(), st.integers(0, 13), st.integers(0, 4), st.integers(0, 3),
                                   st.integers(1, 3)), max_size=8))
@example(*_flip_case())
@example(*_retaken_case())
@example(*_retaken_case(own=True))
def test_headroom_keeps_a_search_doomed_across_ends_and_admissions(case, events):
    """A one-fr preemptor doomed by the first test (every candidate gone, borrowing allowed)
    asks for more than its headroom. Workloads then end and others are admitted, anywhere in
    the tree: while less than the request minus the headroom has left the tree and no node has
    started borrowing, the search stays doomed and the preemptor's quota is no Fit either
    (``KueueModel`` settles such heads across calls). Where no node has a lending limit, the
    same holds while the root's free quota then, plus what left, less what other queues took
    within their nominal quota, stays below the request."""
    cohorts, cqs, admitted, p = case
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    targets, doomed, headroom = classic_search_headroom(tree, p)
    assert (targets, doomed) == classic_search(tree, p)
    if headroom is None:
        return
    v = p.requests[FR]
    assert doomed and not targets and headroom.available < v
    assert headroom.root_free is None or headroom.available <= headroom.root_free
    registered = {wl.name: wl for wl in admitted}
    released = took = 0
    for k, (ends, j, i, priority, amount) in enumerate(events):
        if ends:
            wl = registered.pop(f"w{j}", None)
            if wl is None:
                continue
            tree.remove_workload(wl)
            released += wl.usage[FR]
        else:
            node = tree.cqs[f"q{i % len(cqs)}"]
            path = [node, *node.path_parent_to_root()]
            before = [within_nominal_in(n, [FR]) for n in path]
            wl = Admitted(f"x{k}", node.name, priority, {FR: amount}, 0.0, 20.0 + k, f"x{k}", False, False)
            tree.add_workload(wl)
            registered[wl.name] = wl
            if [within_nominal_in(n, [FR]) for n in path] != before:
                return  # a node started borrowing: new candidates, the model searches again
            if node.name != p.cq and within_nominal_in(node, [FR]):
                took += amount
        if headroom.available + released >= v:
            if headroom.root_free is None or headroom.root_free + released - took >= v:
                continue  # not held now; later admissions may hold it again
            event("held by the root's free quota alone")
        assert classic_search(tree, p) == ([], True)
        assert cq_available(tree.cqs[p.cq], FR) < v


def test_a_node_that_starts_borrowing_undooms_with_nothing_released():
    """Why the model drops a headroom when a node starts borrowing (``_flip_case``)."""
    (cohorts, cqs, admitted, p), _ = _flip_case()
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    assert classic_search_headroom(tree, p) == ([], True, Headroom(1, 1))
    tree.add_workload(Admitted("x0", "q0", 0, {FR: 1}, 0.0, 20.0, "x0", False, False))
    targets, doomed = classic_search(tree, p)
    assert not doomed and sorted(t.workload.name for t in targets) == ["w0"]
