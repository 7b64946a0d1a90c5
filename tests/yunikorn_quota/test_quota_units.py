"""Table-driven tests of the quota-preemption pieces (timer, amount, split, victim choice)."""

from __future__ import annotations

import pytest

from makeway.core.decisions import Note, Preempt
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn import quota as yq


@pytest.mark.parametrize("old_max,new_max,usage,old_delay,delay,start,expected", [
    ({"m": 100}, {"m": 50}, {"m": 80}, 10, 10, None, 110.0),        # lowered: arm now + delay
    ({"m": 100}, {"m": 50}, {"m": 80}, 10, 10, 105.0, 105.0),       # lowered again: keep earliest
    ({"m": 100}, {"m": 50}, {"m": 80}, 10, 20, 105.0, 115.0),       # delay change shifts
    ({"m": 100}, {"m": 50}, {"m": 40}, 10, 10, 105.0, None),        # within the new max: clear
    ({"m": 100}, {"m": 50}, {"m": 80}, 10, 0, 105.0, None),         # delay 0: off
    ({"m": 100}, {"m": 200, "c": 50}, {"m": 250, "c": 80}, 10, 10, None, None),  # mixed: no arming
    (None, {"m": 50}, {"m": 80}, 10, 10, None, None),               # set from unset counts as raised
    ({"m": 50}, {"m": 50}, {"m": 80}, 0, 10, None, 110.0),          # delay newly set, max unchanged
])
def test_update_timer(old_max, new_max, usage, old_delay, delay, start, expected):
    t = yq.Timer(start=start, delay=old_delay)
    yq.update_timer(t, old_max, new_max, usage, old_delay, delay, 100.0)
    assert t.start == expected


@pytest.mark.parametrize("value,seconds", [("10s", 10.0), ("1m30s", 90.0), ("50ms", 0.05), ("0", 0.0),
                                           ("0s", 0.0), ("-5s", 0.0), ("abc", 0.0), (None, 0.0), (0, 0.0)])
def test_parse_quota_delay(value, seconds):
    assert yq.parse_quota_delay(value) == pytest.approx(seconds)


def _state(queues, allocs, props=None):
    qs = [Queue(n, p, g, m, settings={"properties": (props or {}).get(n, {})}) for n, p, g, m in queues]
    st = ClusterState(["first", "second"], qs, [Node("n", {"first": 10**6, "second": 10**6})])
    for i, (q, res, settings) in enumerate(allocs):
        wl = Workload(f"w{i}", q, 0, 100, (TaskGroup(1, res),), settings=settings)
        st.submit(wl)
        st.start(f"w{i}/0/0", "n", float(i))
    return st


@pytest.mark.parametrize("guaranteed,parent_g,usage_each,max_,expected", [
    (None, None, [10, 8], {"first": 10}, {"first": 8}),
    ({"first": 15}, None, [10, 8], {"first": 10}, {"first": 3}),     # own guarantee caps
    (None, {"first": 16}, [10, 8], {"first": 10}, {"first": 2}),     # parent guarantee caps
    (None, None, [5, 4], {"first": 10}, None),                       # within max
])
def test_amount_to_shed(guaranteed, parent_g, usage_each, max_, expected):
    st = _state([("p", None, parent_g, None), ("p.a", "p", guaranteed, max_)],
                [("p.a", {"first": u}, {}) for u in usage_each])
    assert yq.amount_to_shed(yq.view_from_state(st), "p.a") == expected


def test_leaf_run_is_greedy_without_overshoot_and_never_below_guarantee():
    st = _state([("a", None, {"first": 10}, {"first": 10})],
                [("a", {"first": r}, {}) for r in (5, 6, 3, 4)])
    run = yq.plan(yq.view_from_state(st), "a")
    assert run.amount == {"first": 8}
    assert sorted(v.key for v in run.preempted) == ["w2/0/0", "w3/0/0"]
    assert run.claimed == {"first": 7}
    assert run.verdict == yq.BEST_EFFORT


def test_opted_out_and_originator_sort_first_as_in_the_code():
    st = _state([("a", None, None, {"first": 10})],
                [("a", {"first": 5}, {}), ("a", {"first": 5}, {"allowPreemption": False}),
                 ("a", {"first": 5}, {"originator": True}), ("a", {"first": 5}, {"requiredNode": "n"})])
    view = yq.view_from_state(st)
    amount = {"first": 10}
    cands = yq.filter_victims(view["a"], amount)
    assert [v.key for v in cands] == ["w0/0/0", "w1/0/0", "w2/0/0"]  # pinned one skipped
    order = [v.key for v in yq.sort_victims(cands, view["a"].max, amount)]
    assert order == ["w1/0/0", "w2/0/0", "w0/0/0"]


def test_parent_split_by_releasable_share():
    st = _state([("p", None, None, {"first": 10}), ("p.a", "p", {"first": 10}, None), ("p.b", "p", None, None)],
                [("p.a", {"first": 30}, {}), ("p.b", {"first": 20}, {}), ("p.b", {"first": 20}, {})])
    view = yq.view_from_state(st)
    assert yq.distribute(view, "p", {"first": 60}) == {"p.a": {"first": 20}, "p.b": {"first": 40}}


def test_run_due_only_after_delay_and_once_per_arming():
    st = _state([("root", None, None, None), ("root.a", "root", None, {"first": 30})],
                [("root.a", {"first": 10}, {}) for _ in range(3)],
                props={"root.a": {"quota.preemption.delay": "10s"}})
    quota = yq.QuotaPreemption({"quotaPreemptionEnabled": True})
    quota.bind(st)
    old = st.update_queue("root.a", max={"first": 15})
    quota.on_config_change(st, "root.a", old, 100.0)
    assert quota.next_wakeup(st, 100.0) == 110.0
    assert quota.run_due(st, 105.0) == []
    out = quota.run_due(st, 110.0)
    preempts = [d for d in out if isinstance(d, Preempt)]
    notes = [d for d in out if isinstance(d, Note)]
    assert len(preempts) == 1 and preempts[0].reason.rule == "quota-decrease"
    assert preempts[0].reason.preemptor == "quota-decrease:root.a"
    assert notes[0].kind == "quota-preemption" and notes[0].values["verdict"] == yq.BEST_EFFORT
    assert notes[0].values["preemptable"] == {"first": 15}
    assert quota.run_due(st, 111.0) == []  # one run per arming
    assert quota.next_wakeup(st, 111.0) is None


def test_partition_flag_gates_runs():
    st = _state([("root", None, None, None), ("root.a", "root", None, {"first": 30})],
                [("root.a", {"first": 10}, {}) for _ in range(3)],
                props={"root.a": {"quota.preemption.delay": "1s"}})
    quota = yq.QuotaPreemption({})
    quota.bind(st)
    old = st.update_queue("root.a", max={"first": 15})
    quota.on_config_change(st, "root.a", old, 0.0)
    assert quota.next_wakeup(st, 0.0) is None
    assert quota.run_due(st, 5.0) == []


def test_parent_run_blocks_children_for_one_pass():
    st = _state([("root", None, None, None), ("root.p", "root", None, {"first": 40}),
                 ("root.p.a", "root.p", None, {"first": 40})],
                [("root.p.a", {"first": 10}, {}) for _ in range(4)],
                props={"root.p": {"quota.preemption.delay": "1s"}})
    quota = yq.QuotaPreemption({"quotaPreemptionEnabled": True})
    quota.bind(st)
    assert quota.timers["root.p.a"].delay == 1.0  # inherited
    old_p = st.update_queue("root.p", max={"first": 30})
    quota.on_config_change(st, "root.p", old_p, 0.0)
    old_a = st.update_queue("root.p.a", max={"first": 20})
    quota.on_config_change(st, "root.p.a", old_a, 0.0)
    first = [d for d in quota.run_due(st, 1.0) if isinstance(d, Note)]
    assert [n.subject for n in first] == ["root.p"]
    assert quota.next_wakeup(st, 1.0) == 2.0  # the child waits for the next trigger pass
