"""Invariants of the core and simulator, checked on random workloads."""

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.sim.engine import SimOptions, simulate

from .helpers import cluster, job
from .test_engine import EvictYoungest

jobs_strategy = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 30), st.integers(1, 3), st.integers(1, 4), st.integers(0, 3),
              st.sampled_from(["a", "b"])),
    min_size=1, max_size=25)


def build(specs):
    return [job(f"j{i}", q, submit=float(s), duration=float(d), count=c, cpu=cpu, priority=p)
            for i, (s, d, c, cpu, p, q) in enumerate(specs)]


@settings(max_examples=60, deadline=None)
@given(jobs_strategy, st.sampled_from([PriorityFirstFit, EvictYoungest]))
def test_usage_never_exceeds_capacity(specs, model_cls):
    # check_invariants verifies node usage <= capacity and the queue usage index after every instant
    rec = simulate(cluster(nodes=3, cpu=4), model_cls(), build(specs), options=SimOptions(check_invariants=True))
    assert len(rec.finish_t) == len(specs)  # everything fits some node, so everything finishes


@settings(max_examples=40, deadline=None)
@given(jobs_strategy)
def test_two_runs_give_identical_results(specs):
    a = simulate(cluster(nodes=3, cpu=4), EvictYoungest(), build(specs)).results()
    b = simulate(cluster(nodes=3, cpu=4), EvictYoungest(), build(specs)).results()
    assert a == b
