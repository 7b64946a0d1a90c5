"""The preemptor's node search on full clusters decides as the reference pass (hypothesis).

The random clusters of ``test_cache_equivalence`` have at most four nodes; the node search's
kept verdicts (``NodeRejects``: a node where no single candidate can make a request fit, kept
until an allocation on it ends) and its per-node candidate lists (``NodeCandidates``) matter
when many nodes are full of candidates that are too small, as in the preemption benchmark.
This runs that benchmark's shape at a small size: nodes filled at t=0 by half of the queues,
then asks below their guarantees that are served by preempting, with requests of 1-8 cpu and
two priorities, so the same node is tried by asks of different sizes and filters.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.benchmarks import preemption_jobs, synthetic_cluster
from makeway.sim.engine import SimOptions, simulate
from tests.yunikorn_queue.test_cache_equivalence import FullEvaluation, Recording


def run(cls: type, nodes: int, asks: int, seed: int, fill: float) -> list[str]:
    state = synthetic_cluster(nodes, 10)
    for q in state.queues.values():
        if q.parent:
            q.settings = {"properties": {"preemption.delay": "1s"}}
    model = cls({})
    simulate(state, model, preemption_jobs(asks, nodes, 10, seed=seed, fill=fill), options=SimOptions())
    return model.log


@settings(max_examples=4, deadline=None)
@given(st.integers(5, 8), st.integers(15, 25), st.integers(0, 10_000), st.sampled_from([0.9, 1.0]))
def test_full_cluster_node_search_decides_as_full_evaluation(nodes, asks, seed, fill):
    log = run(Recording, nodes, asks, seed, fill)
    assert sum(" P " in line for line in log) >= 3  # the search ran on full nodes
    assert log == run(FullEvaluation, nodes, asks, seed, fill)
