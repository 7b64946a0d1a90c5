"""The Kueue model's caches never change a decision (hypothesis).

The model reuses work between heads and calls: a twin head's no-op outcome, GetTargets results
and "no targets" stamps, flavor assignments, and whole calls skipped when nothing moved. Each is
valid only while its stamps say that nothing it read has changed. On random clusters (nested
cohorts, mixed pod shapes, grace periods, classic and fair sharing) the model and
``FullEvaluation`` must decide exactly the same, at the same times, in the same order.
"""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from tests.kueue.helpers import draw_cluster
from tests.kueue.test_golden import FullEvaluation, Recording


@st.composite
def clusters(draw):
    queues, nodes, workloads, _ = draw_cluster(draw, ("BestEffortFIFO",) * 3 + ("StrictFIFO",), (0.0, 0.0, 1.5))
    return queues, nodes, workloads, draw(st.booleans())


# A drawn cluster can cycle for ever, as Kueue can: a preemptor reclaims quota, its victim
# reclaims it back, and no task ever finishes (``_livelock``). The engine stops such a run after
# its no-progress window, 600 simulated seconds by default: 19,000 calls and 36,000 preemptions
# for 49 workloads, 29 s with the caches and minutes without. 32 s is longer than any drawn
# duration plus grace, so only a run that is cycling is stopped earlier: that one after 1,609
# preemptions, 5 s with and without the caches.
OPTIONS = SimOptions(check_invariants=True, no_progress_window=32.0)


def _run(cls, queues, nodes, workloads, fair):
    model = cls({"fairSharing": {}} if fair else {})
    simulate(ClusterState(["cpu"], queues, nodes), model, list(workloads), options=OPTIONS)
    return model.log


def _livelock():
    """The input a random CI run drew (564 s): q3 reclaims from q2 in ``sub``, q2 and q1 reclaim
    from each other while borrowing through ``org``, and every 0.5 s the same eight workloads are
    preempted and restarted until the no-progress window ends the run."""
    def cq(name, parent, weight, quota):
        return Queue(name, parent, weight=weight, settings={
            "kind": "ClusterQueue",
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [quota]}]}],
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                           "borrowWithinCohort": {"policy": "LowerPriority"}}})
    queues = [Queue("org", settings={"kind": "Cohort"}), Queue("sub", "org", settings={"kind": "Cohort"}),
              cq("q0", "org", 1.0, {"name": "cpu", "nominalQuota": 3, "borrowingLimit": 6}),
              cq("q1", "org", 1.0, {"name": "cpu", "nominalQuota": 1}),
              cq("q2", "sub", 0.5, {"name": "cpu", "nominalQuota": 0, "lendingLimit": 3}),
              cq("q3", "sub", 1.0, {"name": "cpu", "nominalQuota": 3, "lendingLimit": 3})]
    nodes = [Node("n0", {"cpu": 3}, {"flavor": "f"}), Node("n1", {"cpu": 6}, {"flavor": "f"})]
    rows = [  # (queue, submit, duration, pods, cpu per pod, priority)
        (3, 0, 2, 1, 3, 3), (0, 0.5, 30, 3, 3, 1), (3, 0.5, 2, 3, 3, 1), (3, 0.5, 2, 1, 3, 0), (1, 1, 10, 2, 1, 0),
        (0, 1, 10, 1, 1, 2), (3, 1, 10, 2, 3, 0), (1, 1.5, 10, 2, 3, 0), (2, 1.5, 10, 3, 2, 0), (2, 1.5, 10, 1, 1, 2),
        (1, 1.5, 30, 1, 3, 2), (1, 1.5, 30, 2, 2, 1), (2, 1.5, 2, 1, 3, 3), (2, 2, 2, 1, 1, 3), (2, 2, 2, 1, 1, 1),
        (0, 2, 30, 2, 3, 3), (1, 2, 30, 1, 3, 2), (1, 2, 2, 1, 1, 0), (3, 4, 10, 3, 2, 2), (2, 6, 2, 3, 2, 2),
        (0, 6, 2, 1, 1, 2), (2, 6, 10, 2, 1, 3), (2, 6, 10, 2, 1, 0), (2, 6.5, 30, 1, 1, 2), (0, 8.5, 30, 3, 1, 0),
        (3, 8.5, 30, 1, 1, 0), (2, 9, 10, 3, 1, 1), (1, 11, 2, 2, 1, 0), (0, 11, 30, 3, 3, 0), (0, 11, 30, 2, 2, 1),
        (3, 11, 2, 1, 1, 3), (2, 13, 10, 3, 2, 3), (2, 13, 2, 2, 1, 0), (1, 15, 2, 3, 3, 2), (3, 15, 10, 2, 2, 2),
        (0, 17, 30, 2, 3, 1), (1, 19, 2, 1, 2, 3), (3, 19, 2, 3, 2, 0), (2, 19, 10, 3, 3, 0), (3, 19.5, 30, 1, 1, 0),
        (3, 20, 10, 2, 3, 1), (0, 20, 2, 3, 2, 0), (1, 20, 10, 2, 2, 0), (3, 20, 30, 2, 3, 3), (3, 20, 2, 1, 2, 1),
        (2, 20, 2, 3, 2, 1), (3, 20, 10, 2, 1, 1), (3, 20.5, 10, 3, 2, 0), (0, 22.5, 10, 2, 2, 1)]
    workloads = [Workload(f"w{j}", f"q{q}", float(t), float(d), (TaskGroup(n, {"cpu": c}),), p)
                 for j, (q, t, d, n, c, p) in enumerate(rows)]
    return queues, nodes, workloads, False


class Checked(Recording):
    """The model with its kept snapshot checked against a fresh read after every update: each
    queue's entries (``build_tree`` re-reads only the running workloads that changed), the
    workloads a pending reason's snapshot is built from (``_running_ids``), the unparked
    entries of each queue (``_pending_by_queue``), each queue's order (``queue_order``) and
    each pending reason (``pending_reason``)."""

    def build_tree(self, state):
        tree = super().build_tree(state)
        fresh: dict[str, dict] = {q: {} for q in tree.cqs}
        for a in state.allocations.values():
            if a.queue in fresh:
                fresh[a.queue][a.workload] = (self._admitted(state, a.workload), len(state.running[a.workload]))
        assert self._entries == fresh
        return tree

    def _pending_by_queue(self, state, tree):
        """The parked marks (``Parked``) list a queue's unparked entries as filtering the queue by
        membership does."""
        out = super()._pending_by_queue(state, tree)
        for q, lst in self._index.order.items():
            if lst and q in tree.cqs:
                assert out[q] == [e for e in lst if e[3] not in self._parked]
        return out

    def queue_order(self, state, queue, now):
        """Read from the pending index, the order is the one sorting every pending workload gives."""
        order = super().queue_order(state, queue, now)
        wls = state.workloads
        assert order == [k[-1] for k in sorted(self._order_key(wls[w]) for w in state.pending
                                                if wls[w].queue == queue)]
        return order

    def pending_reason(self, state, wl_id, now):
        """An answer shared by twins at one allocation epoch is the one computed afresh."""
        got = super().pending_reason(state, wl_id, now)
        assert got == self._pending_reason(state, wl_id, state.workloads[wl_id], wl_id in self._waiting)
        return got

    def _running_ids(self, state):
        ids = super()._running_ids(state)
        assert set(ids) >= {w for w, tasks in state.running.items() if tasks}
        return ids


# 45 random examples (about 0.2 s each) and the livelock (about 5 s): what the fixed 60 cost
@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
@example(_livelock())
def test_caches_decide_as_evaluating_every_head(case):
    queues, nodes, workloads, fair = case
    assert _run(Checked, queues, nodes, workloads, fair) == _run(FullEvaluation, queues, nodes, workloads, fair)


class TrimmedLogs(Checked):
    """``Checked`` on a state whose run and pending journals keep a handful of entries, so the
    snapshot and the pending index often find the log trimmed past their last read and fall back
    to a full look at every entry of a changed queue."""

    def bind(self, state):
        state.run_log.limit = state.pending_log.limit = 3
        super().bind(state)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_trimmed_logs_decide_as_evaluating_every_head(case):
    queues, nodes, workloads, fair = case
    assert _run(TrimmedLogs, queues, nodes, workloads, fair) == _run(FullEvaluation, queues, nodes, workloads, fair)


class CountsCurrent(Checked):
    """Counts the lookups where pending reasons read the model's own snapshot (``_current``)."""

    hits = 0
    refreshed = 0

    def _current(self, state):
        current = super()._current(state)
        type(self).hits += bool(current)
        return current

    def _refresh(self, state):
        done = super()._refresh(state)
        type(self).refreshed += bool(done)
        return done


def _trails(cls, queues, nodes, workloads, fair):
    model = cls({"fairSharing": {}} if fair else {})
    rec = simulate(ClusterState(["cpu"], queues, nodes), model, list(workloads), options=OPTIONS)
    return model.log, rec.reasons.rows()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_pending_reasons_read_a_current_snapshot(case):
    """Pending reasons read the model's own snapshot when it is current, a fresh build otherwise;
    the reason trails (codes, times) must be those of the model with ``caches: false``, which
    always builds afresh. (Whether a random run reads any reason at a current snapshot depends on
    when its allocations change, so that the shortcut is taken is asserted on a fixed run below.)"""
    queues, nodes, workloads, fair = case
    assert _trails(CountsCurrent, queues, nodes, workloads, fair) == _trails(FullEvaluation, queues, nodes,
                                                                             workloads, fair)


def _cq(name: str, nominal: int, within: str = "Never", reclaim: str = "Never", borrow: str = "Never") -> Queue:
    return Queue(name, "org", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}],
        "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim,
                       "borrowWithinCohort": {"policy": borrow}}})


@pytest.mark.parametrize("fair", [False, True])
def test_a_reason_read_after_a_call_that_decided_nothing_takes_the_current_snapshot(fair):
    """w1 and w2 arrive at instants where the call admits nothing: their first reasons are read
    from the model's own snapshot (the shortcut), and say the same as a fresh build."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _cq("q0", 2), _cq("q1", 0)]
    nodes = [Node("n0", {"cpu": 4}, {"flavor": "f"})]
    workloads = [Workload("w0", "q0", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("w1", "q0", 1.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("w2", "q1", 2.0, 10.0, (TaskGroup(1, {"cpu": 1}),), 0)]
    hits = CountsCurrent.hits
    got = _trails(CountsCurrent, queues, nodes, workloads, fair)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, fair)
    assert got[1] == {"w1": [[1.0, "quota", "q0"]], "w2": [[2.0, "quota", "q1"]]}
    assert CountsCurrent.hits > hits


@pytest.mark.parametrize("fair", [False, True])
def test_a_reason_read_after_a_call_that_started_work_updates_the_models_snapshot(fair):
    """w0 starts at 0 and w1, submitted with it, does not fit beside it: its first reason is read
    after the start, from the model's own snapshot brought up to date (not a second snapshot of
    every admitted workload), and says what a fresh build says."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _cq("q0", 2), _cq("q1", 0)]
    nodes = [Node("n0", {"cpu": 4}, {"flavor": "f"})]
    workloads = [Workload("w0", "q0", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("w1", "q0", 0.0, 10.0, (TaskGroup(1, {"cpu": 1}),), 0)]
    refreshed = CountsCurrent.refreshed
    got = _trails(CountsCurrent, queues, nodes, workloads, fair)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, fair)
    assert got[1] == {"w1": [[0.0, "quota", "q0"]]}
    assert CountsCurrent.refreshed > refreshed


class Settling(Recording):
    """Counts the heads taken as settled earlier in their call (``_settled_kind``)."""

    settled = 0

    def _settled_kind(self, cq, hid):
        kind = super()._settled_kind(cq, hid)
        type(self).settled += kind is not None
        return kind


@pytest.mark.parametrize("twins", [1, 2, 3])
def test_heads_settled_in_a_call_are_skipped_after_admissions(twins):
    """At t=1, k0 (b, 5 cpu) would borrow beyond b's nominal quota, which is full: it may preempt
    only in b, and b0 is not of lower priority, so its search is doomed. d0 asks for more than
    the whole tree. Both are settled: no more usage can change that, so their twins are parked
    unevaluated for the rest of the call, though x0's admission in c (within its nominal, no
    queue starts borrowing) moved the tree's version between the rounds. x1 is admitted in the
    next round. Everything as ``caches: false`` decides, reasons included."""
    queues = [Queue("org", settings={"kind": "Cohort"}),
              *(_cq(name, nominal, "LowerPriority", "Any") for name, nominal in (("a", 4), ("b", 6), ("c", 4), ("d", 0)))]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]

    def job(name: str, queue: str, at: float, cpu: int, priority: int) -> Workload:
        return Workload(name, queue, at, 50.0, (TaskGroup(1, {"cpu": cpu}),), priority)

    workloads = [job("a0", "a", 0.0, 4, 0), job("b0", "b", 0.0, 6, 10)]
    for i in range(twins + 1):
        workloads += [job(f"k{i}", "b", 1.0, 5, 10), job(f"x{i}", "c", 1.0, 1, 0), job(f"d{i}", "d", 1.0, 50, 0)]
    settled = Settling.settled
    got = _trails(Settling, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert [line for line in got[0] if line.startswith("1.0")] == [f"1.0 S x{i}/0/0 n0" for i in range(twins + 1)]
    assert Settling.settled - settled >= 2 * twins


class ShortSettling(Recording):
    """Counts the kinds settled by the headroom of an earlier doomed search (``_doomed_kind``)."""

    settled = 0

    def _doomed_kind(self, hid):
        kind = super()._doomed_kind(hid)
        type(self).settled += kind is not None
        return kind


@pytest.mark.parametrize("twins", [1, 3])
def test_a_search_doomed_by_its_headroom_stays_doomed_across_calls_until_enough_quota_is_released(twins):
    """The tree (20 cpu) is full at t=0. At t=1, k0 (b, 4 cpu, priority 10) would borrow beyond
    b's nominal quota, which b0 fills at the same priority, and no queue borrows: no candidate,
    its headroom is 0 and it lacks 4. e0's end at t=5 releases 1 cpu: k0 and its twins are
    settled by that headroom, unevaluated. f0's end at t=8 brings the release to 4: k0 is
    evaluated again and admitted. Everything as ``caches: false`` decides, reasons included."""
    queues = [Queue("org", settings={"kind": "Cohort"}),
              *(_cq(name, nominal, "LowerPriority", "Any") for name, nominal in (("a", 4), ("b", 8), ("c", 4), ("d", 4)))]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]

    def job(name: str, queue: str, at: float, cpu: int, priority: int, duration: float = 100.0) -> Workload:
        return Workload(name, queue, at, duration, (TaskGroup(1, {"cpu": cpu}),), priority)

    workloads = [job("a0", "a", 0.0, 4, 0), job("b0", "b", 0.0, 8, 10), job("c0", "c", 0.0, 4, 0),
                 job("e0", "d", 0.0, 1, 0, 5.0), job("f0", "d", 0.0, 3, 0, 8.0)]
    workloads += [job(f"k{i}", "b", 1.0, 4, 10) for i in range(twins + 1)]
    settled = ShortSettling.settled
    got = _trails(ShortSettling, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert [line for line in got[0] if " S k" in line and float(line.split()[0]) < 100] == ["8.0 S k0/0/0 n0"]
    assert ShortSettling.settled - settled >= 1


def test_a_queue_that_starts_borrowing_ends_a_headroom_though_little_was_released():
    """At t=1, p (q1, 4 cpu, as high as w1) would borrow; nobody borrows, so it has no candidate
    and a headroom of 1 (q2's free cpu). At t=2, x0 (1 cpu) makes q0 borrow: w0 and x0 become
    candidates. e0's end at t=5 releases only 1 cpu, less than p lacks, yet p must search again
    (the flip) and now preempts. Everything as ``caches: false`` decides, reasons included."""
    queues = [Queue("org", settings={"kind": "Cohort"}),
              *(_cq(name, nominal, "LowerPriority", "Any", "LowerPriority") for name, nominal in (("q0", 4), ("q1", 4),
                                                                                                 ("q2", 2)))]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]
    workloads = [Workload("w0", "q0", 0.0, 100.0, (TaskGroup(1, {"cpu": 4}),), 0),
                 Workload("w1", "q1", 0.0, 100.0, (TaskGroup(1, {"cpu": 4}),), 2),
                 Workload("e0", "q2", 0.0, 5.0, (TaskGroup(1, {"cpu": 1}),), 0),
                 Workload("p", "q1", 1.0, 100.0, (TaskGroup(1, {"cpu": 4}),), 2),
                 Workload("x0", "q0", 2.0, 100.0, (TaskGroup(1, {"cpu": 1}),), 1)]
    got = _trails(Recording, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert [line.split()[:3] for line in got[0] if line.startswith("5.0")] == [
        ["5.0", "P", "w0/0/0"], ["5.0", "N", "kueue-preemption"], ["5.0", "S", "p/0/0"]]


class SmallerSettling(Recording):
    """Counts the kinds settled by a smaller request of theirs doomed earlier in the call, with
    no headroom holding (``_doomed_kind``)."""

    settled = 0

    def _doomed_kind(self, hid):
        kind = super()._doomed_kind(hid)
        if kind is not None and not self._short_of(*self._kind_one[hid]):
            type(self).settled += 1
        return kind


def _lending_cq(name: str, nominal: int, lending: int | None = None) -> Queue:
    """A ClusterQueue of ``org`` that reclaims from any queue but never while borrowing."""
    quota = {"name": "cpu", "nominalQuota": nominal}
    if lending is not None:
        quota["lendingLimit"] = lending
    return Queue(name, "org", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [quota]}]}],
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                       "borrowWithinCohort": {"policy": "Never"}}})


def job(name: str, queue: str, at: float, cpu: int, priority: int, duration: float = 100.0) -> Workload:
    return Workload(name, queue, at, duration, (TaskGroup(1, {"cpu": cpu}),), priority)


def test_a_kind_asking_for_more_than_a_request_doomed_in_the_call_is_settled_unevaluated():
    """The tree is full: a (4 cpu nominal) lends 2 to c, which borrows them for c0; b is at its
    nominal with b0. k0 (b, 2 cpu) would borrow: its only candidate, c0, may be reclaimed only
    without borrowing (borrowWithinCohort Never), so its search is doomed by the second test
    and gives no headroom. g0 (b, 3 cpu) is doomed the same way at 1.5. At 2, e0 ends in e,
    which lends nothing: both are requeued, k0 is searched again and doomed, and g0's kind,
    asking for more, is settled by that doom without its own search. Everything as ``caches:
    false`` decides, reasons included."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _lending_cq("a", 4), _lending_cq("b", 4), _lending_cq("c", 2),
              _lending_cq("e", 2, 0)]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]
    workloads = [job("a0", "a", 0.0, 2, 0), job("b0", "b", 0.0, 4, 10), job("c0", "c", 0.0, 4, 0),
                 job("e0", "e", 0.0, 1, 0, 2.0), job("k0", "b", 1.0, 2, 10), job("g0", "b", 1.5, 3, 10)]
    settled = SmallerSettling.settled
    got = _trails(SmallerSettling, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert not [line for line in got[0] if " S " in line and 0 < float(line.split()[0]) < 100]
    assert got[1]["g0"] == [[1.5, "quota", "b"]]
    assert SmallerSettling.settled - settled >= 1


def test_a_kind_asking_for_less_than_a_request_doomed_in_the_call_is_evaluated():
    """As above, with the order turned: g0 (3 cpu) comes before k0 (2 cpu). a1's end at 2
    frees 2 cpu: g0 is searched again and doomed, and k0, asking for less, is not settled by
    that doom: it is evaluated and admitted."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _lending_cq("a", 6), _lending_cq("b", 4), _lending_cq("c", 2)]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]
    workloads = [job("a0", "a", 0.0, 2, 0), job("a1", "a", 0.0, 2, 0, 2.0), job("b0", "b", 0.0, 4, 10),
                 job("c0", "c", 0.0, 4, 0), job("g0", "b", 1.0, 3, 10), job("k0", "b", 1.5, 2, 10)]
    got = _trails(SmallerSettling, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert [line for line in got[0] if " S " in line and 0 < float(line.split()[0]) < 100] == ["2.0 S k0/0/0 n0"]


@pytest.mark.parametrize("doomed_from, flips, headroom, settled", [
    ((3, 2), 3, None, True),   # a smaller request doomed since the last flip
    ((3, 4), 3, None, True),   # the same request
    ((3, 5), 3, None, False),  # only a larger one: a smaller request may still fit
    ((2, 2), 3, None, False),  # doomed before a node started borrowing: candidates may have appeared
    (None, 3, (3, 0, 1, None), True),   # a headroom of 1 that still holds (nothing released)
    (None, 3, (2, 0, 1, None), False),  # a headroom from before the last flip
    (None, 3, (3, 0, 4, None), False),  # a headroom as large as the request
    (None, 3, (3, -4, 1, None), False),  # 4 released since: more than the 3 it lacked
    (None, 3, (3, -4, 1, 2, -3, 0), True),   # ... but others took 3 within nominal: 2 + 4 - 3 < 4
    (None, 3, (3, -4, 1, 2, -2, 0), False),  # they took 2: 2 + 4 - 2 = 4, enough for it
    (None, 3, (3, -4, 1, 2, -3, -3), False),  # its own queue took them: maybe its candidates
])
def test_a_kind_asking_for_one_flavor_resource_is_settled_while_its_doom_holds(doomed_from, flips, headroom, settled):
    """``_doomed_kind`` for a kind asking for 4 of one flavor-resource, against the call's
    smallest doomed request of its key (``_doomed_from``: flip count, request) and the headroom
    kept across calls (flip count, released then, headroom, the root's free quota, what queues
    took within their nominal quota then, what its own queue took then; the counts now are 0)."""
    from makeway.policies.kueue.model import KueueModel
    from makeway.policies.kueue.parked import QUOTA

    model = KueueModel({})
    one = ("b", ("f", "cpu"), 10, None)
    model._kind_one[7] = (one, 4, "org")
    model._flips["org"] = flips
    if doomed_from is not None:
        model._doomed_from[one] = doomed_from
    if headroom is not None:
        model._headroom[one] = headroom if len(headroom) == 6 else (*headroom, 0, 0)
    assert model._doomed_kind(7) == (QUOTA if settled else None)
    assert model._settles.get(7) == ((flips, QUOTA) if settled else None)
    assert model._doomed_kind(8) is None  # a kind never noted


class OverNominalSettling(Recording):
    """Counts the kinds settled by their queue standing at its nominal quota, unable to borrow
    while it preempts and with no candidate of its own (``_held_over_nominal``)."""

    settled = 0

    def _held_over_nominal(self, one, v):
        held = super()._held_over_nominal(one, v)
        type(self).settled += held
        return held


def test_a_kind_of_a_queue_at_nominal_that_may_not_borrow_while_it_preempts_is_settled_unevaluated():
    """a and b fill the quota they lend; c lends nothing, so no root headroom is kept. k0 (b, 2
    cpu, as high as b0) has no candidate and is doomed at 1 with a headroom of 0. a0's end at 2
    releases 4, more than k0 lacks, but x0 takes them again in a first: b is still at its
    nominal quota, may not borrow while it preempts and holds nothing lower, and 0 is available
    to it, so k0 is settled without its evaluation. Everything as ``caches: false`` decides."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _lending_cq("a", 4), _lending_cq("b", 4),
              _lending_cq("c", 2, 0)]
    nodes = [Node("n0", {"cpu": 100}, {"flavor": "f"})]
    workloads = [job("a0", "a", 0.0, 4, 0, 2.0), job("b0", "b", 0.0, 4, 10), job("k0", "b", 1.0, 2, 10),
                 job("x0", "a", 2.0, 4, 0)]
    settled = OverNominalSettling.settled
    got = _trails(OverNominalSettling, queues, nodes, workloads, False)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, False)
    assert [line for line in got[0] if " S " in line and 0 < float(line.split()[0]) < 100] == ["2.0 S x0/0/0 n0"]
    assert OverNominalSettling.settled - settled >= 1
