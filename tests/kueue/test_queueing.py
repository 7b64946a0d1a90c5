"""Simulator model: queueing strategies, namespace selectors, flavor taints and fungibility preference."""

from makeway.core.decisions import Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState


def _groups(*flavors):
    return [{"coveredResources": ["cpu"], "flavors": [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in flavors]}]


def _state(settings: dict, flavors=(("f", 4),)) -> ClusterState:
    queues = [Queue("q", settings={"kind": "ClusterQueue", "resourceGroups": _groups(*flavors), **settings})]
    nodes = [Node(f"n-{f}", {"cpu": q}, {"flavor": f}) for f, q in flavors]
    return ClusterState(["cpu"], queues, nodes)


def _wl(name, count, priority=0, submit=0.0, **settings):
    return Workload(name, "q", submit, 100.0, (TaskGroup(count, {"cpu": 1}),), priority, settings=settings)


def _started(state, model_settings=None) -> set[str]:
    model = load_model("kueue", model_settings or {})
    model.bind(state)
    return {d.task.split("/")[0] for d in model.schedule(state, 0.0) if isinstance(d, Start)}


def test_strict_fifo_head_blocks_its_queue():
    for strategy, expected in (("BestEffortFIFO", {"small"}), ("StrictFIFO", set())):
        state = _state({"queueingStrategy": strategy})
        state.submit(_wl("big", 5, priority=1))  # never fits the 4-cpu quota
        state.submit(_wl("small", 2))
        assert _started(state) == expected, strategy


def test_namespace_selector_rejects_other_namespaces():
    selector = {"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}
    state = _state({"namespaceSelector": selector})
    state.submit(_wl("sales-job", 1, namespace="sales"))
    state.submit(_wl("eng-job", 1, namespace="eng-a"))
    assert _started(state, {"namespaces": {"sales": {"dep": "sales"}, "eng-a": {"dep": "eng"}}}) == {"eng-job"}


def test_untolerated_taint_skips_the_flavor():
    taints = {"resourceFlavors": {"spot": {"nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}}
    for tolerations, node in (([], "n-od"), ([{"key": "k", "operator": "Exists"}], "n-spot")):
        state = _state({}, (("spot", 4), ("od", 4)))
        state.submit(_wl("w", 2, tolerations=tolerations))
        model = load_model("kueue", taints)
        model.bind(state)
        nodes = {d.node for d in model.schedule(state, 0.0) if isinstance(d, Start)}
        assert nodes == {node}, tolerations
