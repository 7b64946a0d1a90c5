"""``fast.pack``: the class of YTsaurus runs the compiled loop takes (one refusal per way out of
it, each named), and the static arrays of a small config."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import onedim
from makeway.policies.ytsaurus.fast import pack
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.policies.ytsaurus.tree import ROOT

ON = {"fair_share_closed_form": True}


def base():
    """root -> a (guarantee 4) -> {a1, a2}, root -> b; two nodes of 8 GPUs; three workloads."""
    queues = [Queue("root"), Queue("a", "root", {"gpu": 4}, None, 2.0), Queue("b", "root"),
              Queue("a1", "a", {"gpu": 3}, None, 1.0, settings={"allow_normal_preemption": False}),
              Queue("a2", "a", {"gpu": 1}, None, 3.0, settings={"fair_share_starvation_tolerance": 0.5})]
    nodes = [Node("n0", {"gpu": 8}), Node("n1", {"gpu": 8})]
    wls = [Workload("w0", "a1", 0.0, 10.0, (TaskGroup(1, {"gpu": 2}),)),
           Workload("w1", "b", 1.0, 10.0, (TaskGroup(2, {"gpu": 8}),)),
           Workload("w2", "a2", 1.0, 10.0, (TaskGroup(12, {"gpu": 1}),))]
    return "gpu", queues, nodes, wls, dict(ON)


def wl(i, queue="b", groups=((1, {"gpu": 2}),), submit=5.0, **kw):
    return Workload(f"x{i}", queue, submit, 1.0, tuple(TaskGroup(c, r) for c, r in groups), **kw)


def q_set(name, **changes):
    def edit(queues):
        for q in queues:
            if q.name == name:
                for k, v in changes.items():
                    setattr(q, k, v)
    return edit


# case -> (what to change, words of the reason); ``s`` settings, ``q`` queues, ``n`` nodes, ``w`` workloads
CASES = {
    "caches": (dict(s={"caches": False}), "caches"),
    "kernel": (dict(s={"fair_share_kernel": True}), "fair_share_kernel"),
    "closed_form_off": (dict(s={"fair_share_closed_form": False}), "fair_share_closed_form"),
    "best_allocation_share": (dict(s={"best_allocation_share": True}), "best_allocation_share"),
    "aggressive_tree": (dict(s={"enable_aggressive_starvation": True}), "enable_aggressive_starvation"),
    "threshold_tree": (dict(s={"non_preemptible_resource_usage_threshold": {"gpu": 4}}),
                       "non_preemptible_resource_usage_threshold"),
    "legacy_count": (dict(s={"max_unpreemptible_running_job_count": 2}), "max_unpreemptible_running_job_count"),
    "allocation_timeout": (dict(s={"allocation_preemption_timeout": 5}), "allocation_preemption_timeout"),
    "two_resources": (dict(res=("gpu", "cpu")), "not one resource"),
    "two_roots": (dict(q=lambda qs: qs.append(Queue("other"))), "not one root"),
    "fifo": (dict(q=q_set("b", settings={"mode": "fifo"})), "mode fifo"),
    "max": (dict(q=q_set("b", max={"gpu": 4})), "a max"),
    "fractional_guarantee": (dict(q=q_set("a", guaranteed={"gpu": 2.5})), "guaranteed"),
    "other_guarantee": (dict(q=q_set("b", guaranteed={"cpu": 2})), "guaranteed"),
    "weight": (dict(q=q_set("b", weight=math.inf)), "weight"),
    "integral": (dict(q=q_set("b", settings={"integral_guarantees": {"guarantee_type": "burst"}})), "integral"),
    "promised": (dict(q=q_set("a", settings={"compute_promised_guarantee_fair_share": True})), "promised"),
    "aggressive_pool": (dict(q=q_set("a", settings={"enable_aggressive_starvation": True})),
                        "enable_aggressive_starvation"),
    "aggressive_pool_camel": (dict(q=q_set("a2", settings={"enableAggressiveStarvation": True})),
                              "enable_aggressive_starvation"),
    "threshold_pool": (dict(q=q_set("b", settings={"non_preemptible_resource_usage_threshold": {"gpu": 1}})),
                       "non_preemptible_resource_usage_threshold"),
    "unschedulable": (dict(n=lambda ns: setattr(ns[1], "schedulable", False)), "node n1"),
    "removed": (dict(n=lambda ns: setattr(ns[1], "removed", True)), "node n1"),
    "float_capacity": (dict(n=lambda ns: setattr(ns[0], "capacity", {"gpu": 8.0})), "node n0"),
    "no_capacity": (dict(n=lambda ns: [setattr(x, "capacity", {"gpu": 0}) for x in ns], w=lambda ws: ws.clear()),
                    "no gpu"),
    "not_empty": (dict(pre=True), "already holds"),
    "unsorted": (dict(w=lambda ws: ws.append(wl(0, submit=0.5))), "submit order"),
    "non_leaf": (dict(w=lambda ws: ws.append(wl(0, queue="a"))), "not a leaf"),
    "unknown_queue": (dict(w=lambda ws: ws.append(wl(0, queue="zz"))), "not a leaf"),
    "two_groups": (dict(w=lambda ws: ws.append(wl(0, groups=((1, {"gpu": 1}), (1, {"gpu": 2}))))), "one task group"),
    "zero_tasks": (dict(w=lambda ws: ws.append(wl(0, groups=((0, {"gpu": 1}),)))), "one task group"),
    "zero_request": (dict(w=lambda ws: ws.append(wl(0, groups=((1, {"gpu": 0}),)))), "positive whole"),
    "float_request": (dict(w=lambda ws: ws.append(wl(0, groups=((1, {"gpu": 1.5}),)))), "positive whole"),
    "other_resource": (dict(w=lambda ws: ws.append(wl(0, groups=((1, {"gpu": 1, "cpu": 1}),)))), "positive whole"),
    "too_large": (dict(w=lambda ws: ws.append(wl(0, groups=((1, {"gpu": 9}),)))), "largest node"),
    "not_preemptible": (dict(w=lambda ws: ws.append(wl(0, preemptible=False))), "not preemptible"),
    "grace": (dict(w=lambda ws: ws.append(wl(0, grace=5.0))), "grace"),
    "settings": (dict(w=lambda ws: ws.append(wl(0, settings={"weight": 2}))), "settings"),
}


def build(change=None):
    r, queues, nodes, wls, s = base()
    change = change or {}
    s.update(change.get("s", {}))
    for key, target in (("q", queues), ("n", nodes), ("w", wls)):
        if key in change:
            change[key](target)
    state = ClusterState(change.get("res", (r,)), queues, nodes)
    if change.get("pre"):
        state.submit(copy.deepcopy(wls[0]))
    return state, YTsaurusModel(s), wls


def test_the_base_run_is_inside_the_class():
    assert pack.unsupported(*build()) is None


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_way_out_of_the_class_is_refused_by_name(case):
    change, words = CASES[case]
    if case == "kernel":
        pytest.importorskip("numba")
    why = pack.unsupported(*build(change))
    assert why is not None and words in why, why


def test_another_model_is_refused():
    state, _, wls = build()

    class Other(YTsaurusModel):
        pass
    assert pack.unsupported(state, Other(ON), wls) == "not the ytsaurus model"
    assert pack.unsupported(state, object(), wls) == "not the ytsaurus model"


def test_packed_arrays_of_a_small_config():
    state, model, wls = build()
    pk = pack.Packed(state, model, wls)
    assert pk.pools == ["a1", "a2", "a", "b", "root", ROOT]
    assert pk.T == 16.0 and pk.CAP.tolist() == [8, 8] and pk.node_names == ["n0", "n1"]
    assert pk.PAR.tolist() == [2, 2, 4, 4, 5, -1]
    assert pk.W.tolist() == [1.0, 3.0, 2.0, 1.0, 1.0, 1.0]
    assert pk.G.tolist() == [3, 1, 4, 0, 0, 0]
    # ``root`` has no guarantee, so ``a``'s (and with it a1's and a2's) scale to 0, as onedim scales them
    assert pk.GU.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert [pk.KIDS[pk.KOFF[p]:pk.KOFF[p + 1]].tolist() for p in range(6)] == [[], [], [0, 1], [], [2, 3], [4]]
    assert pk.LEAF.tolist() == [True, True, False, True, False, False]
    assert pk.POOL.tolist() == [0, 3, 1] and pk.REQ.tolist() == [2, 8, 1] and pk.NT.tolist() == [1, 2, 12]


def test_guarantees_that_fit_are_packed_as_given():
    """Where every level's guarantees fit the parent's, ``onedim``'s scaling is the identity."""
    state, model, wls = build(dict(q=q_set("root", guaranteed={"gpu": 12})))
    assert pack.unsupported(state, model, wls) is None
    pk = pack.Packed(state, model, wls)
    assert pk.GU.tolist() == [3.0, 1.0, 4.0, 0.0, 12.0, 0.0]
    assert np.array_equal(pk.GU, pk.G.astype(np.float64))


def test_rows_group_equal_operations_of_a_leaf_at_their_first_member():
    state, model, _ = build()
    wls = [wl(i, queue=q, groups=((n, {"gpu": 2}),), submit=float(i)) for i, (q, n) in
           enumerate([("a1", 1), ("a1", 2), ("a1", 1), ("b", 1), ("a1", 2), ("b", 3)])]
    pk = pack.Packed(state, model, wls)
    rows = pk.rows([2, 4, 2, 2, 0, 6])  # x4 is not in the tree; x1 and x4 would share a class
    assert rows.IOFF.tolist() == [0, 2, 2, 4, 6, 8, 9]
    assert rows.IPOOL.tolist() == [-1, -1, 0, 1, -1, -1, 2, 3, 4]
    assert rows.IHI.tolist()[:2] == [2.0, 4.0] and rows.ICNT.tolist()[:2] == [2, 1]
    assert rows.IW.tolist()[2:4] == [1.0, 3.0] and rows.IW.tolist()[6:8] == [2.0, 1.0]
    assert rows.OPITEM.tolist() == [0, 1, 0, 4, -1, 5]


def test_packed_guarantees_are_what_onedim_scales():
    """The packed tree is the model's, pools in its order: ``onedim``'s strong shares over the
    model's own tree of the run are ``GU / T``."""
    state, model, wls = build()
    model.bind(state)
    tree = model.build_tree(state)
    tree.link()
    res = onedim.compute(tree, None, model.integral)
    pk = pack.Packed(state, model, wls)
    assert tree.pool_postorder() == pk.pools
    for p, g in zip(pk.pools[:-1], pk.GU[:-1]):
        assert res.attrs[p].strong_share == [g / pk.T]
