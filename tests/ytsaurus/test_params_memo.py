"""``effective_params`` shares one Params among operations without settings of their own that
differ in nothing it reads: the values are those each operation gets computed alone (an
irrelevant setting key makes it so)."""

from __future__ import annotations

import copy
import random

from hypothesis import given, settings, strategies as st

from makeway.policies.ytsaurus.starvation import effective_params
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.0, 1.0, 3.0]), st.booleans())
def test_shared_params_equal_params_computed_alone(seed, coef, gang_aggressive):
    rng = random.Random(seed)
    tree = Tree(("cpu",), [100.0])
    tree.add(Element(ROOT, None))
    pools = [ROOT]
    for p in range(rng.randint(1, 4)):
        s = {"fair_share_starvation_timeout": rng.choice([10.0, 60.0])} if rng.random() < 0.5 else {}
        tree.add(Element(f"p{p}", rng.choice(pools), settings=s))
        pools.append(f"p{p}")
    for o in range(rng.randint(1, 30)):
        s = {"fair_share_starvation_tolerance": 0.5} if rng.random() < 0.2 else {}
        tree.add(Element(f"o{o}", rng.choice(pools[1:] or pools), is_op=True, pending_count=rng.randint(0, 4),
                         gang=rng.random() < 0.3, settings=s))
    tree.link()
    cfg = {"allocation_count_preemption_timeout_coefficient": coef,
           "allow_aggressive_preemption_for_gang_operations": gang_aggressive}
    alone = copy.deepcopy(tree)
    for el in alone.elements.values():
        if el.is_op and not el.settings:
            el.settings = {"unrelated": True}
    got, want = effective_params(tree, cfg), effective_params(alone, cfg)
    assert got.keys() == want.keys()
    for name in got:
        assert got[name] == want[name], name
