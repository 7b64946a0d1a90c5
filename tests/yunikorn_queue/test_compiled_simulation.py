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


def test_a_squeezed_gang_cut_preempts_gang_tasks():
    """The gang excerpt's jobs a thousand times closer together and a hundred times shorter, on
    the study's queues over 4 nodes of 8 GPUs guaranteed 16, 8 and 8: queues borrow and are
    reclaimed from, gangs preempt and are preempted task by task, and their requeued tasks wait
    behind their siblings."""
    from dataclasses import replace

    from makeway.benchmarks import PHILLY_STUDY, _beside
    from makeway.config import build_state, load_config, parse_config
    from makeway.sim.importers import read_trace
    from makeway.sim.queue_map import load as load_queue_map
    from makeway.sim.scale import scale_cluster
    from makeway.sim.trace import parse_record

    study = _beside(PHILLY_STUDY)
    if study is None:
        pytest.skip("the Philly study's config is not in this checkout")
    qmap = load_queue_map(str(study.parent / "queue-map.yaml"))
    wls = sorted((parse_record(qmap.apply(r)) for r in read_trace(PHILLY / "philly_gangs.csv", "philly")),
                 key=lambda w: (w.submit, w.id))
    t0 = wls[0].submit
    cut = [replace(w, submit=round((w.submit - t0) / 1000.0, 1), duration=max(1.0, round(w.duration / 100.0)))
           for w in wls]
    data = scale_cluster(load_config(study).model_dump(), 0.1, quotas=False)
    for name, gpus in (("prod", 16), ("research", 8), ("batch", 8)):
        data["queues"][name]["guaranteed"] = {"gpu": gpus}
    data["preemption"] = {"model": "yunikorn"}
    cfg = parse_config(data, "the Philly study on a few nodes")
    assert sum(n.count * n.capacity["gpu"] for n in cfg.nodes) == 32, cfg.nodes
    rec = _compiled_same(lambda: build_state(cfg), cut, record_starts=True)
    gangs = {w.id for w in cut if w.task_count > 1}
    victims = {e["workload"] for e in rec.events if e["kind"] == "preempt"}
    assert len(victims & gangs) >= 3 and rec.preemptions >= 10 and len(rec.finish_t) == len(cut)
