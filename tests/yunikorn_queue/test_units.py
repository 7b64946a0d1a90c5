"""Table-driven unit tests of YuniKorn's properties, sorting and preemptor stages."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from makeway.policies.yunikorn.common import (DEFAULT_PREEMPTION_DELAY_US, Partition, YAlloc, YAsk, YNode, YQueue,
                                              go_slice_stable, log_failure, parse_go_duration_us, resolve_props)
from makeway.policies.yunikorn.preemptor import DOES_NOT_GUARANTEE, SHORTFALL, Preemptor, _Check, find_victims
from makeway.policies.yunikorn.required_node import required_node_preemption


@pytest.mark.parametrize("text,want", [
    ("30s", 30_000_000), ("1ms", 1_000), ("1m30s", 90_000_000), ("1.5h", 5_400_000_000), ("500us", 500),
    ("0", 0), ("-5s", -5_000_000), ("abc", None), ("", None), ("10", None),
])
def test_go_duration(text, want):
    assert parse_go_duration_us(text) == want


@pytest.mark.parametrize("name,parent,own,want_policy,want_delay,want_fence,want_offset", [
    ("defaults", {}, {}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("fence not inherited", {"preemption.policy": "fence"}, {}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("disabled inherited", {"preemption.policy": "disabled"}, {}, "disabled", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("case-insensitive", {}, {"preemption.policy": "FENCE"}, "fence", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("unknown is default", {}, {"preemption.policy": "bogus"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("delay inherited", {"preemption.delay": "5s"}, {}, "default", 5_000_000, False, 0),
    ("own delay wins", {"preemption.delay": "5s"}, {"preemption.delay": "2s"}, "default", 2_000_000, False, 0),
    ("bad delay", {}, {"preemption.delay": "-1s"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("priority not inherited", {"priority.policy": "fence", "priority.offset": "7"}, {}, "default",
     DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("priority own", {}, {"priority.policy": "Fence", "priority.offset": "-3"}, "default",
     DEFAULT_PREEMPTION_DELAY_US, True, -3),
    # Go parses without trimming (strings.ToLower, time.ParseDuration, strconv.ParseInt)
    ("padded policy is unknown", {}, {"preemption.policy": " fence"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("padded delay is unreadable", {}, {"preemption.delay": " 5s"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("padded priority policy", {}, {"priority.policy": "fence "}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("offset syntax error is 0", {}, {"priority.offset": "1_000"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("offset plus sign", {}, {"priority.offset": "+5"}, "default", DEFAULT_PREEMPTION_DELAY_US, False, 5),
    ("offset clamps to int32", {}, {"priority.offset": "99999999999"}, "default", DEFAULT_PREEMPTION_DELAY_US,
     False, 2**31 - 1),
    ("own bad delay beats parent's", {"preemption.delay": "5s"}, {"preemption.delay": "abc"}, "default",
     DEFAULT_PREEMPTION_DELAY_US, False, 0),
    ("own default under disabled parent", {"preemption.policy": "disabled"}, {"preemption.policy": "default"},
     "default", DEFAULT_PREEMPTION_DELAY_US, False, 0),
])
def test_properties(name, parent, own, want_policy, want_delay, want_fence, want_offset):
    pprops, praw = resolve_props(parent, None, None)
    props, _ = resolve_props(own, praw, pprops)
    assert (props.preemption_policy, props.preemption_delay_us, props.priority_fence, props.priority_offset) == \
        (want_policy, want_delay, want_fence, want_offset), name


@given(st.lists(st.integers(0, 5), max_size=60))
def test_go_stable_sort_matches_stable_sort_for_strict_order(xs):
    items = list(enumerate(xs))
    assert go_slice_stable(items, lambda a, b: a[1] < b[1]) == sorted(items, key=lambda p: p[1])


def test_go_stable_sort_reverses_runs_when_less_answers_true_on_ties():
    assert go_slice_stable([1, 2, 3], lambda a, b: True) == [3, 2, 1]


def _part(queues, allocs, nodes):
    qs = [YQueue(p, p.rsplit(".", 1)[0] if "." in p else None, g, m) for p, g, m in queues]
    part = Partition(qs, [YNode(n, dict(c)) for n, c in nodes], [])
    for a in allocs:
        part.allocs[a.key] = a
        part.add_usage(a.queue, a.resources)
        node = part.nodes[a.node]
        node.used = {k: node.used.get(k, 0) + a.resources.get(k, 0) for k in set(node.used) | set(a.resources)}
    return part


def _alloc(key, queue, node, cpu, prio=0, t=0, allow=True):
    return YAlloc(key, "app-" + key, queue, node, {"cpu": cpu}, prio, t, False, allow)


TWO_SIBLINGS = [("root", None, None), ("root.a", {"cpu": 4}, None), ("root.b", {"cpu": 4}, None)]

# name, queues, allocations, ask (queue, cpu, priority), expected victims, expected log
CASES = [
    ("under-guarantee ask takes youngest from over-guarantee sibling", TWO_SIBLINGS,
     [_alloc(f"b{i}", "root.b", "n1", 1, t=i) for i in range(8)], ("root.a", 1, 0), ["b7"], []),
    ("victim queue at guarantee is protected", TWO_SIBLINGS,
     [_alloc(f"b{i}", "root.b", "n1", 2, t=i) for i in range(2)] + [_alloc("a0", "root.a", "n1", 4)],
     ("root.a", 1, 0), [], [DOES_NOT_GUARANTEE]),
    ("higher priority victims are not eligible", TWO_SIBLINGS,
     [_alloc(f"b{i}", "root.b", "n1", 1, prio=5, t=i) for i in range(8)], ("root.a", 1, 0), [], []),
    ("equal priority is eligible", TWO_SIBLINGS,
     [_alloc(f"b{i}", "root.b", "n1", 1, prio=5, t=i) for i in range(8)], ("root.a", 1, 5), ["b7"], []),
    ("opted-out victims go last", TWO_SIBLINGS,
     [_alloc(f"b{i}", "root.b", "n1", 1, t=10 - i, allow=i != 0) for i in range(8)], ("root.a", 1, 0), ["b1"], []),
    ("no guarantee on the ask path: never preempts", [("root", None, None), ("root.a", None, None),
                                                       ("root.b", {"cpu": 1}, None)],
     [_alloc(f"b{i}", "root.b", "n1", 1, t=i) for i in range(8)], ("root.a", 1, 0), [], [DOES_NOT_GUARANTEE]),
    ("victims too small in total", TWO_SIBLINGS,
     [_alloc("b0", "root.b", "n1", 6), _alloc("b1", "root.b", "n1", 2, t=1)], ("root.a", 3, 0), [], []),
]


@pytest.mark.parametrize("name,queues,allocs,ask,want,want_log", CASES, ids=[c[0] for c in CASES])
def test_preemptor_table(name, queues, allocs, ask, want, want_log):
    import copy
    part = _part(queues, copy.deepcopy(allocs), [("n1", {"cpu": 8})])
    a = YAsk("ask", "app-x", ask[0], {"cpu": ask[1]}, ask[2])
    r = Preemptor(part, a).try_preemption()
    assert sorted(v.key for v in r.victims) == want, name
    assert r.ok == bool(want)
    assert list(a.log) == want_log
    if r.ok:
        assert r.node == "n1" and a.triggered_preemption
        assert all(part.allocs[k].preempted for k in want)


def test_shortfall_is_logged_when_node_victims_do_not_cover_ask():
    part = _part(TWO_SIBLINGS, [_alloc("b0", "root.b", "n1", 5), _alloc("x", "root.a", "n1", 3)],
                 [("n1", {"cpu": 8})])
    part.queues["root.a"].guaranteed = {"cpu": 10}
    a = YAsk("ask", "app-x", "root.a", {"cpu": 5}, 0)
    r = Preemptor(part, a).try_preemption()
    assert r.ok and [v.key for v in r.victims] == ["b0"]
    part2 = _part(TWO_SIBLINGS, [_alloc("b0", "root.b", "n1", 5), _alloc("b1", "root.b", "n2", 1)],
                  [("n1", {"cpu": 6}), ("n2", {"cpu": 1})])
    part2.queues["root.a"].guaranteed = {"cpu": 10}
    a2 = YAsk("ask", "app-x", "root.a", {"cpu": 6}, 0)
    r2 = Preemptor(part2, a2).try_preemption()
    assert not r2.ok and SHORTFALL in a2.log


@pytest.mark.parametrize("props,want", [
    ({}, ["b1"]),
    ({"root.b": {"preemption.policy": "disabled"}}, []),
    ({"root.a": {"preemption.policy": "fence"}}, []),
])
def test_scope(props, want):
    part = _part(TWO_SIBLINGS, [_alloc("b1", "root.b", "n1", 1)], [("n1", {"cpu": 1})])
    part.queues["root.b"].guaranteed = None
    for path, p in props.items():
        part.queues[path].props = resolve_props(p, None, None)[0]
    search = find_victims(part, YAsk("ask", "x", "root.a", {"cpu": 1}))
    assert sorted(a.key for s in search.snapshots.values() for a in s.victims) == want


def test_required_node_preemption_takes_until_ask_covered_and_runs_once():
    part = _part(TWO_SIBLINGS, [_alloc(f"b{i}", "root.b", "n1", 2, t=i) for i in range(4)], [("n1", {"cpu": 8})])
    ask = YAsk("ds", "x", "root.a", {"cpu": 3}, 0, required_node="n1")
    victims = required_node_preemption(part, ask)
    assert [v.key for v in victims] == ["b3", "b2"]
    assert part.queues["root.b"].preempting == {"cpu": 4}
    assert required_node_preemption(part, ask) is None


_node_names = [f"n{i}" for i in (1, 2, 10, 11, 3, 20)]  # name order differs from node order


@given(st.lists(st.tuples(st.sampled_from(["root.a", "root.b", "root.c"]), st.integers(0, 5), st.integers(1, 2),
                          st.integers(0, 3)), max_size=30),
       st.integers(1, 4), st.sampled_from(["root.a", "root.b"]), st.booleans(), st.integers(4, 12), st.integers(2, 5))
def test_node_search_and_guarantee_shortcut_match_full_enumeration(allocs, ask_cpu, ask_q, tried, guar, cap):
    queues = [("root", None, None), ("root.a", {"cpu": guar}, None), ("root.b", {"cpu": 4}, None),
              ("root.c", {"cpu": 2}, None)]
    ys = [_alloc(f"x{i}", q, _node_names[n], c, t=t) for i, (q, n, c, t) in enumerate(allocs)]
    part = _part(queues, ys, [(n, {"cpu": cap}) for n in _node_names])
    ask = YAsk("ask", "app-x", ask_q, {"cpu": ask_cpu})
    p = Preemptor(part, ask, nodes_tried=tried)
    # the guarantee check: closed form (root has no guarantee) against the victim-by-victim loop
    fast = p.check_queue_guarantees()
    p._ask_remaining_fixed = lambda work, aq: None  # type: ignore[method-assign]
    assert fast == p.check_queue_guarantees()
    p.init_working_state()
    checks = []
    for node_id, free in p.all_free().items():
        idx, lst = p.victims_by_node(free, p.by_node.get(node_id, []))
        if lst is None or (tried and not lst):
            continue
        checks.append(_Check(node_id, idx, lst))
    assert p._least_check({}) == p.choose_node(checks)


def test_node_search_picks_least_name_not_first_in_node_order():
    queues = [("root", None, None), ("root.a", {"cpu": 4}, None), ("root.b", {"cpu": 2}, None)]
    ys = [_alloc("a1", "root.a", "n1", 2)]  # n1 full with the ask queue's own work: no victims there
    ys += [_alloc(f"b-{n}", "root.b", n, 2, t=i) for i, n in enumerate(["n2", "n10", "n3"])]
    part = _part(queues, ys, [(n, {"cpu": 2}) for n in ["n1", "n2", "n10", "n3"]])
    r = Preemptor(part, YAsk("ask", "app-x", "root.a", {"cpu": 2}), nodes_tried=True).try_preemption()
    assert r.ok and r.node == "n10" and [v.key for v in r.victims] == ["b-n10"]


@pytest.mark.parametrize("top,middle,want", [
    ({"preemption.policy": "disabled"}, {}, "disabled"),             # through a queue that sets nothing
    ({"preemption.policy": "disabled"}, {"preemption.policy": "fence"}, "default"),  # fence is not passed on
    ({"preemption.policy": "fence"}, {}, "default"),
    ({"preemption.delay": "7s"}, {"priority.offset": "3"}, "default"),
])
def test_properties_over_three_levels(top, middle, want):
    """SEMANTICS §1: the merged map is what a child inherits, filtered at every level."""
    p1, raw1 = resolve_props(top, None, None)
    p2, raw2 = resolve_props(middle, raw1, p1)
    p3, _ = resolve_props({}, raw2, p2)
    assert p3.preemption_policy == want
    assert p3.priority_offset == 0
    assert p3.preemption_delay_us == (7_000_000 if "preemption.delay" in top else DEFAULT_PREEMPTION_DELAY_US)


def test_the_allocation_log_counts_a_repeated_message_once():
    """YuniKorn keeps one allocation-log entry per message with a count: an ask refused every 15 s
    for a day keeps two entries, not thousands."""
    a = YAsk("ask", "app-x", "root.a", {"cpu": 1}, 0)
    log_failure(a, DOES_NOT_GUARANTEE)
    log_failure(a, SHORTFALL, DOES_NOT_GUARANTEE)
    assert a.log == {DOES_NOT_GUARANTEE: 2, SHORTFALL: 1}
    assert list(a.log) == [DOES_NOT_GUARANTEE, SHORTFALL]
