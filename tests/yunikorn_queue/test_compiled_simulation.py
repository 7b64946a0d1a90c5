"""The whole path a YuniKorn run takes by default when it is inside the compiled loop's class:
``make_simulation`` hands it to ``CompiledYuniKorn``, the loop (``policies.yunikorn.fast``) decides
it, ``LogRun`` records it. The document must be the general engine's, byte for byte once dumped.

``test_fast_loop`` checks the loop call by call and ``test_log_record`` the recording on the
general engine's own log; this checks the two together, as users get them.
"""

from hypothesis import HealthCheck, given, settings

from makeway.benchmarks import preemption_scenario
from makeway.core.state import ClusterState
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, make_simulation, simulate
from makeway.sim.fast import yunikorn
from makeway.sim.fast.compiled import enabled
import pytest

from tests.yunikorn_queue.test_log_record import _dump, _first_difference, runs

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
