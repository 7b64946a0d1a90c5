"""Asks refused together are refused again together (``Blocks`` cohorts, issue 20).

A call whose only work is refusals (a cohort's timer, asks parked for want of their leaf's
attempts) is done without the walk (``cohorts.repeat_refusals``). Against the same model with
that shortcut off, every call must decide the same, ask for the same wake-up, and leave every ask
with the same check clock and allocation log counts; against the reference pass (``caches:
false``) the decisions and wake-ups must match too.

Stretches made only of the model's own wake-ups are run inside the model (``skip_wakes``,
``stretch``): against the engine running every instant, the results (every event, every pending
reason with its time, the number of events) and every ask's clock and log must be the same.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn import cohorts, stretch
from makeway.policies.yunikorn.blocks import PARKED, Cohort, walk_key
from makeway.policies.yunikorn.common import MAX_PREEMPTION_ATTEMPTS
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.policies.yunikorn.preemptor import DOES_NOT_GUARANTEE
from makeway.policies.yunikorn.views import to_us
from makeway.sim.engine import SimOptions, Simulation, make_simulation, simulate
from tests.yunikorn_queue.test_cache_equivalence import FullEvaluation, Recording, clusters, run


def timer_holes(blocks) -> list[str]:
    """Blocked asks with a timer that neither a per-ask heap nor a cohort in the heap holds."""
    held = {(due, t) for heap in (blocks.heap_fresh, blocks.heap_checked) for due, t in heap}
    held |= {(c.due, t) for _, _, c in blocks.cohorts for t in c.tids}
    return [t for t, due in blocks.blocked.items() if due >= 0 and (due, t) not in held]


class AskStates(Recording):
    """Also logs, after every call, each ask's check clock and log counts."""

    most = 0  # the largest count any ask's log reached
    repeats = 0  # calls ``repeat_refusals`` made, in the latest run of this class

    def schedule(self, state, now):
        out = super().schedule(state, now)
        self.most = max([self.most, *(n for a in self.asks.values() for n in a.log.values())])
        AskStates.repeats = self.cohort_repeats
        assert not timer_holes(self.blocks)
        self.log.append(f"{now!r} A {sorted((t, a.last_check_us, sorted(a.log.items())) for t, a in self.asks.items())!r}")
        return out


class NoCohorts(AskStates):
    closed_form_refusals = False


def starved_case(gangs: int = 6) -> tuple[ClusterState, list[Workload]]:
    """root.a runs over its guarantee for an hour; root.b's asks (under theirs) are refused by
    root.a's guarantee every 15 s, and some leaves have more asks due than attempts."""
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.a", "root", {"cpu": 12}, settings=delay),
              Queue("root.b", "root", {"cpu": 4}, settings=delay), Queue("root.c", "root", {"cpu": 0.5}, settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)]
    jobs = [Workload(f"fill{i}", "root.a", 0.0, 3600.0 + 60 * i, (TaskGroup(1, {"cpu": 1}),)) for i in range(16)]
    jobs += [Workload(f"ask{i}", "root.b", 2.0 + 7 * i, 60.0, (TaskGroup(1, {"cpu": 1 + i % 2}),)) for i in range(4)]
    jobs += [Workload(f"gang{i}", "root.c", 30.0, 60.0, (TaskGroup(7, {"cpu": 1}),)) for i in range(gangs)]
    return ClusterState(["cpu"], queues, nodes), jobs


def test_cohort_repeats_decide_and_log_as_the_walk():
    logs, models = [], []
    for cls in (AskStates, NoCohorts):
        state, jobs = starved_case()
        model = cls({})
        simulate(state, model, jobs, options=SimOptions(check_invariants=True))
        logs.append(model.log)
        models.append(model)
    assert models[0].cohort_repeats > 20 and models[1].cohort_repeats == 0
    assert models[0].parked_turns > 0  # root.c's gangs have more asks due than attempts
    assert models[0].most > 20  # asks were refused again and again
    assert logs[0] == logs[1]
    state, jobs = starved_case()
    ref = FullEvaluation({})
    simulate(state, ref, jobs, options=SimOptions(check_invariants=True))
    assert [line for line in logs[0] if " A " not in line] == ref.log


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_cohort_repeats_change_nothing_on_random_clusters(case):
    log = run(AskStates, case)
    event("a cohort repeated" if AskStates.repeats else "no cohort repeated")
    assert log == run(NoCohorts, case)


class Checked(YuniKornModel):
    """Every call and every skipped stretch leaves each blocked ask's timer held."""

    def schedule(self, state, now):
        out = super().schedule(state, now)
        assert not timer_holes(self.blocks)
        return out

    def skip_wakes(self, state, wakes, limit):
        out = super().skip_wakes(state, wakes, limit)
        assert not timer_holes(self.blocks)
        return out


def parked_case(gangs: tuple[tuple[str, float, int], ...]) -> tuple[ClusterState, list[Workload]]:
    """Gangs ((leaf, submit, tasks)) in root.c and root.d, under guarantees of half a cpu, are
    refused by them every 15 s for eleven hours while root.a holds every node. Each call gives a
    leaf's ten attempts to its first asks in walk order and parks the rest, so the refusals
    repeat with asks parked; at another leaf's instant, the parked asks get their turn."""
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.a", "root", {"cpu": 12}, settings=delay),
              Queue("root.c", "root", {"cpu": 0.5}, settings=delay), Queue("root.d", "root", {"cpu": 0.5}, settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)]
    jobs = [Workload(f"fill{i}", "root.a", 0.0, 40000.0 + 60 * i, (TaskGroup(1, {"cpu": 1}),)) for i in range(16)]
    jobs += [Workload(f"gang{i}", f"root.{leaf}", submit, 60.0, (TaskGroup(n, {"cpu": 1}),))
             for i, (leaf, submit, n) in enumerate(gangs)]
    return ClusterState(["cpu"], queues, nodes), jobs


def run_skipping(case: dict | tuple | None, skip: bool, horizon: float | None = None) -> tuple:
    """A whole run of the plain model, with the engine skipping stretches of wake-ups or not:
    everything the results are made of, every ask's clock and log, and what was skipped.
    ``case``: a random cluster, a (state, jobs) pair, or None for ``starved_case``; ``horizon``:
    where the run stops (asks still pending then keep their clocks and logs to compare)."""
    if case is None or isinstance(case, tuple):
        state, jobs, changes, settings = *(case or starved_case()), [], {}
    else:
        queues = [Queue(name, parent, dict(g) if g else None, dict(m) if m else None,
                        settings={"properties": dict(p)}) for name, parent, g, m, p in case["queues"]]
        nodes = [Node(n, dict(cap)) for n, cap in case["nodes"]]
        state = ClusterState(["cpu", "memory"], queues, nodes)
        jobs, changes, settings = list(case["jobs"]), list(case["changes"]), dict(case["settings"])
    model = Checked(settings)
    sim = make_simulation(state, model, SimOptions(check_invariants=True, record_starts=True, skip_idle=skip,
                                                   horizon=horizon), bool(changes))
    assert isinstance(sim, Simulation)
    sim.add_workloads(jobs)
    sim.add_changes(changes)
    rec = sim.run()
    asks = sorted((t, a.last_check_us, sorted(a.log.items())) for t, a in model.asks.items())
    kept = (rec.events, rec.reasons.trail, rec.reasons.rounds, sim.events_processed, sim.now, asks,
            model.cohort_refusals)
    return kept, sim.skipped_wakes


def test_skipped_stretches_give_the_same_results():
    skipped, n = run_skipping(None, True)
    every, none = run_skipping(None, False)
    assert n > 100 and none == 0
    assert skipped == every


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_skipped_stretches_give_the_same_results_on_random_clusters(case):
    skipped, n = run_skipping(case, True)
    event("stretches skipped" if n else "nothing skipped")
    assert skipped == run_skipping(case, False)[0]


@pytest.mark.parametrize("gangs", [
    (("c", 30, 15),),
    (("c", 30, 25), ("c", 5030, 12)),
    (("c", 30, 4), ("c", 5030, 9), ("c", 10030, 30)),
    (("c", 30, 80), ("d", 37, 3), ("d", 12000, 14)),  # d's instants give c's parked asks turns
])
def test_stretches_with_parked_asks_give_the_same_results(gangs, monkeypatch):
    """Refusals repeated while asks stay parked are run in closed form (``_parked_chains``):
    the same results, clocks and logs as the engine running every instant."""
    chained = []

    def counting(*args):
        out = stretch_parked(*args)
        chained.append(out is not None)
        return out

    stretch_parked = stretch._parked_chains
    monkeypatch.setattr(stretch, "_parked_chains", counting)
    for horizon in (None, 20000.0):  # to the end, and stopped while the asks are refused
        skipped, n = run_skipping(parked_case(gangs), True, horizon)
        every, none = run_skipping(parked_case(gangs), False, horizon)
        assert sum(chained) > 100 and n > 100 and none == 0
        assert skipped == every
    assert skipped[5] and all(dict(log)[DOES_NOT_GUARANTEE] > 100 for _, _, log in skipped[5][:10])


def test_cohorts_that_plainly_take_every_attempt(monkeypatch):
    """Two five-task gangs take root.c's ten attempts at every repeat and a third, after them in
    walk order, stays parked: the cohort's turns are answered without the walk
    (``cohorts.own_turns``), in calls that only refuse and in parked chains. The same events,
    clocks and logs as the walk at every call, and as the engine running every instant."""
    plain = []

    def counting(model, state, c, tids):
        out = real(model, state, c, tids)
        plain.append(out)
        return out

    real = cohorts.own_turns
    monkeypatch.setattr(cohorts, "own_turns", counting)
    monkeypatch.setattr(stretch, "own_turns", counting)
    gangs = (("c", 30, 5), ("c", 30, 5), ("c", 30, 3))
    logs = []
    for cls in (AskStates, NoCohorts):
        state, jobs = parked_case(gangs)
        model = cls({})
        simulate(state, model, jobs, options=SimOptions(check_invariants=True, horizon=20000.0))
        logs.append(model.log)
    assert sum(plain) > 100
    assert logs[0] == logs[1]
    plain.clear()
    skipped, n = run_skipping(parked_case(gangs), True, 20000.0)
    every, none = run_skipping(parked_case(gangs), False, 20000.0)
    assert sum(plain) > 100 and n > 100 and none == 0
    assert skipped == every


def test_a_parked_chain_ends_before_a_wake_up_with_no_cohort_due():
    """At a wake-up where no live cohort is due, a call would give the parked asks their turn:
    the closed form stops before it, and leaves the model due at once (as a call with asks
    parked leaves it), so that instant is then run as a call."""
    state, jobs = parked_case((("c", 30, 15),))
    model = YuniKornModel({})
    sim = make_simulation(state, model, SimOptions(horizon=20000.0, skip_idle=False, engine="general"), False)
    sim.add_workloads(jobs)
    sim.run()
    assert model.blocks.nparked == 5
    first = model.blocks.cohort_top().due / 1_000_000
    odd = first + 22.0  # between the cohort's second and third repeats
    got = stretch._parked_chains(model, sim.state, [first, first + 15.0, odd], odd + 100.0)
    assert got == (2, first + 15.0, odd)
    assert model._due_min == to_us(first + 15.0)
    assert model.blocks.cohort_top().due == to_us(first + 30.0)


def _own_case(own: float = 90000.0) -> tuple[ClusterState, list[Workload]]:
    """``parked_case`` for one gang of 2-cpu asks in root.c, guaranteed 2 cpu, while a 1-cpu job
    of root.c runs on a node of its own: the asks would take root.c above its guarantee, so they
    are refused, ten by ten, with the rest parked."""
    delay = {"properties": {"preemption.delay": "1s"}}
    queues = [Queue("root"), Queue("root.a", "root", {"cpu": 12}, settings=delay),
              Queue("root.c", "root", {"cpu": 2}, settings=delay)]
    nodes = [Node(f"n{i}", {"cpu": 4}) for i in range(4)] + [Node("n4", {"cpu": 1})]
    jobs = [Workload(f"fill{i}", "root.a", 0.0, 40000.0 + 60 * i, (TaskGroup(1, {"cpu": 1}),)) for i in range(16)]
    jobs += [Workload("own", "root.c", 0.0, own, (TaskGroup(1, {"cpu": 1}),)),
             Workload("gang", "root.c", 30.0, 60.0, (TaskGroup(15, {"cpu": 2}),))]
    return ClusterState(["cpu"], queues, nodes), jobs


@pytest.mark.parametrize("own_ends", [False, True])
def test_a_parked_chain_asks_a_cohort_refused_in_another_world_again(own_ends):
    """A cohort refused before the world moved is run in closed form only when its asks would
    all be refused again now (``cohorts.all_refused``). Here the world moves by root.c's own job
    ending: root.c is then under its guarantee, so its asks are no longer doomed and the call at
    the cohort's instant would try to preempt: no closed form. An end that leaves the verdicts as
    they were (root.a's) moves the world too, and the closed form runs."""
    state, jobs = _own_case()
    model = YuniKornModel({})
    sim = make_simulation(state, model, SimOptions(horizon=20000.0, skip_idle=False, engine="general"), False)
    sim.add_workloads(jobs)
    sim.run()
    assert model.blocks.nparked == 5
    cohort = model.blocks.cohort_top()
    world = cohort.world
    gone = "own/0/0" if own_ends else next(t for t in sim.state.allocations if t.startswith("fill"))
    assert gone in sim.state.allocations
    sim.state.finish(gone)
    assert model._fit_world(sim.state) != world
    first = cohort.due / 1_000_000
    got = stretch._parked_chains(model, sim.state, [first, first + 15.0], first + 20.0)
    if own_ends:
        assert got is None and cohort.world == world and cohort.due == to_us(first)
    else:
        assert got == (2, first + 15.0, first + 20.0)
        assert cohort.world == model._fit_world(sim.state) and cohort.due == to_us(first + 30.0)


def test_stretches_across_an_end_that_undooms_the_asks_give_the_same_results():
    """Root.c's own job ends after an hour of refusals: from then on its asks may preempt (its
    parked asks do so at once). The stretches before, and those after with cohorts refused in
    the old world, give what the engine running every instant gives."""
    for horizon in (None, 20000.0):
        skipped, n = run_skipping(_own_case(3600.5), True, horizon)
        every, none = run_skipping(_own_case(3600.5), False, horizon)
        assert n > 0 and none == 0
        assert skipped == every
    assert any(e["kind"] == "preempt" and e["time"] == 3600.5 for e in skipped[0])


def plain_turns(model, state, members, known, fresh=frozenset()):
    """``cohorts.turns`` as the walk states it, with no early stop: per leaf, every workload
    holding a member or a parked ask, in walk order, each pending task in order; a member gets
    an attempt while the leaf has one and is parked otherwise, a parked ask gets one while the
    leaf has one."""
    blocks, wls = model.blocks, state.workloads
    member_set = set(members)
    parked = {t for t, due in blocks.blocked.items() if due == PARKED}
    holders: dict[str, set[str]] = {}
    for t in member_set | parked:
        w = t.rsplit("/", 2)[0]
        if t in state.pending.get(w, ()):
            holders.setdefault(wls[w].queue, set()).add(w)
    for t in members:  # a member no longer pending still names its leaf
        holders.setdefault(wls[t.rsplit("/", 2)[0]].queue, set())
    refuse, park, unknown, spent_early = [], [], [], False
    for leaf in sorted(holders):
        budget = MAX_PREEMPTION_ATTEMPTS
        for w in sorted(holders[leaf], key=lambda w: walk_key(wls[w])):
            for t in state.pending.get(w, ()):
                if t in member_set:
                    if budget:
                        budget -= 1
                        refuse.append(t)
                        if not known or t in fresh:
                            unknown.append(t)
                    else:
                        park.append(t)
                elif t in parked:
                    if budget:
                        budget -= 1
                        refuse.append(t)
                        unknown.append(t)
                    elif any(m.startswith(w2 + "/") for m in member_set for w2 in holders[leaf]
                             if walk_key(wls[w2]) > walk_key(wls[w])):
                        spent_early = True  # a parked ask passed over before a member's workload
    return (refuse, park, unknown), spent_early


@st.composite
def blocked_leaves(draw):
    """Workloads of one to three tasks in two leaves, at three priorities, some tasks started;
    each pending task a member of the cohort asked about, parked, or neither."""
    queues = [Queue("root"), Queue("root.c", "root"), Queue("root.d", "root")]
    state = ClusterState(["cpu"], queues, [Node("n0", {"cpu": 100})])
    model = YuniKornModel({})
    members, fresh = [], set()
    for i in range(draw(st.integers(1, 24))):
        leaf = draw(st.sampled_from(["root.c", "root.d"]))
        wl = Workload(f"w{i:02d}", leaf, float(draw(st.integers(0, 5))), 60.0,
                      (TaskGroup(draw(st.integers(1, 3)), {"cpu": 1}),), priority=draw(st.integers(0, 2)))
        state.submit(wl)
        for tid in wl.task_ids():
            role = draw(st.sampled_from(["member", "parked", "neither", "started"]))
            if role == "started":
                state.start(tid, "n0", 0.0)
            elif role != "neither":
                model.blocks.block(tid, wl, PARKED if role == "parked" else 15_000_000, False,
                                   (leaf, (("cpu", 1),)), timer=False)
                if role == "member":
                    members.append(tid)
                    if draw(st.booleans()):
                        fresh.add(tid)
    return model, state, draw(st.permutations(members)), draw(st.booleans()), frozenset(fresh)


@settings(max_examples=300, deadline=None)
@given(blocked_leaves())
def test_turns_answers_as_the_plain_walk_on_random_blocks(case):
    """``turns`` stops a leaf's walk early and, once its attempts are spent, reads only the
    members' workloads still ahead: the same answer as the plain walk, whatever the order of
    members and parked asks."""
    model, state, members, known, fresh = case
    want, spent_early = plain_turns(model, state, members, known, fresh)
    event("members' workloads after parked asks passed over" if spent_early else "none passed over")
    assert cohorts.turns(model, state, members, known, fresh) == want


@settings(max_examples=300, deadline=None)
@given(blocked_leaves())
def test_own_turns_only_where_the_walk_gives_the_cohort_every_attempt(case):
    """Where ``own_turns`` answers without the walk, the plain walk gives every live ask of the
    cohort an attempt, parks none and gives no other ask one."""
    model, state, members, known, _ = case
    c = Cohort(15_000_000, (), list(members))
    tids = model.blocks.live(c)
    own = cohorts.own_turns(model, state, c, tids)
    event("own turns" if own else "walked")
    if own:
        (refuse, park, _), _ = plain_turns(model, state, tids, known)
        assert not park and sorted(refuse) == sorted(tids)


def _leaf_with_parked(first_parked: int, started: bool = False) -> tuple[YuniKornModel, ClusterState, Cohort]:
    """One leaf: twelve one-task workloads in walk order, ten of them members of a cohort and
    two parked, the first parked one at place ``first_parked``; ``started``: the first member
    started since it was blocked (still blocked, no longer pending)."""
    state = ClusterState(["cpu"], [Queue("root"), Queue("root.c", "root")], [Node("n0", {"cpu": 100})])
    model = YuniKornModel({})
    members = []
    for i in range(12):
        wl = Workload(f"w{i:02d}", "root.c", float(i), 60.0, (TaskGroup(1, {"cpu": 1}),))
        state.submit(wl)
        tid = wl.task_ids()[0]
        parked = i in (first_parked, 11)
        model.blocks.block(tid, wl, PARKED if parked else 15_000_000, False, ("root.c", (("cpu", 1),)), timer=False)
        if not parked:
            members.append(tid)
    if started:
        state.start(members[0], "n0", 0.0)
    return model, state, Cohort(15_000_000, (), members)


@pytest.mark.parametrize("first_parked,started", [(10, False), (9, False), (0, False), (10, True)])
def test_own_turns_with_a_leaf_of_parked_asks(first_parked, started):
    """Ten members spend the leaf's attempts before the parked asks after them: answered without
    the walk, as the walk answers. A parked ask before the tenth member would take an attempt,
    and a member no longer pending gets none, so those are left to ``turns``."""
    model, state, c = _leaf_with_parked(first_parked, started)
    tids = model.blocks.live(c)
    (refuse, park, _), _ = plain_turns(model, state, tids, True)
    walked_own = not park and sorted(refuse) == sorted(tids)
    assert walked_own == (first_parked == 10 and not started)
    assert cohorts.own_turns(model, state, c, tids) == walked_own
    assert c.leaves is not None and c.leaves[0] is c.tids


def interleaved_case() -> tuple[ClusterState, list[Workload]]:
    """``parked_case`` with one-task workloads of root.c at two priorities, submitted over
    time: asks refused together sit in walk order between asks parked before them."""
    state, jobs = parked_case((("c", 30, 12),))
    jobs += [Workload(f"one{i}", "root.c", 40.0 + 9 * i, 60.0, (TaskGroup(1, {"cpu": 1}),), priority=i % 3)
             for i in range(30)]
    return state, jobs


@pytest.mark.parametrize("case", ["interleaved", "gangs"])
def test_turns_answers_as_the_plain_walk(case, monkeypatch):
    """Every ``turns`` answer of a run with asks parked, against ``plain_turns``; the interleaved
    case has calls whose leaf runs out of attempts with members' workloads still ahead."""
    seen = []

    def checked(model, state, members, known, fresh=frozenset()):
        got = real(model, state, members, known, fresh)
        want, spent_early = plain_turns(model, state, members, known, fresh)
        assert got == want
        seen.append(spent_early)
        return got

    real = cohorts.turns
    monkeypatch.setattr(cohorts, "turns", checked)
    monkeypatch.setattr(stretch, "turns", checked)
    made = interleaved_case() if case == "interleaved" else parked_case((("c", 30, 80), ("d", 37, 3), ("d", 12000, 14)))
    kept, _ = run_skipping(made, True, 20000.0)
    assert len(seen) > 10 and kept[5]
