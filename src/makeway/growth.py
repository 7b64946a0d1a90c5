"""Growth exponents: how the CPU cost of a benchmark scenario grows with its size.

A scenario is run at two sizes four times apart and its cost is read as ``cost ~ n^k``:
``k = log(cost_big / cost_small) / log(4)``. Issue 20 asks ``k <= 1.2`` between 1/4 and full size: a
pass whose cost grows with the backlog shows up here long before it shows up in a quick run. CPU
time (``time.process_time``) is used so that other work on the machine does not move the figure.
"""

from __future__ import annotations

import gc
import math
import time
from typing import Callable

from makeway.benchmarks import (DECISION_SLOTS, Figure, bench_throughput_preemption, decision_ms, figure, kth,
                                kueue_baseline, synthetic_cluster, synthetic_jobs)
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, simulate

TARGET = 1.2


def _cpu(run: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.process_time()
    run()
    return time.process_time() - t0


def kueue_cost(scale: float) -> tuple[float, int]:
    state, workloads = kueue_baseline(scale=scale)
    return _cpu(lambda: simulate(state, load_model("kueue", {}), workloads, options=SimOptions())), len(workloads)


def throughput_cost(scale: float) -> tuple[float, int]:
    n = int(100_000 * scale)
    state, jobs = synthetic_cluster(1000, 10), synthetic_jobs(n, 1000, 10)
    return _cpu(lambda: simulate(state, load_model("none"), iter(jobs), options=SimOptions(), streamed=True)), n


def preemption_cost(scale: float) -> tuple[float, int]:
    fig = bench_throughput_preemption(False, scale=scale)[0]
    return fig["cpu_s"], fig["jobs"]


def swf_cost(scale: float, model: str = "easy-backfill") -> tuple[float, int]:
    state, recs = kth(int(28_476 * scale))
    return _cpu(lambda: simulate(state, load_model(model), iter(recs), options=SimOptions(),
                                 streamed=True)), len(recs)


def swf_strict_cost(scale: float) -> tuple[float, int]:
    return swf_cost(scale, "fifo-strict")


def memory_cost(scale: float) -> tuple[float, int]:
    """Peak bytes the ``memory`` scenario's run holds (tracemalloc), not CPU: memory ~ n^k."""
    import tracemalloc

    from makeway.sim.fast.compiled import warm

    n = int(20_000 * scale)
    state, jobs = synthetic_cluster(200, 10), synthetic_jobs(n, 200, 10)
    warm()  # numba's import and cache are not the run's
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    simulate(state, load_model("none"), iter(jobs), options=SimOptions(), streamed=True)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return float(peak), n


def decision_cost(scale: float) -> tuple[float, int]:
    """The median CPU milliseconds of one Kueue preemption decision among ``10,000 x scale``
    admitted workloads (``preemption-decision``): what a pass costs as the admitted set grows.
    Rounded down to whole hundreds, which fill the scenario's 100 nodes and ClusterQueues exactly
    (``--quick --growth``'s small size, 625, would leave a cohort quota the nodes cannot hold)."""
    admitted = max(DECISION_SLOTS, int(10_000 * scale) // DECISION_SLOTS * DECISION_SLOTS)
    times = sorted(decision_ms(admitted, 21))
    return times[len(times) // 2], admitted


def fair_share_cost(scale: float) -> tuple[float, int]:
    """The CPU milliseconds of one YTsaurus fair share update over ``100,000 x scale`` operations in
    ``10,000 x scale`` pools (``ytsaurus-fair-share``, compiled); nan without numba or bench/."""
    from makeway.benchmarks import _bench_file, _kernel

    ops = int(100_000 * scale)
    mod = _bench_file("bench_ytsaurus_fair_share.py") if _kernel() else None
    if mod is None:
        return float("nan"), ops
    return mod.measure(int(10_000 * scale), ops), ops


SCENARIOS: dict[str, Callable[[float], tuple[float, int]]] = {
    "kueue-baseline": kueue_cost,
    "throughput": throughput_cost,
    "throughput-preemption": preemption_cost,
    "swf-fifo-strict": swf_strict_cost,
    "swf-easy-backfill": swf_cost,
    "memory": memory_cost,
    "preemption-decision": decision_cost,
    "ytsaurus-fair-share": fair_share_cost,
}
UNITS = {"memory": "bytes", "preemption-decision": "ms", "ytsaurus-fair-share": "ms"}  # of the cost; CPU seconds elsewhere
# a ``makeway bench`` scenario -> the growth scenarios that scale it (where the names differ)
OF_BENCH = {"swf-fifo-easy": ("swf-fifo-strict", "swf-easy-backfill")}


def for_bench(names: list[str], only: bool) -> list[str]:
    """The growth scenarios ``makeway bench --growth`` runs for these bench scenarios (every one when
    no ``--only`` narrowed them), in order, each once."""
    picked = [g for n in names for g in OF_BENCH.get(n, (n,)) if g in SCENARIOS]
    if not only:
        picked += list(SCENARIOS)
    return list(dict.fromkeys(picked))


def exponent(small: float, big: float, ratio: float = 4.0) -> float:
    tiny = 1e-6  # a run too short for the clock to see
    return math.log(max(big, tiny) / max(small, tiny)) / math.log(ratio)


def growth(name: str, quick: bool, repeat: int = 1) -> Figure:
    """Cost at 1/4 and full size (quick: 1/16 and 1/4) and the exponent between them. With
    ``repeat`` > 1 each size runs that many times, small and big in turn so that both meet the
    same spells of a busy machine, and the exponent is taken between the smallest costs (the
    runs least slowed by anything else); every run's cost is reported."""
    if repeat < 1:
        raise ValueError(f"repeat: {repeat} is not a count of runs (1 or more)")
    big = 0.25 if quick else 1.0
    small_runs, big_runs = [], []
    for _ in range(repeat):
        small_runs.append(SCENARIOS[name](big / 4))
        big_runs.append(SCENARIOS[name](big))
    n_small, n_big = small_runs[0][1], big_runs[0][1]
    c_small, c_big = min(c for c, _ in small_runs), min(c for c, _ in big_runs)
    unit = UNITS.get(name)
    digits = {None: 3, "bytes": None}.get(unit, 4)
    label = "cpu_s" if unit is None else unit
    costs = {f"small_{label}": round(c_small, digits), f"big_{label}": round(c_big, digits)}
    if repeat > 1:
        costs.update({"repeat": repeat, f"small_{label}_runs": [round(c, digits) for c, _ in small_runs],
                      f"big_{label}_runs": [round(c, digits) for c, _ in big_runs]})
    return figure(f"growth_exponent_{name.replace('-', '_')}", exponent(c_small, c_big, n_big / max(n_small, 1)),
                  "exponent", TARGET, small_n=n_small, big_n=n_big, **costs)
