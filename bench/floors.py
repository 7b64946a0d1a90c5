"""Where the floor is for issue 20's unmet speed targets: the same workloads with no preemption at
all, on the general engine and on the compiled core, against the preemption model's run and the target.

    python bench/floors.py [--scale 1.0] [--out bench/floors-results.json]

For the Kueue baseline and the YuniKorn preemption scenario (the workloads of ``makeway bench``),
three runs of the same jobs: the preemption model on the general engine (the one every preemption
model runs on); ``none`` (FIFO placement, no preemption) on the general engine; ``none`` on the
struct-of-arrays core (``sim/fast``, compiled where numba is installed), which is how the default
model met its own throughput target (loaded before any run, and taken even below its
``MIN_JOBS``; each run's ``core`` says which core ran). Where even a run with no preemption
decision at all costs more than the target allows, no model on that engine meets it. CPU time of
this process, one core; the figures are for the machine it runs on, so compare them with each
other, not across machines.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from pathlib import Path
from typing import Callable

from makeway.benchmarks import _engine, kueue_baseline, preemption_scenario
from makeway.core.state import ClusterState
from makeway.core.objects import Workload
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, Simulation, make_simulation
from makeway.sim.fast.compiled import CompiledSimulation

HERE = Path(__file__).resolve().parent


def run(build: Callable[[], tuple[ClusterState, list[Workload]]], model: str, engine: str) -> dict:
    """One run: CPU, jobs per second of CPU, preemptions and (general engine) events popped."""
    state, workloads = build()
    m = load_model(model, {})
    options = SimOptions(engine=engine)
    sim = make_simulation(state, m, options, False)
    if isinstance(sim, Simulation):
        sim.add_workloads(workloads)
    elif isinstance(sim, CompiledSimulation):
        # below MIN_JOBS a run goes to the pure-Python core because loading numba costs more
        # than it saves; ``main`` loaded it already, so the compiled loop is what is measured
        sim.MIN_JOBS = 0
    gc.collect()
    t0 = time.process_time()
    rec = sim.run() if isinstance(sim, Simulation) else sim.run(sorted(workloads, key=lambda w: w.submit))
    cpu = time.process_time() - t0
    return {"model": model, "engine": type(sim).__module__ + "." + type(sim).__name__, "core": _engine(rec),
            "cpu_s": round(cpu, 3),
            "jobs_per_s": round(len(rec.finish_t) / cpu), "finished": len(rec.finish_t),
            "preemptions": rec.preemptions, "events": getattr(sim, "events_processed", None)}


def kueue_scenario(scale: float) -> Callable[[], tuple[ClusterState, list[Workload]]]:
    return lambda: kueue_baseline(scale=scale)


def yunikorn_scenario(scale: float) -> Callable[[], tuple[ClusterState, list[Workload]]]:
    return lambda: preemption_scenario(int(3_000 * scale), int(1000 * scale))


def floor(name: str, build, model: str, target: str, target_cpu: Callable[[dict], float]) -> dict:
    runs = [run(build, model, "general"), run(build, "none", "general"), run(build, "none", "auto")]
    allowed = target_cpu(runs[0])
    out = {"scenario": name, "target": target, "target_cpu_s": round(allowed, 3), "runs": runs,
           "over_target": [round(r["cpu_s"] / allowed, 2) for r in runs]}
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    from makeway.sim.fast.compiled import warm

    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="size of both scenarios (1.0: the targets' size)")
    ap.add_argument("--out", default=str(HERE / "floors-results.json"))
    args = ap.parse_args()
    s = args.scale
    warm()  # the compiled loop's load (numba and its cache) is not part of any run
    results = [
        # 2 s for the whole baseline at full size; a smaller run gets its share of it
        floor("kueue-baseline", kueue_scenario(s), "kueue", "15,000 workloads in <= 2 s", lambda r: 2.0 * s),
        floor("yunikorn-preemption", yunikorn_scenario(s), "yunikorn", ">= 30,000 finished jobs/s",
              lambda r: r["finished"] / 30_000),
    ]
    Path(args.out).write_text(json.dumps({"scale": s, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
