"""The Symphony model's caches never change a decision (hypothesis): the no-fit memo kept across
sessions of a consumer while the plan only takes, the consumer's allocated total kept as the views
move, the before-values of a preemption read only for the sessions it touches, the open sessions
read from the allocations, and ``queue_shares`` reused while no epoch moves. On random slot
clusters with several consumers, multi-slot tasks, ranks, priorities and both preemption scopes,
the model and the same model with ``caches: false`` decide exactly the same and sample the same
shares. ``proportional_deserved`` in integers gives what the rational water-filling gives."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.symphony.model import SymphonyModel
from makeway.policies.symphony.rules import LOWER, LOWER_OR_EQUAL, proportional_deserved
from makeway.sim.engine import SimOptions, simulate
from tests.decision_log import RecordsSchedule


class Recording(RecordsSchedule, SymphonyModel):
    def queue_shares(self, state, now):
        out = super().queue_shares(state, now)
        self.log.append(f"{now!r} shares {sorted(out.items())!r}")
        return out


@st.composite
def cases(draw):
    consumers = ["a", "b", "c"][:draw(st.integers(1, 3))]
    scope = draw(st.sampled_from([LOWER, LOWER_OR_EQUAL]))
    sharing = draw(st.sampled_from(["none", "host"]))
    queues = [Queue("root")] + [Queue(q, "root", max={"slots": draw(st.integers(3, 12))} if draw(st.booleans())
                                      else None, settings={"preemptionScope": scope, "slotSharing": sharing}) for q in consumers]
    hosts = [Node(f"h{i}", {"cpu": s, "slots": s}) for i, s in
             enumerate(draw(st.lists(st.integers(2, 4), min_size=2, max_size=4)))]
    workloads = []
    for i in range(draw(st.integers(2, 14))):
        size = draw(st.sampled_from([1, 2, 2, 3]))
        ws = {"preemptionRank": draw(st.integers(1, 4)), "preemptive": draw(st.booleans()),
              "priority": draw(st.integers(1, 3))}
        workloads.append(Workload(f"w{i}", draw(st.sampled_from(consumers)), float(draw(st.integers(0, 60))),
                                  float(draw(st.integers(5, 80))),
                                  (TaskGroup(draw(st.integers(1, 5)), {"cpu": size, "slots": size}),),
                                  settings=ws))
    return queues, hosts, workloads


def _run(case, caches: bool) -> list[str]:
    queues, hosts, workloads = case
    state = ClusterState(["cpu", "slots"], [Queue(q.name, q.parent, max=q.max, settings=dict(q.settings))
                                            for q in queues], [Node(n.name, dict(n.capacity)) for n in hosts])
    model = Recording({"slotResource": "slots", "caches": caches})
    simulate(state, model, list(workloads), options=SimOptions(horizon=2000, check_invariants=True))
    return model.log


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_caches_decide_as_full_evaluation(case):
    assert _run(case, True) == _run(case, False)


def _rational(capacity, sessions):
    """The water-filling with exact rational shares, as it was written first."""
    items = sorted(((n, max(int(p), 1), max(int(d), 0)) for n, p, d in sessions), key=lambda s: s[0])
    deserved = {n: 0 for n, _, _ in items}
    active = [s for s in items if s[2] > 0]
    remaining = max(int(capacity), 0)
    while remaining > 0 and active:
        total_w = sum(w for _, w, _ in active)
        share = {n: Fraction(remaining * w, total_w) for n, w, _ in active}
        capped = [s for s in active if share[s[0]] >= s[2] - deserved[s[0]]]
        if capped:
            for n, _, d in capped:
                remaining -= d - deserved[n]
                deserved[n] = d
            names = {s[0] for s in capped}
            active = [s for s in active if s[0] not in names]
            continue
        given = 0
        for n, _, _ in active:
            whole = share[n].numerator // share[n].denominator
            deserved[n] += whole
            given += whole
        for n, _, _ in sorted(active, key=lambda s: (-(share[s[0]] - int(share[s[0]])), -s[1], s[0]))[:remaining - given]:
            deserved[n] += 1
        remaining = 0
    return deserved


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 60), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 30)), max_size=12))
def test_integer_water_filling_matches_rational(capacity, rows):
    sessions = [(f"s{i}", p, d) for i, (p, d) in enumerate(rows)]
    assert proportional_deserved(capacity, sessions) == _rational(capacity, sessions)
