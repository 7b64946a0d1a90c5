"""Random small cases for every model, and runs of them with and without the models' caches.

Shared by ``test_no_starvation.py`` and ``test_invariants.py``. A case is plain data (queues, nodes
and config changes are rebuilt per run, since the state mutates them); each model gets the queue
and model settings it needs to run its preemption logic (Kueue cohorts and preemption policies,
YuniKorn guarantees and short preemption delays, YTsaurus short starvation timeouts, Symphony
preemptive session types), as in examples/*/cluster.yaml.

``run(case, full=True)`` runs the model with ``caches: false``, its reference path: every cache
switched off (the default model's backlog, the HPC models' incremental order and empty-cluster fit,
Symphony's slot counts, and the Kueue, YuniKorn and YTsaurus caches their own tests name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState
from makeway.core.placement import first_fit
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange
from tests.decision_log import record

# (name used in test ids, registry name, model settings added to every case)
MODELS = {
    "none": ("none", {}),
    "fifo-strict": ("fifo-strict", {}),
    "easy-backfill": ("easy-backfill", {}),
    "kueue": ("kueue", {}),
    "kueue-fair": ("kueue", {"fairSharing": {}}),
    "yunikorn": ("yunikorn", {"preemptionEnabled": True}),
    "ytsaurus": ("ytsaurus", {}),
    "symphony": ("symphony", {}),
}

# A run that processes more events than this, or reaches this simulated time, is taken to never
# end: cases are a dozen workloads of at most a minute each, submitted in the first minute.
MAX_EVENTS = 60_000
MAX_TIME = 50_000.0


class NeverEnds(Exception):
    """The run passed MAX_EVENTS or MAX_TIME: a livelock, not a slow run."""




@dataclass
class Case:
    model: str  # a key of MODELS
    resources: list[str]
    queues: list[tuple[str, str | None, dict | None, dict | None, float, dict]]  # name, parent, g, max, w, settings
    nodes: list[tuple[str, dict]]
    workloads: list[Workload]
    changes: list[ConfigChange] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    def state(self) -> ClusterState:
        queues = [Queue(n, p, dict(g) if g else g, dict(m) if m else m, w, settings=_copy(s))
                  for n, p, g, m, w, s in self.queues]
        return ClusterState(self.resources, queues, [Node(n, dict(c)) for n, c in self.nodes])

    def leaves(self) -> list[str]:
        parents = {p for _, p, *_ in self.queues}
        return [q[0] for q in self.queues if q[0] not in parents]


def _copy(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


# -- generation ----------------------------------------------------------------------------------

SESSION_TYPES = {"batch": {"preemptive": False, "preemptionRank": 10},
                 "peer": {"preemptive": True, "preemptionRank": 10},
                 "urgent": {"preemptive": True, "preemptionRank": 20}}


@st.composite
def cases(draw: Any, model: str, invariants: bool = False) -> Case:
    """A small cluster and trace for ``model`` where every workload fits the empty cluster and its
    queues' max (so every workload can start); with ``invariants``, also non-preemptible work,
    grace periods, valid config changes and a few workloads that can never start."""
    registry, base = MODELS[model]

    def chance(percent: int) -> bool:
        return draw(st.integers(0, 99)) < percent

    resources = ["cpu", "mem"] if chance(40) else ["cpu"]
    nodes = [(f"n{i}", {"cpu": draw(st.sampled_from([2, 4, 8])),
                        **({"mem": draw(st.sampled_from([4, 8, 16]))} if "mem" in resources else {})})
             for i in range(draw(st.integers(1, 4)))]
    total = {r: sum(c[r] for _, c in nodes) for r in resources}
    slot_only = registry == "symphony"  # Symphony's only limit is the consumer's slots (cpu)

    def vec(lo_frac: float, hi_frac: float) -> dict:
        out = {}
        for r in (["cpu"] if slot_only else resources):
            lo, hi = max(1, int(total[r] * lo_frac)), max(1, int(total[r] * hi_frac))
            out[r] = draw(st.integers(lo, max(lo, hi)))
        return out

    n_leaves = draw(st.integers(2, 3 if registry == "symphony" else 4))
    nested = n_leaves >= 3 and chance(30) and registry != "symphony"
    leaf_names = [f"root.q{i}" for i in range(n_leaves)]
    parent_of = {q: ("root.g" if nested and i < 2 else "root") for i, q in enumerate(leaf_names)}
    queue_rows: list[tuple] = []
    kueue = registry == "kueue"
    yunikorn = registry == "yunikorn"
    inner = ["root"] + (["root.g"] if nested else [])
    for name in inner:
        mx = vec(0.6, 1.0) if (not kueue and name != "root" and chance(30)) else None
        s: dict = {}
        if yunikorn:
            s = {"properties": {"preemption.delay": draw(st.sampled_from(["1s", "2s", "5s"]))}}
        queue_rows.append((name, None if name == "root" else "root", None, mx, 1.0, s))
    for i, name in enumerate(leaf_names):
        g = mx = None
        s = {}
        weight = draw(st.sampled_from([1.0, 1.0, 2.0, 3.0]))
        if kueue:
            g = vec(0.2, 0.6)
            if chance(50):
                mx = {r: v + draw(st.integers(0, total[r])) for r, v in g.items()}
            s = {"preemption": {"withinClusterQueue": draw(st.sampled_from(["LowerPriority", "LowerPriority",
                                                                            "LowerOrNewerEqualPriority", "Never"])),
                                "reclaimWithinCohort": draw(st.sampled_from(["Any", "Any", "LowerPriority", "Never"]))}}
            if not base and s["preemption"]["reclaimWithinCohort"] != "Never" and chance(30):
                s["preemption"]["borrowWithinCohort"] = {"policy": "LowerPriority"}
        elif yunikorn:
            g = vec(0.2, 0.6) if chance(80) else None
            mx = ({r: v + draw(st.integers(0, total[r])) for r, v in (g or vec(0.3, 1.0)).items()}
                  if chance(50) else None)
            props = {"preemption.delay": draw(st.sampled_from(["1s", "1s", "3s"]))}
            if chance(20):
                props["priority.offset"] = str(draw(st.integers(-2, 2)))
            if chance(50):
                props["quota.preemption.delay"] = draw(st.sampled_from(["1s", "3s"]))
            s = {"properties": props}
        elif registry == "ytsaurus":
            g = vec(0.1, 0.5) if chance(40) else None
            mx = vec(0.5, 1.0) if chance(25) else None
            if g and mx:
                mx = {r: max(v, g.get(r, 0)) for r, v in mx.items()}
            if chance(25):
                s["mode"] = "fifo"
            if chance(15):
                s["allow_normal_preemption"] = False
        elif registry == "symphony":
            mx = vec(0.5, 1.0) if chance(25) else None
            s = {"sessionTypes": SESSION_TYPES,
                 "preemptionScope": draw(st.sampled_from(["LowerOrEqualRankedSessions", "LowerRankedSessions"]))}
        else:
            mx = vec(0.3, 1.0) if chance(40) else None
            g = vec(0.1, 0.4) if chance(30) else None
            if g and mx:
                mx = {r: max(v, g.get(r, 0)) for r, v in mx.items()}
        queue_rows.append((name, parent_of[name], g, mx, weight, s))

    settings = dict(base)
    if yunikorn:
        settings["quotaPreemptionEnabled"] = chance(70)
    elif registry == "ytsaurus":
        settings.update({
            "fair_share_update_period": draw(st.sampled_from([1.0, 2.0])),
            "heartbeat_period": draw(st.sampled_from([1.0, 2.0])),
            "heartbeat_splay": draw(st.sampled_from([0.0, 0.5])),
            "preemptive_scheduling_backoff": draw(st.sampled_from([0.5, 2.0])),
            "fair_share_starvation_timeout": draw(st.sampled_from([1.0, 3.0])),
            "fair_share_aggressive_starvation_timeout": draw(st.sampled_from([3.0, 8.0])),
            "enable_aggressive_starvation": chance(30),
        })
    elif registry == "symphony":
        settings["preemptionCriteria"] = draw(st.sampled_from(["MostOverAllocatedSession", "MostRecentTask"]))

    case = Case(model, resources, queue_rows, nodes, [], [], settings)
    empty = case.state()
    limits = _limits(case)
    workloads: list[Workload] = []
    for j in range(draw(st.integers(3, 12))):
        groups = []
        for _ in range(1 if chance(75) else 2):
            req = {"cpu": draw(st.sampled_from([1, 1, 2, 3, 4]))}
            if "mem" in resources and chance(70):
                req["mem"] = draw(st.sampled_from([1, 2, 4, 6]))
            groups.append(TaskGroup(draw(st.integers(1, 3)), req))
        ws: dict = {}
        if registry == "symphony":
            ws["sessionType"] = draw(st.sampled_from(["batch", "peer", "urgent"]))
        queue = draw(st.sampled_from(leaf_names))
        # arrivals in bursts, so that queues compete and models preempt
        submit = float(draw(st.sampled_from([0, 0, 0, 0, 1, 2, 5, 10, 20, 30])))
        # shorter runs for YTsaurus, whose heartbeats and fair share updates cost every simulated second
        runs = [1, 5, 5, 10, 20] if registry == "ytsaurus" else [1, 5, 5, 20, 60]
        wl = Workload(f"w{j}", queue, submit, float(draw(st.sampled_from(runs))), tuple(groups),
                      priority=draw(st.sampled_from([0, 0, 1, 2, 3] if submit == 0 else [0, 2, 3, 3])),
                      preemptible=not (invariants and chance(15)),
                      grace=float(draw(st.sampled_from([0, 0, 0, 1.5, 4]))) if invariants else 0.0,
                      settings=ws)
        if _can_start(empty, wl, limits, case):
            workloads.append(wl)
        elif invariants and chance(30):
            workloads.append(wl)  # one that can never start: it must end pending with a reason
        else:  # the smallest workload of the same queue, priority and times instead
            small = Workload(wl.id, wl.queue, wl.submit, wl.duration, (TaskGroup(1, {"cpu": 1}),), wl.priority,
                             wl.preemptible, wl.grace, settings=ws)
            if _can_start(empty, small, limits, case):
                workloads.append(small)
    if not workloads:
        workloads.append(Workload("w-min", leaf_names[0], 0.0, 5.0, (TaskGroup(1, {"cpu": 1}),),
                                  settings={"sessionType": "peer"} if registry == "symphony" else {}))
    workloads.sort(key=lambda w: (w.submit, w.id))
    case.workloads = workloads
    if invariants:
        case.changes = _changes(draw, case, chance)
    return case


def _limits(case: Case) -> dict[str, dict]:
    """Per leaf, what one workload may ask in all: the min of its queues' max, and for Kueue the
    cohort's total nominal quota (what it can ever borrow) too."""
    rows = {n: (p, g, m) for n, p, g, m, _, _ in case.queues}
    out = {}
    kueue = MODELS[case.model][0] == "kueue"
    nominal_total: dict = {}
    if kueue:
        for n, (p, g, m) in rows.items():
            for r, v in (g or {}).items():
                nominal_total[r] = nominal_total.get(r, 0) + v
    for leaf in case.leaves():
        lim: dict = dict(nominal_total)
        q: str | None = leaf
        while q is not None:
            p, g, m = rows[q]
            for r, v in (m or {}).items():
                lim[r] = min(lim.get(r, v), v)
            q = p
        out[leaf] = lim
    return out


def _can_start(empty: ClusterState, wl: Workload, limits: dict, case: Case) -> bool:
    total = wl.total()
    lim = limits[wl.queue]
    if MODELS[case.model][0] == "symphony":
        lim = {"cpu": lim["cpu"]} if "cpu" in lim else {}
        # a session's first task is enough to make progress there; its tasks are placed one by one
        total = max((g.resources for g in wl.groups), key=lambda r: r.get("cpu", 0))
    if any(v > lim[r] for r, v in total.items() if r in lim):
        return False
    if any(r not in empty.resources for g in wl.groups for r in g.resources):
        return False
    tasks = wl.task_ids()
    probe = ClusterState(empty.resources, [Queue("root")], [Node(n, dict(x.capacity)) for n, x in empty.nodes.items()])
    probe.submit(Workload(wl.id, "root", 0.0, 1.0, wl.groups))
    return first_fit(probe, tasks, nodes=list(probe.nodes)) is not None


def _changes(draw: Any, case: Case, chance: Any) -> list[ConfigChange]:
    """Valid config events only (the config file's rule): a queue's max never below its guarantee."""
    if not chance(60):
        return []
    rows = {n: [g, m] for n, _, g, m, _, _ in case.queues}
    names = [n for n, *_ in case.queues if n != "root"]
    total = {r: sum(c[r] for _, c in case.nodes) for r in case.resources}
    slot_only = MODELS[case.model][0] == "symphony"
    out = []
    for t in sorted(draw(st.lists(st.integers(1, 40), min_size=1, max_size=3))):
        q = draw(st.sampled_from(names))
        g, m = rows[q]
        kind = draw(st.sampled_from(["max", "max", "guaranteed", "weight", "unset-max"]))
        if kind == "weight":
            out.append(ConfigChange(float(t), q, {"weight": draw(st.sampled_from([0.5, 1.0, 4.0]))}))
            continue
        if kind == "unset-max":
            rows[q][1] = None
            out.append(ConfigChange(float(t), q, {"max": None}))
            continue
        keys = ["cpu"] if slot_only else case.resources
        if kind == "max":
            new = {r: max((g or {}).get(r, 0), draw(st.integers(0, total[r]))) for r in keys}
            rows[q][1] = new
        else:
            if slot_only:
                continue
            new = {r: draw(st.integers(0, total[r])) for r in keys}
            if m:
                new = {r: min(v, m.get(r, v)) for r, v in new.items()}
            rows[q][0] = new
        out.append(ConfigChange(float(t), q, {kind: new}))
    return out


# -- running -------------------------------------------------------------------------------------

def _recorded(model: Any) -> list[str]:
    """Log every decision the model returns (schedule, heartbeat, config change) on the instance."""
    log: list[str] = []
    for name in ("schedule", "on_config_change"):
        orig = getattr(model, name)

        def wrapped(state, *args, _orig=orig, _name=name):
            out = _orig(state, *args)
            if out:
                log.append(f"{args[-1]!r} {_name}")
            record(log, out, args[-1])
            return out
        setattr(model, name, wrapped)
    orig_hb = model.heartbeat

    def heartbeat(state, node, now):
        out = orig_hb(state, node, now)
        if out:
            log.append(f"{now!r} H {node}")
        record(log, out, now)
        return out
    model.heartbeat = heartbeat
    return log


def run(case: Case, full: bool = False, horizon: float | None = None, check: bool = True,
        state: ClusterState | None = None):
    """Simulate ``case``; returns (recorder, decision log). Raises NeverEnds past the guard."""
    registry, _ = MODELS[case.model]
    model = load_model(registry, {**case.settings, "caches": False} if full else dict(case.settings))
    log = _recorded(model)

    def guard(now: float, events: int) -> None:
        if events > MAX_EVENTS or now > MAX_TIME:
            raise NeverEnds(f"{case.model}: {events} events, t={now}: the run does not end")

    rec = simulate(state or case.state(), model, list(case.workloads), list(case.changes),
                   SimOptions(horizon=horizon, check_invariants=check, record_starts=True, progress=guard))
    return rec, log
