"""The collector's schedule during a run is raised and put back (``sim.collector``)."""

import gc

import pytest

from makeway.benchmarks import synthetic_cluster, synthetic_jobs
from makeway.registry import load_model
from makeway.sim.collector import YOUNG_THRESHOLD, fewer_young_collections, no_collections
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


def _generation_of(obj) -> int | None:
    for g in range(3):
        if any(o is obj for o in gc.get_objects(generation=g)):
            return g
    return None


def test_no_collections_meanwhile_and_what_it_made_goes_to_the_oldest_generation():
    """The walk's results are not scanned by a young collection once the collector is back: they
    are in the oldest generation, and the young count starts from zero."""
    assert gc.isenabled()
    with no_collections():
        assert not gc.isenabled()
        made = [[i] for i in range(5_000)]
        assert gc.get_count()[0] > 1_000
        assert _generation_of(made) == 0
    assert gc.isenabled()
    assert gc.get_count()[0] < 50
    assert _generation_of(made) == 2 and _generation_of(made[-1]) == 2


def test_no_collections_leaves_a_collector_the_caller_switched_off_alone():
    gc.disable()
    try:
        with no_collections():
            made = [[i] for i in range(100)]
        assert not gc.isenabled()
        assert _generation_of(made) == 0
    finally:
        gc.enable()


def test_no_collections_puts_the_collector_back_when_the_walk_fails():
    with pytest.raises(RuntimeError):
        with no_collections():
            raise RuntimeError("boom")
    assert gc.isenabled()
