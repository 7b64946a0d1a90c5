"""The YuniKorn model's caches and shortcuts never change a decision (hypothesis).

The fast pass keeps work between calls and between asks: allocation, leaf and node views kept
between partition builds, per-leaf candidate filters, "no node fits" / "no headroom" verdicts per
version, asks blocked until their version moves or their delay is due, whole calls skipped when
nothing moved, no node scan before preemption when the free index found no fit. The preemptor
takes shortcuts: the guarantee check in closed form, the node search stopped at the first index-0
node in name order, keyed sorts. ``FullEvaluation`` runs the reference pass (a fresh partition
view and ``try_allocate`` for every ask, every call, no preemptor shortcut): the model with
``caches: false``.
On random clusters (nested queues, guarantees and maxes in cpu and memory, fences, priority
offsets, grace periods, bursty multi-task arrivals, lowered maxes with quota preemption) both
must decide exactly the same, at the same times, in the same order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.sim.engine import SimOptions, Simulation, make_simulation
from makeway.sim.trace import ConfigChange
from tests.decision_log import RecordsSchedule

GiB = 2**30


class Recording(RecordsSchedule, YuniKornModel):
    """Logs every decision and every wake-up asked for: a call the other model would not have had
    can decide something (an ask holding a reservation is placed at the next call), so the
    wake-ups must match too."""


    def next_wakeup(self, state, now):
        wake = super().next_wakeup(state, now)
        self.log.append(f"{now!r} W {wake!r}")
        return wake

    def skip_wakes(self, state, wakes, limit):
        return None  # every call is logged here; runs with stretches skipped: ``test_cohorts``


class FullEvaluation(Recording):
    """The ground truth for the caches: the model with ``caches: false`` (no view, verdict or block
    kept between asks or calls, no call skipped, no preemptor shortcut)."""

    def __init__(self, settings: dict | None = None):
        super().__init__({**(settings or {}), "caches": False})


@st.composite
def clusters(draw: Any) -> dict:
    """A plain description (rebuilt per run: the state mutates queues and nodes)."""
    def chance(percent: int) -> bool:
        return draw(st.integers(0, 99)) < percent

    def res(lo: int, hi: int) -> dict:
        out = {}
        if chance(75):
            out["cpu"] = draw(st.integers(lo, hi))
        if chance(35):
            out["memory"] = draw(st.integers(lo, hi)) * 4 * GiB
        return out

    def props() -> dict:
        p: dict = {}
        # "0s" (as in the throughput benchmark) is not read as zero: it falls back to the 30 s default
        delay = draw(st.sampled_from(["0s", "1s", "1s", "5s", None]))
        if delay is not None:
            p["preemption.delay"] = delay
        if chance(12):
            p["preemption.policy"] = draw(st.sampled_from(["fence", "disabled"]))
        if chance(12):
            p["priority.policy"] = "fence"
        if chance(20):
            p["priority.offset"] = str(draw(st.integers(-3, 3)))
        if chance(50):
            p["quota.preemption.delay"] = draw(st.sampled_from(["1s", "3s", "0s"]))
        return p

    queues: list[tuple] = [("root", None, res(4, 16) if chance(10) else None, res(6, 16) if chance(20) else None,
                            {"quota.preemption.delay": "2s"} if chance(50) else {})]
    parents = ["root"]
    if chance(50):
        for i in range(draw(st.integers(1, 2))):
            above = draw(st.sampled_from(parents))
            parents.append(f"{above}.p{i}")
            queues.append((parents[-1], above, res(1, 8) if chance(50) else None,
                           res(4, 16) if chance(50) else None, props()))
    leaves = []
    for i in range(draw(st.integers(2, 5))):
        parent = draw(st.sampled_from(parents))
        leaves.append(f"{parent}.l{i}")
        queues.append((leaves[-1], parent, res(1, 8) if chance(75) else None, res(2, 12) if chance(50) else None,
                       props()))
    # node order is not name order (the preemptor's node choice goes by name); gpu is not one of
    # the state's indexed resources, so asks for it take the node scan instead of the free index
    names = draw(st.permutations(["n1", "n10", "n2", "n3"]))[:draw(st.integers(1, 4))]
    nodes = [(name, {"cpu": draw(st.integers(2, 8)), "memory": draw(st.integers(2, 8)) * 4 * GiB,
                     **({"gpu": draw(st.integers(1, 2))} if chance(40) else {})})
             for name in names]
    # rarely, an hour-long grace: a reservation waiting on its victims outlives its timeout
    long_grace = 4000.0 if chance(12) else 4.0
    # some runs in waves: more asks due at one instant than a leaf's preemption attempts per pass
    gaps = [0.0] * 12 + [20.0] if chance(30) else [0.0, 0.0, 0.0, 0.5, 1.0, 3.0]
    jobs = []
    t = 0.0
    for j in range(draw(st.integers(20, 70))):
        t += draw(st.sampled_from(gaps))
        s: dict = {}
        knob = draw(st.integers(0, 15))
        if knob == 0:
            s["allowPreemption"] = False
        elif knob == 1:
            s["allowPreemptOther"] = False
        elif knob == 2:
            s["originator"] = True
        elif knob in (3, 4):
            s["requiredNode"] = draw(st.sampled_from(nodes))[0]
        groups = []
        for _ in range(1 if chance(80) else 2):
            r = {"cpu": draw(st.sampled_from([0.5, 1, 1, 2, 3]))}
            if chance(85):
                r["memory"] = draw(st.sampled_from([0, 1, 2, 4, 8])) * GiB
            if chance(10):
                r["gpu"] = 1
            groups.append(TaskGroup(draw(st.integers(1, 3)), r))
        jobs.append(Workload(f"w{j}", draw(st.sampled_from(leaves)), t,
                             draw(st.sampled_from([2.0, 10.0, 30.0, 90.0])),
                             tuple(groups), draw(st.sampled_from([0, 0, 1, 2, 5])), preemptible=chance(94),
                             grace=draw(st.sampled_from([0.0, 0.0, 0.0, 1.5, 4.0, long_grace])),
                             settings=s))

    def when() -> float:
        return draw(st.sampled_from(jobs)).submit + draw(st.sampled_from([0.5, 1, 5]))

    # lowered maxes (quota preemption), and now and then a guarantee, max or property rewritten
    changes = []
    capped = [(name, m) for name, _, _, m, _ in queues[1:] if m]
    for _ in range(draw(st.integers(1, 2)) if capped and chance(70) else 0):
        name, m = draw(st.sampled_from(capped))
        div = draw(st.integers(2, 4))
        lowered = {k: max(1, v // div) if k == "cpu" else max(1, v // (4 * GiB) // div) * 4 * GiB for k, v in m.items()}
        changes.append(ConfigChange(when(), name, {"max": lowered}))
    if chance(25):
        name = draw(st.sampled_from([q[0] for q in queues[1:]]))
        what = draw(st.sampled_from(["guaranteed", "max", "settings"]))
        if what == "settings":
            value: Any = {"properties": props()}
        else:
            value = res(1, 10) or None
        changes.append(ConfigChange(when(), name, {what: value}))
    model_settings = {"quotaPreemptionEnabled": chance(75), "preemptionEnabled": chance(92)}
    return {"queues": queues, "nodes": nodes, "jobs": jobs, "changes": changes, "settings": model_settings}


def run(cls: type, case: dict) -> list[str]:
    queues = [Queue(name, parent, dict(g) if g else None, dict(m) if m else None,
                    settings={"properties": dict(p)}) for name, parent, g, m, p in case["queues"]]
    nodes = [Node(n, dict(cap)) for n, cap in case["nodes"]]
    model = cls(dict(case["settings"]))
    changes = list(case["changes"])
    sim = make_simulation(ClusterState(["cpu", "memory"], queues, nodes), model, SimOptions(check_invariants=True),
                          bool(changes))
    assert isinstance(sim, Simulation)
    # what ``simulate`` runs, without the recorder's pending reasons: they are not compared here
    # (both models answer them read-only), and they were a sixth of this test's cost
    sim.recorder.reasons = None
    sim.add_workloads(list(case["jobs"]))
    sim.add_changes(changes)
    sim.run()
    return model.log


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_caches_decide_as_full_evaluation(case):
    log = run(Recording, case)
    event("ask-triggered preemption" if any(" P " in line and "quota-decrease" not in line for line in log)
          else "no ask-triggered preemption")
    assert log == run(FullEvaluation, case)


def test_reservation_timeout_decides_as_full_evaluation():
    """A reservation that outlives its hour is dropped; that must reopen its node to asks the
    caches had marked as not fitting anywhere (rare in the random runs: it takes an hour-long
    grace and nothing else freeing up)."""
    delay = {"preemption.delay": "1s"}
    case = {"queues": [("root", None, None, None, {}), ("root.a", "root", {"cpu": 4}, None, delay),
                       ("root.b", "root", None, None, delay)],
            "nodes": [("n1", {"cpu": 5})],
            "jobs": [Workload("victim", "root.b", 0, 100_000, (TaskGroup(3, {"cpu": 1}),), grace=5000),
                     Workload("ask", "root.a", 1, 10, (TaskGroup(1, {"cpu": 3}),)),
                     Workload("waiter", "root.b", 2, 10, (TaskGroup(1, {"cpu": 2}),))],
            "changes": [], "settings": {}}
    log = run(Recording, case)
    # the ask reserves n1 at 2 s; the waiter's retries (every 15 s from 3 s) find it dropped at 3603 s
    assert "3603.0 S waiter/0/0 n1" in log
    assert log == run(FullEvaluation, case)


def test_release_mid_walk_leaves_no_stale_wakeup():
    """A pinned ask placed off its reserved node frees the reservation mid-walk; asks blocked
    behind it are walked again and may start. Their timers once went into the wake-up anyway, and
    the extra call that woke at x's old timer (6 s) placed p2 from its reservation ten seconds
    before the evaluation without caches next looks (z's retry at 16.5 s)."""
    case = {"queues": [("root", None, None, None, {}),
                       ("root.x", "root", None, None, {"preemption.delay": "5s"}),
                       ("root.z", "root", None, None, {"preemption.delay": "500ms"})],
            "nodes": [("a", {"cpu": 4, "gpu": 1}), ("b", {"cpu": 4}), ("c", {"cpu": 1})],
            # p fits only a (gpu) but is pinned to b: it reserves b, then takes a at the next call
            "jobs": [Workload("filler", "root.x", 0, 50, (TaskGroup(1, {"cpu": 3}),)),
                     Workload("p", "root.x", 1, 50, (TaskGroup(1, {"cpu": 1, "gpu": 1}),),
                              settings={"requiredNode": "b"}),
                     Workload("x", "root.x", 1, 50, (TaskGroup(1, {"cpu": 2}),)),
                     Workload("z", "root.z", 1, 50, (TaskGroup(1, {"cpu": 4}),)),
                     Workload("p2", "root.x", 1.5, 50, (TaskGroup(1, {"cpu": 2}),),
                              settings={"requiredNode": "c"})],
            "changes": [], "settings": {}}
    log = run(Recording, case)
    assert "1.5 S x/0/0 b" in log and "16.5 S p2/0/0 b" in log
    assert log == run(FullEvaluation, case)
