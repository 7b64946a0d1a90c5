"""A YTsaurus decision does not depend on how large the pool tree is.

The compiled fair share update agrees with the Python construction to rounding only, so a size
threshold between them (there was one, at 128 elements) lets a decision change as a tree grows
past it. The path is now chosen once per run (``fair_share_kernel``), so runs just below and
just above the old threshold decide as the reference (``caches: false``, Python construction)
decides, with and without the kernel.
"""

from __future__ import annotations

import importlib.util

import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from tests.ytsaurus.test_cache_equivalence import Recording

# every test here compiles the numba kernel: one xdist worker compiles it once (`--dist loadgroup`)
pytestmark = pytest.mark.xdist_group("numba-kernel")

OLD_THRESHOLD = 128
POOLS = 40
SETTINGS = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
            "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": 2.0}


def run(operations: int, **extra) -> list[str]:
    """Root + ``POOLS`` weighted pools + ``operations`` operations, all submitted early and longer
    than the run, so the tree has ``1 + POOLS + operations`` elements throughout; more demand than
    the cluster holds, and later arrivals in starved pools, so preemption happens."""
    queues = [Queue(f"p{i}", None, weight=1.0 + i % 3, guaranteed={"cpu": 2} if i % 5 == 0 else None)
              for i in range(POOLS)]
    nodes = [Node(f"n{i}", {"cpu": 16, "memory": 64}) for i in range(6)]
    workloads = [Workload(f"w{j:03d}", f"p{(j * 7) % POOLS}", 0.5 * (j // 20), 1000.0,
                          (TaskGroup(1 + j % 3, {"cpu": 1 + j % 2, "memory": 2}),))
                 for j in range(operations)]
    state = ClusterState(["cpu", "memory"], queues, nodes)
    model = Recording({**SETTINGS, **extra})
    simulate(state, model, workloads, options=SimOptions(horizon=7.0))
    return model.log


def decisions(log: list[str]) -> list[str]:
    """Starts, and preemptions as (time, victim, rule, preemptor): notes and a preemption's values
    carry shares, which the kernel rounds its own way in the last bits."""
    out = []
    for line in log:
        parts = line.split(" ")
        if parts[1] == "S":
            out.append(line)
        elif parts[1] == "P":
            out.append(" ".join(parts[:5]))
    return out


@pytest.mark.parametrize("elements", [OLD_THRESHOLD - 1, OLD_THRESHOLD + 1])
def test_same_decisions_below_and_above_the_old_kernel_threshold(elements):
    operations = elements - 1 - POOLS
    default = run(operations)
    assert sum(" P " in line for line in default) > 0 and sum(" S " in line for line in default) > 50
    assert default == run(operations, caches=False)
    if importlib.util.find_spec("numba") is None:
        pytest.skip("numba (makeway[fast]) not installed: the kernel side is not run")
    assert decisions(run(operations, fair_share_kernel=True)) == decisions(default)
