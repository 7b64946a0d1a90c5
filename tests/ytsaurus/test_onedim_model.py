"""``fair_share_closed_form`` in the model: which updates take ``onedim``, that they agree with the
curves update by update, that the model's caches still decide as a full evaluation with it, and
the conformance cases with the closed form forced on wherever a case's tree is in its class."""

from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.conformance.runner import find_cases, run_file
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import fairshare, onedim
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.sim.engine import SimOptions, simulate
from tests.ytsaurus.test_cache_equivalence import FullEvaluation, Recording
from tests.ytsaurus.test_onedim import assert_close

CASES = Path(__file__).resolve().parents[1] / "conformance"


class Checked(YTsaurusModel):
    """The model with every closed-form update also computed by the curves and compared."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.taken = self.compared = 0

    def _compute(self, tree, caps, delta=None):
        before = copy.deepcopy(tree)
        result = super()._compute(tree, caps, delta)
        if onedim.why_not(tree, caps, self.integral) is None:
            self.taken += 1
            ref = fairshare.compute(before, caps, self.integral)
            assert_close(ref, result)
            self.compared += 1
        return result


@st.composite
def clusters(draw, resources=("gpu",)):
    queues, names = [], []
    for i in range(draw(st.integers(1, 5))):
        parent = draw(st.sampled_from([None, *names])) if names else None
        g = draw(st.one_of(st.none(), st.integers(1, 12).map(lambda v: {"gpu": v})))
        queues.append(Queue(f"p{i}", parent, guaranteed=g, weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                            settings={"allow_normal_preemption": False} if draw(st.integers(1, 6)) == 6 else {}))
        names.append(f"p{i}")
    nodes = [Node(f"n{i}", {r: draw(st.sampled_from([4, 8])) for r in resources})
             for i in range(draw(st.integers(1, 4)))]
    workloads, t = [], 0.0
    for j in range(draw(st.integers(4, 30))):
        t += draw(st.sampled_from([0.0, 0.0, 0.5, 2.0, 6.0]))
        ws: dict = {}
        if draw(st.integers(1, 5)) == 5:
            ws["weight"] = draw(st.sampled_from([0.5, 2.0]))
        if draw(st.integers(1, 8)) == 8:
            ws["resource_limits"] = {"gpu": draw(st.integers(1, 6))}
        workloads.append(Workload(f"w{j}", draw(st.sampled_from(names)), t, draw(st.sampled_from([3.0, 20.0, 300.0])),
                                  (TaskGroup(draw(st.integers(1, 4)), {r: draw(st.integers(1, 4)) for r in resources}),),
                                  settings=ws))
    model_settings = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
                      "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": draw(st.sampled_from([1.0, 4.0])),
                      "fair_share_closed_form": True, "main_resource": "gpu"}
    return resources, queues, nodes, workloads, model_settings


def run(cls, case, horizon=60.0):
    resources, queues, nodes, workloads, model_settings = case
    state = ClusterState(list(resources), [Queue(q.name, q.parent, q.guaranteed, q.max, q.weight,
                                                 settings=dict(q.settings)) for q in queues],
                         [Node(n.name, dict(n.capacity)) for n in nodes])
    model = cls(dict(model_settings))
    simulate(state, model, list(workloads), [], options=SimOptions(horizon=horizon, check_invariants=True))
    return model


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_every_one_resource_update_takes_the_closed_form_and_agrees_with_the_curves(case):
    model = run(Checked, case)
    assert model.taken > 0 and model.compared == model.taken


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(("gpu", "cpu")))
def test_two_resources_keep_the_curves(case):
    assert run(Checked, case).taken == 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_caches_decide_as_full_evaluation_with_the_closed_form(case):
    assert run(Recording, case).log == run(FullEvaluation, case).log


def test_the_setting_is_on_by_default_and_shown_in_the_options():
    assert YTsaurusModel().options()["fair_share_closed_form"] is True
    assert YTsaurusModel({"fair_share_closed_form": False}).options()["fair_share_closed_form"] is False
    from makeway.policies.ytsaurus.settings import YTsaurusSettings
    assert YTsaurusSettings().fair_share_closed_form is True


def test_conformance_with_the_closed_form_forced_on(monkeypatch):
    """Every YTsaurus case, its fair share taken by ``onedim`` wherever the tree is in its class
    (the cases of one resource), the curves elsewhere: all must still pass."""
    curves = fairshare.compute
    taken: set[str] = set()
    current = [""]

    def closed_first(tree, node_caps=None, integral=None, cache=None, kernel=False, batching=fairshare.BATCHING):
        res = onedim.compute(tree, node_caps, integral)
        if res is not None:
            taken.add(current[0])
            return res
        return curves(tree, node_caps, integral, cache, kernel, batching)

    monkeypatch.setattr(fairshare, "compute", closed_first)
    failed = []
    paths = [p for p in find_cases([CASES]) if p.parent.parent.name == "ytsaurus"]
    for path in paths:
        current[0] = path.stem
        if not run_file(path).result.ok:
            failed.append(path.stem)
    assert not failed
    assert len(paths) == 58 and taken >= {"classify-prefix-boundary-equal", "classify-prefix-default-thresholds",
                                          "classify-single-allocation-over-fair-share",
                                          "derived-single-resource-demand-cap-redistributes"}
