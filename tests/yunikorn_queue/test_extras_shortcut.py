"""``shortcuts.extras_irrelevant`` when the chosen node's candidates cannot cover the ask.

The node search picks a node where free room plus one victim fits the ask, but the final
selection compares the victims' total with the whole ask (SEMANTICS §2.11, YUNIKORN-3449): one
small victim is short. Queue-level victims on other nodes are dropped there, so only more
candidates on the same node could help. When even all of them together are short, the attempt
fails "short of resources" whatever the queue-level walk adds, and the walk (every candidate of
the cluster, sorted) is skipped. Each case runs the same attempt with and without shortcuts.
"""

from __future__ import annotations

import pytest

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
