"""The Symphony cycle over the backlog table (``symphony.sparse``, caches on) decides as the cycle over
every session (``caches: false``) where the backlog is deep: more sessions than slots, so remainder
slots go by name and most sessions deserve nothing, multi-group sessions, zero-length tasks,
priorities and ranks; shares and every pending session's reason are compared too. And
``class_deserved`` expanded to sessions is ``proportional_deserved``."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.symphony.model import SymphonyModel
from makeway.policies.symphony.rules import LOWER, LOWER_OR_EQUAL, class_deserved, proportional_deserved
from makeway.sim.engine import SimOptions, simulate
from tests.decision_log import RecordsSchedule


class Recording(RecordsSchedule, SymphonyModel):
    def queue_shares(self, state, now):
        out = super().queue_shares(state, now)
        self.log.append(f"{now!r} shares {sorted(out.items())!r}")
        for w in sorted(state.pending):
            self.log.append(f"{now!r} why {w} {self.pending_reason(state, w, now)!r}")
        return out


@st.composite
def deep(draw):
    consumers = ["a", "b"][:draw(st.integers(1, 2))]
    scope = draw(st.sampled_from([LOWER, LOWER_OR_EQUAL]))
    queues = [Queue("root")] + [Queue(q, "root", max={"slots": draw(st.integers(2, 6))} if draw(st.booleans())
                                      else None, settings={"preemptionScope": scope}) for q in consumers]
    hosts = [Node(f"h{i}", {"slots": s}) for i, s in enumerate(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))]
    workloads = []
    for i in range(draw(st.integers(10, 28))):
        groups = [TaskGroup(draw(st.integers(1, 3)), {"slots": draw(st.sampled_from([1, 1, 2, 3]))})]
        if draw(st.integers(0, 5)) == 0:
            groups.append(TaskGroup(draw(st.integers(0, 2)), {"slots": draw(st.sampled_from([1, 2]))}))
        ws = {"preemptionRank": draw(st.integers(1, 3)), "preemptive": draw(st.booleans()),
              "priority": draw(st.integers(1, 3))}
        workloads.append(Workload(f"w{draw(st.integers(0, 999)):03d}-{i}", draw(st.sampled_from(consumers)),
                                  float(draw(st.integers(0, 40))), float(draw(st.sampled_from([0, 5, 20, 60]))),
                                  tuple(groups), settings=ws))
    return queues, hosts, workloads


def _run(case, caches: bool) -> list[str]:
    queues, hosts, workloads = case
    state = ClusterState(["slots"], [Queue(q.name, q.parent, max=q.max, settings=dict(q.settings)) for q in queues],
                         [Node(n.name, dict(n.capacity)) for n in hosts])
    model = Recording({"slotResource": "slots", "caches": caches})
    simulate(state, model, list(workloads), options=SimOptions(horizon=3000, check_invariants=True))
    return model.log


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deep())
def test_sparse_cycle_decides_as_full_cycle(case):
    assert _run(case, True) == _run(case, False)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.lists(st.tuples(st.integers(1, 4), st.integers(0, 9)), max_size=30))
def test_class_deserved_is_proportional_deserved(capacity, rows):
    sessions = [(f"s{i:02d}", p, d) for i, (p, d) in enumerate(rows)]
    counts: dict[tuple[int, int], int] = {}
    for _, p, d in sessions:
        counts[(p, d)] = counts.get((p, d), 0) + 1
    cs = class_deserved(capacity, counts)
    got = {n: cs.per[(p, d)] for n, p, d in sessions}
    for w, k in cs.extra:
        for n in sorted(n for n, p, d in sessions if p == w and (p, d) in cs.active)[:k]:
            got[n] += 1
    assert got == proportional_deserved(capacity, sessions)
