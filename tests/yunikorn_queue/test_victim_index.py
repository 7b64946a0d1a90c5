"""The node search's ordered victim index answers what the plain walk answers (hypothesis).

``victim_index.first_index0`` finds the first node in name order whose victim list reaches the
ask with one victim, skipping nodes by a key (free plus the node's first candidate). A key that
understated a node would pick a later node: a different decision. Here every attempt of the
preemption benchmark's shape (nodes full of candidates of 1-8 cpu, asks of two priorities, so
the same nodes are keyed under different scopes and re-keyed as victims go and asks start) runs
the index and the plain walk side by side: where the index has a tree, it must name exactly the
node the walk chooses when that one has index 0, and nothing otherwise. With more asks than the
guarantees hold, the ask queues come near their guarantees and nodes whose first candidate is
larger than what is left of it are passed over unevaluated (``_refused_first``).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.benchmarks import preemption_jobs, synthetic_cluster
from makeway.policies.yunikorn import preemptor, victim_index
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.sim.engine import SimOptions, simulate


def _checked(monkeypatch) -> dict[str, int]:
    seen = {"tree": 0, "hit": 0, "refused": 0}
    real_tree = victim_index.VictimNodeIndex.tree
    real_refused = victim_index._refused_first

    def refused_first(p, candidates):
        out = real_refused(p, candidates)
        seen["refused"] += out
        return out

    def tree(self, *args):
        t = real_tree(self, *args)
        seen["tree"] += t is not None
        return t

    def least_check(self, victims_for):
        before = seen["tree"]
        found = victim_index.first_index0(self)
        used = seen["tree"] > before
        monkeypatch.setattr(preemptor, "first_index0", lambda p: None)
        try:
            walked = real_least(self, victims_for)
        finally:
            monkeypatch.setattr(preemptor, "first_index0", victim_index.first_index0)
        if used:
            expect = walked[0] if walked is not None and walked[1] == 0 else None
            assert (found[0] if found else None) == expect
            seen["hit"] += found is not None
        return walked

    real_least = preemptor.Preemptor._least_check
    monkeypatch.setattr(victim_index.VictimNodeIndex, "tree", tree)
    monkeypatch.setattr(victim_index, "_refused_first", refused_first)
    monkeypatch.setattr(preemptor.Preemptor, "_least_check", least_check)
    return seen


def _run(nodes: int, seed: int, fill: float, grace: float, per_node: int) -> dict[str, int]:
    from _pytest.monkeypatch import MonkeyPatch
    with MonkeyPatch.context() as mp:
        seen = _checked(mp)
        state = synthetic_cluster(nodes, 10)
        for q in state.queues.values():
            if q.parent:
                q.settings = {"properties": {"preemption.delay": "1s"}}
        jobs = [replace(w, grace=grace) if w.id.startswith("fill") else w
                for w in preemption_jobs(nodes * per_node, nodes, 10, seed=seed, fill=fill)]
        simulate(state, YuniKornModel({}), jobs, options=SimOptions(engine="general"))  # the model's own walk
    return seen


@settings(max_examples=4, deadline=None)
@given(st.integers(12, 30), st.integers(0, 10_000), st.sampled_from([0.9, 1.0]), st.sampled_from([0.0, 20.0]),
       st.sampled_from([3, 5]))
def test_index_names_the_walks_first_index0_node(nodes, seed, fill, grace, per_node):
    """With a grace period, victims stay on their nodes marked preempted for later calls."""
    assert _run(nodes, seed, fill, grace, per_node)["hit"] >= 3  # the index decided attempts, not only fell back


def test_nodes_refused_by_the_ask_queues_guarantee_are_passed_over():
    """Ask queues filled past what their guarantees hold: nodes whose first candidate the ask
    queue's remaining guarantee refuses are passed over, and the index still names the walk's
    node at every attempt."""
    seen = _run(12, 1, 0.9, 0.0, 5)
    assert seen["refused"] >= 5 and seen["hit"] >= 3
