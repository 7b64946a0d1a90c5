"""Seeded simulations whose full event logs pin the YuniKorn model's decisions.

Used to check that the fast scheduling path decides exactly what the reference (rebuild-everything)
path decides: the same starts, preemptions with reasons, notes and finishes, at the same times.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any, Callable

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange

REPO = Path(__file__).resolve().parents[2]


def _jobs(rng: random.Random, n: int, queues: list[str], rate: float, *, grace: bool = False,
          knobs: bool = False, pin: list[str] | None = None) -> list[Workload]:
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        cpu = rng.randint(1, 4)
        settings: dict[str, Any] = {}
        if knobs:
            if rng.random() < 0.1:
                settings["allowPreemption"] = False
            if rng.random() < 0.1:
                settings["allowPreemptOther"] = False
            if rng.random() < 0.1:
                settings["originator"] = True
        if pin and rng.random() < 0.05:
            settings["requiredNode"] = rng.choice(pin)
            cpu = 1
        count = rng.choice((1, 1, 1, 2, 3))
        out.append(Workload(f"j{i}", queues[i % len(queues)], round(t, 3), round(rng.uniform(20, 200), 1),
                            (TaskGroup(count, {"cpu": cpu, "memory": cpu * 4 * 2**30}),),
                            rng.choice((0, 0, 0, 50, 100)), preemptible=rng.random() > 0.05 if knobs else True,
                            grace=rng.choice((0.0, 0.0, 5.0)) if grace else 0.0, settings=settings))
    return out


def flat(seed: int, *, grace: bool = False, knobs: bool = False, quota: bool = False, n: int = 300
         ) -> tuple[ClusterState, list[Workload], list[ConfigChange], dict[str, Any]]:
    """Four leaves under root on 12 nodes, offered load above capacity so asks preempt."""
    rng = random.Random(seed)
    props = [{"preemption.delay": "0s"}, {"preemption.delay": "5s"}, {"preemption.delay": "20s",
             "priority.offset": "10"}, {"preemption.policy": "disabled"} if knobs else {}]
    qs = [Queue("root")]
    for i in range(4):
        p = dict(props[i])
        if quota:
            p["quota.preemption.delay"] = "10s"
        qs.append(Queue(f"q{i}", "root", guaranteed={"cpu": 24, "memory": 96 * 2**30},
                        max={"cpu": 96} if quota else None, settings={"properties": p}))
    nodes = [Node(f"n{i}", {"cpu": 8, "memory": 32 * 2**30}) for i in range(12)]
    state = ClusterState(["cpu", "memory"], qs, nodes)
    jobs = _jobs(rng, n, [f"q{i}" for i in range(4)], 1.0, grace=grace, knobs=knobs,
                 pin=["n0", "n5"] if knobs else None)
    changes = []
    settings: dict[str, Any] = {}
    if quota:
        settings["quotaPreemptionEnabled"] = True
        changes = [ConfigChange(60.0, "q0", {"max": {"cpu": 8}}), ConfigChange(90.0, "q1", {"max": {"cpu": 12}}),
                   ConfigChange(150.0, "q0", {"max": {"cpu": 64}})]
    return state, jobs, changes, settings


def nested(seed: int) -> tuple[ClusterState, list[Workload], list[ConfigChange], dict[str, Any]]:
    """A fenced subtree, priority offsets and fences, fractional cpu, two resource types."""
    rng = random.Random(seed)
    qs = [Queue("root"),
          Queue("root.a", "root", guaranteed={"cpu": 16}, settings={"properties": {"preemption.policy": "fence"}}),
          Queue("root.a.x", "root.a", guaranteed={"cpu": 8}, settings={"properties": {"preemption.delay": "3s"}}),
          Queue("root.a.y", "root.a", guaranteed={"cpu": 4},
                settings={"properties": {"priority.policy": "fence", "priority.offset": "5"}}),
          Queue("root.b", "root", guaranteed={"cpu": 12}, max={"cpu": 40},
                settings={"properties": {"preemption.delay": "1s"}}),
          Queue("root.c", "root", settings={"properties": {"priority.offset": "-20"}})]
    nodes = [Node(f"n{i}", {"cpu": 6, "memory": 24 * 2**30}) for i in range(8)]
    state = ClusterState(["cpu", "memory"], qs, nodes)
    jobs = []
    t = 0.0
    for i in range(250):
        t += rng.expovariate(0.8)
        q = rng.choice(["root.a.x", "root.a.y", "root.b", "root.c"])
        cpu = rng.choice((0.5, 1, 1.5, 2, 3))
        jobs.append(Workload(f"w{i}", q, round(t, 2), round(rng.uniform(10, 150), 1),
                             (TaskGroup(rng.choice((1, 2)), {"cpu": cpu, "memory": 2**30}),),
                             rng.choice((0, 1, 10, 100))))
    return state, jobs, [], {}


def example() -> tuple[ClusterState, list[Workload], list[ConfigChange], dict[str, Any]]:
    from makeway.config import build_state, load_config
    from makeway.sim.trace import parse_record
    base = REPO / "examples" / "yunikorn"
    cfg = load_config(base / "cluster.yaml")
    state = build_state(cfg)
    jobs, changes = [], []
    for line in (base / "trace.jsonl").read_text().splitlines():
        if line.strip():
            item = parse_record(json.loads(line))
            (changes if isinstance(item, ConfigChange) else jobs).append(item)
    return state, jobs, changes, dict(cfg.preemption.settings)


SCENARIOS: dict[str, Callable[[], tuple]] = {
    "example": example,
    "flat-1": lambda: flat(1),
    "flat-2-grace": lambda: flat(2, grace=True),
    "flat-3-knobs": lambda: flat(3, knobs=True),
    "flat-4-quota": lambda: flat(4, quota=True, grace=True, n=120),
    "nested-5": lambda: nested(5),
}


def run(name: str, **extra_settings: Any) -> list[dict]:
    from makeway.policies.yunikorn.model import YuniKornModel
    state, jobs, changes, settings = SCENARIOS[name]()
    rec = simulate(state, YuniKornModel({**settings, **extra_settings}), jobs, changes,
                   SimOptions(record_starts=True, check_invariants=True))
    return rec.events


def digest(events: list[dict]) -> str:
    return hashlib.sha256(json.dumps(events, sort_keys=True, default=str).encode()).hexdigest()


if __name__ == "__main__":  # record golden digests: python tests/yunikorn_queue/scenarios.py
    out = {}
    for name in SCENARIOS:
        ev = run(name)
        kinds: dict[str, int] = {}
        for e in ev:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        out[name] = {"digest": digest(ev), "kinds": kinds}
        print(name, kinds)
    (Path(__file__).parent / "golden.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
