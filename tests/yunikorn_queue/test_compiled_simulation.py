"""The whole path a YuniKorn run takes by default when it is inside the compiled loop's class:
``make_simulation`` hands it to ``CompiledYuniKorn``, the loop (``policies.yunikorn.fast``) decides
it, ``LogRun`` records it. The document must be the general engine's, byte for byte once dumped.

``test_fast_loop`` checks the loop call by call and ``test_log_record`` the recording on the
general engine's own log; this checks the two together, as users get them.
"""

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from makeway.benchmarks import preemption_scenario
from makeway.core.state import ClusterState
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, make_simulation, simulate
from makeway.sim.fast import yunikorn
from makeway.sim.fast.compiled import enabled
from makeway.sim.fast.yunikorn_record import YuniKornRecorder
import pytest

from tests.yunikorn_queue.test_log_record import _dump, _first_difference, gang_reservation_case, runs

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not there")


def _compiled_same(state_of, workloads, **options):
    workloads = sorted(workloads, key=lambda w: w.submit)
    ref = _dump(simulate(state_of(), load_model("yunikorn", {}), workloads,
                         options=SimOptions(engine="general", **options)))
    sim = make_simulation(state_of(), load_model("yunikorn", {}), SimOptions(**options), False)
    assert isinstance(sim, yunikorn.CompiledYuniKorn)
    rec = sim.run(iter(workloads))
    assert sim.log_run is not None, sim.not_recorded  # the compiled path, not a fallback
    got = _dump(rec)
    same = got == ref
    assert same, _first_difference(got, ref)
    return rec


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_compiled_run_is_the_engines_document(drawn):
    queues, nodes, workloads, options = drawn
    _compiled_same(lambda: ClusterState(["cpu", "memory"], queues, nodes), workloads, **options)


def test_the_preemption_benchmark_at_a_tenth_compiled():
    rec = _compiled_same(lambda: preemption_scenario(300, 100)[0], preemption_scenario(300, 100)[1])
    assert rec.preemptions > 200


def test_a_gang_tasks_reservation_times_out_compiled():
    rec = _compiled_same(*gang_reservation_case(), record_starts=True)
    assert [code for _, code, _ in rec.reasons.rows()["w4"]] == ["resources", "preempting", "resources"]


# -- the Philly excerpts (tests/data/philly), mapped onto the study's queues ---------------------------

PHILLY = Path(__file__).resolve().parents[1] / "data" / "philly"


@pytest.mark.parametrize("name,jobs,gangs", [("philly.csv", 40, 0), ("philly_gangs.csv", 58, 18)])
def test_the_philly_excerpts_as_the_benchmark_runs_them(name, jobs, gangs):
    """``makeway bench --only philly``'s path under yunikorn (the study's cluster at 704 GPUs, the
    queue map, the trace streamed through ``sim.run.run``) on the excerpt, and on the excerpt with
    gangs of the trace added (the importer's 2 to 16 tasks of 8 GPUs, 12 of one): recorded from the
    compiled loop's log, the document is the general engine's."""
    from makeway.benchmarks import philly_config
    from makeway.sim.queue_map import load as load_queue_map
    from makeway.sim.run import run

    found = philly_config("yunikorn")
    if found is None:
        pytest.skip("the Philly study's config is not in this checkout")
    cfg, qmap_path = found
    qmap = load_queue_map(str(qmap_path))
    ref = _dump(run(cfg, PHILLY / name, "philly", queue_map=qmap, engine="general"))
    rec = run(cfg, PHILLY / name, "philly", queue_map=qmap)
    assert isinstance(rec, YuniKornRecorder)  # recorded from the compiled loop's log
    got = _dump(rec)
    assert got == ref, _first_difference(got, ref)
    assert len(rec.finish_t) == jobs
    assert sum(wl.task_count > 1 for wl in rec.state.workloads.values()) == gangs
