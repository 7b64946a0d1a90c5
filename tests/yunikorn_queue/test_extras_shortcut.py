"""``shortcuts.extras_irrelevant`` when the chosen node's candidates cannot cover the ask.

The node search picks a node where free room plus one victim fits the ask, but the final
selection compares the victims' total with the whole ask (SEMANTICS §2.11, YUNIKORN-3449): one
small victim is short. Queue-level victims on other nodes are dropped there, so only more
candidates on the same node could help. When even all of them together are short, the attempt
fails "short of resources" whatever the queue-level walk adds, and the walk (every candidate of
the cluster, sorted) is skipped. Each case runs the same attempt with and without shortcuts.

The pass itself remembers the queues that refused a victim since the last one it kept, where
removing and adding the victim back gives the same numbers (``shortcuts.reversible``); the
hypothesis test compares its victims with the reference pass's.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.policies.yunikorn import preemptor as P
from makeway.policies.yunikorn.common import Partition, YAlloc, YAsk, YNode, YQueue
from makeway.policies.yunikorn.preemptor import SHORTFALL


def attempt(on_node: list[int], shortcuts: bool, spy: list[int]):
    """n1 (8 cpu) holds ``on_node`` of root.a; n2 to n5 are full of root.a's 1-cpu work. root.a
    is far above its guarantee, root.b (the ask's, 5 cpu) far below it."""
    queues = [YQueue("root", None, None), YQueue("root.a", "root", {"cpu": 1}), YQueue("root.b", "root", {"cpu": 40})]
    nodes = [YNode(f"n{i}", {"cpu": 8}) for i in range(1, 6)]
    allocs = [YAlloc(f"a{j}", f"app-a{j}", "root.a", "n1", {"cpu": c}, create_us=j) for j, c in enumerate(on_node)]
    allocs += [YAlloc(f"b{n}-{k}", f"app-b{n}-{k}", "root.a", f"n{n}", {"cpu": 1}, create_us=100 + 8 * n + k)
               for n in range(2, 6) for k in range(8)]
    part = Partition(queues, nodes, allocs)
    part.shortcuts = shortcuts
    for a in allocs:
        part.add_usage(a.queue, a.resources)
        part.nodes[a.node].used["cpu"] = part.nodes[a.node].used.get("cpu", 0) + a.resources["cpu"]
    ask = YAsk("ask", "app-ask", "root.b", {"cpu": 5})
    p = P.Preemptor(part, ask)
    calls = len(spy)
    result = p.try_preemption()
    return result, dict(ask.log), len(spy) > calls


@pytest.fixture
def spy(monkeypatch) -> list[int]:
    """Counts the calls of ``additional_victims``."""
    calls: list[int] = []
    real = P.Preemptor.additional_victims

    def counted(self, node_victims):
        calls.append(1)
        return real(self, node_victims)

    monkeypatch.setattr(P.Preemptor, "additional_victims", counted)
    return calls


@pytest.mark.parametrize("on_node, walked", [
    ([2, 2], False),     # free 4, the newest victim (2) makes room; 2 + 2 are short: no walk
    ([2, 1, 1], False),  # free 4, victim 1; 2 + 1 + 1 are short
    ([2, 3], True),      # free 3, victim 3; 3 + 2 cover the ask: walked, and it succeeds
])
def test_short_node_skips_the_walk_and_fails_as_the_reference(spy, on_node, walked):
    fast, fast_log, fast_walked = attempt(on_node, True, spy)
    ref, ref_log, _ = attempt(on_node, False, spy)
    assert (fast.ok, fast.node, [v.key for v in fast.victims]) == (ref.ok, ref.node, [v.key for v in ref.victims])
    assert fast_log == ref_log
    assert fast_walked == walked
    if walked:
        assert fast.ok and fast.node == "n1" and {v.node for v in fast.victims} == {"n1"}
    else:
        assert not fast.ok and SHORTFALL in fast_log


WHOLE = st.sampled_from([1, 2, 3, 4])
MIXED = st.sampled_from([1, 2, 3, 4, 0.1, 0.2, 0.7, 1.5])


def guarantee(draw) -> dict:
    out = {"cpu": draw(st.integers(0, 6))}
    if draw(st.booleans()):
        out["memory"] = draw(st.integers(0, 6))
    return out


@st.composite
def walks(draw):
    """Leaves over and within their guarantees, victims with whole and fractional amounts and with
    or without memory, and an ask queue below its guarantee: the queue-level pass refuses, keeps
    and undoes in every order. ``root.a`` is a prefix of the ask queue's path, which YuniKorn's
    remaining guarantee compares as strings: its answer there moves with the ask queue's usage."""
    leaves = draw(st.lists(st.sampled_from(["root.a", "root.l0", "root.l1", "root.l2"]), min_size=2, max_size=4,
                           unique=True))
    ask_guarantee = {"cpu": draw(st.integers(4, 30)), "memory": draw(st.integers(4, 30))}
    queues = [YQueue("root", None, guarantee(draw) if draw(st.integers(0, 3)) == 0 else None),
              YQueue("root.ask", "root", ask_guarantee)]
    queues += [YQueue(q, "root", guarantee(draw)) for q in leaves]
    amounts = WHOLE if draw(st.booleans()) else MIXED  # whole numbers: refusals are remembered
    allocs = []
    for j in range(draw(st.integers(1, 30))):
        res = {"cpu": draw(amounts)}
        if draw(st.integers(0, 3)) == 0:
            res["memory"] = draw(amounts)
        allocs.append(YAlloc(f"v{j}", f"app{j}", draw(st.sampled_from(leaves)), f"n{j % 3}", res,
                             create_us=draw(st.integers(0, 5)), originator=draw(st.integers(0, 4)) == 0))
    part = Partition(queues, [YNode(f"n{i}", {"cpu": 64, "memory": 64}) for i in range(3)], allocs)
    for a in allocs:
        part.add_usage(a.queue, a.resources)
    for _ in range(draw(st.integers(0, 3))):
        part.add_usage("root.ask", {"cpu": draw(amounts), "memory": draw(amounts)})
    ask = {"cpu": draw(st.sampled_from([1, 2, 5]))}
    if draw(st.booleans()):
        ask["memory"] = draw(st.sampled_from([1, 2]))
    return part, YAsk("ask", "app-ask", "root.ask", ask)


@settings(max_examples=300, deadline=None)
@given(walks())
def test_queue_level_pass_remembers_refusals_as_the_reference_walks(case):
    part, ask = case
    got = {}
    for shortcuts in (True, False):
        part.shortcuts = shortcuts
        out, ok = P.Preemptor(part, ask).additional_victims([])
        got[shortcuts] = ([v.key for v in out], ok)
    assert got[True] == got[False]


@pytest.mark.parametrize("leaf, res, expected", [
    ({"cpu": 3, "memory": 4}, {"cpu": 1}, True),
    ({"cpu": 3}, {"cpu": 1, "memory": 2}, False),  # memory would come back as a 0
    ({"cpu": 0.9}, {"cpu": 0.2}, False),            # 0.9 - 0.2 + 0.2 is 0.8999999999999999
    ({"cpu": 3}, {"cpu": 0.5}, False),
    (None, {"cpu": 1}, False),                      # a None usage would come back as a dict
])
def test_reversible_only_where_remove_and_add_give_the_numbers_back(leaf, res, expected):
    from makeway.policies.yunikorn.search import Snap
    from makeway.policies.yunikorn.shortcuts import reversible

    root = Snap("root", None, False, {"cpu": 10, "memory": 10}, None, None, None)
    assert reversible(Snap("root.q", root, True, leaf, None, None, {"cpu": 1}), res) is expected
