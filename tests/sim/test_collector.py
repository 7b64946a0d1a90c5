"""The collector's schedule during a run is raised and put back (``sim.collector``)."""

import gc

import pytest

from makeway.benchmarks import synthetic_cluster, synthetic_jobs
from makeway.registry import load_model
from makeway.sim.collector import YOUNG_THRESHOLD, fewer_young_collections
from makeway.sim.engine import SimOptions, Simulation


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_raised_meanwhile_and_restored_after(thresholds):
    gc.set_threshold(700, 10, 10)
    with fewer_young_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_run_fails(thresholds):
    gc.set_threshold(700, 5, 7)
    with pytest.raises(RuntimeError):
        with fewer_young_collections():
            raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 5, 7)


@pytest.mark.parametrize("young", [0, 50_000])
def test_a_larger_or_disabled_schedule_is_left_alone(thresholds, young):
    gc.set_threshold(young, 10, 10)
    with fewer_young_collections():
        assert gc.get_threshold() == (young, 10, 10)
    assert gc.get_threshold() == (young, 10, 10)


def test_a_simulation_runs_under_it_and_puts_it_back(thresholds):
    gc.set_threshold(700, 10, 10)
    seen = []
    model = load_model("yunikorn", {})
    schedule = model.schedule

    def spy(state, now):
        seen.append(gc.get_threshold()[0])
        return schedule(state, now)

    model.schedule = spy
    sim = Simulation(synthetic_cluster(4, 2), model, SimOptions())
    sim.add_workloads(synthetic_jobs(20, 4, 2))
    rec = sim.run()
    assert len(rec.finish_t) == 20
    assert seen and set(seen) == {YOUNG_THRESHOLD}
    assert gc.get_threshold() == (700, 10, 10)
