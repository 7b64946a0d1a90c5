"""``clockheap.ClockHeap`` against ``starvation.update_statuses`` over the whole tree.

While the fair share stays, an update re-steps every clock with the same statuses; the heap steps
only those whose threshold passed. Both must give the same clocks, starving ancestors, changed
clocks and bound (``quiet.clock_bound``), update after update, on random trees.
"""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.policies.ytsaurus import clockheap, quiet, starvation
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


class _Snap:
    def __init__(self, view, params):
        self.view, self.params = view, params


@st.composite
def cases(draw):
    tree = Tree(("gpu",), [8.0])
    tree.add(Element(ROOT, None))
    pools = ["p0"]
    tree.add(Element("p0", ROOT))
    for i in range(1, draw(st.integers(1, 4))):
        name = f"p{i}"
        tree.add(Element(name, draw(st.sampled_from(pools)), settings=draw(st.sampled_from([
            {}, {"fair_share_starvation_timeout": 7.0}, {"enable_aggressive_starvation": True}]))))
        pools.append(name)
    for i in range(draw(st.integers(0, 12))):
        tree.add(Element(f"op{i}", draw(st.sampled_from(pools)), is_op=True, pending_count=draw(st.integers(0, 3)),
                         settings=draw(st.sampled_from([{}, {"fair_share_starvation_timeout": 25.0}]))))
    tree.link()
    below = {n: draw(st.booleans()) for n in tree.elements}
    statuses = {n: "below_fair_share" if b else "normal" for n, b in below.items()}
    cfg = {"fair_share_starvation_timeout": draw(st.sampled_from([3.0, 10.0, 30.0])),
           "fair_share_aggressive_starvation_timeout": draw(st.sampled_from([5.0, 20.0, 60.0])),
           "enable_aggressive_starvation": draw(st.booleans()),
           "allocation_count_preemption_timeout_coefficient": draw(st.sampled_from([0.0, 2.0])),
           "enable_pool_starvation": draw(st.booleans())}
    starts = [draw(st.floats(0, 20, allow_nan=False)) for _ in range(3)]  # clocks started at several updates
    steps = sorted(draw(st.lists(st.floats(0, 120, allow_nan=False), min_size=1, max_size=8)))
    return tree, statuses, cfg, starts, steps


@settings(max_examples=80, deadline=None)
@given(cases())
def test_heap_steps_as_the_whole_tree(case):
    tree, statuses, cfg, starts, steps = case
    params = starvation.effective_params(tree, cfg)
    clocks: dict = {}
    # clocks that started at different updates: each element below its share from one of ``starts``
    names = list(tree.elements)
    for k, t in enumerate(sorted(starts)):
        part = {n: s if i % len(starts) == k else "normal" for i, (n, s) in enumerate(statuses.items())}
        for n, c in clocks.items():
            if c.since is not None:
                part[n] = "below_fair_share"
        clocks = starvation.update_statuses(tree, None, params, clocks, t, cfg, part).clocks
    view = starvation.update_statuses(tree, None, params, clocks, max(starts), cfg, statuses)
    heap = clockheap.ClockHeap(tree, view.clocks, params)
    assert heap.bound(view.clocks) == quiet.clock_bound(_Snap(view, params))
    now = max(starts)
    for dt in steps:
        now = now + dt
        full = starvation.update_statuses(tree, None, params, view.clocks, now, cfg, view.status)
        got = heap.advance(view, params, now)
        if got is None:  # a pool's clock moved: the caller walks the tree and builds a new heap
            assert any(full.clocks[n].status != view.clocks[n].status for n in names if not tree.elements[n].is_op)
            view, heap = full, clockheap.ClockHeap(tree, full.clocks, params)
        else:
            new, changed = got
            assert new.clocks == full.clocks
            assert new.lowest_starving == full.lowest_starving
            assert new.lowest_aggressive == full.lowest_aggressive
            assert new.status == full.status
            assert changed == [n for n in names if full.clocks[n].status != view.clocks[n].status]
            view = new
        assert heap.bound(view.clocks) == quiet.clock_bound(_Snap(view, params))
