"""The incremental Picker chooses exactly what pick_operation chooses, pick after pick."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from makeway.policies.ytsaurus.schedule import HeapPicker, Picker, pick_operation
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


def _tree(rng: random.Random, pools: int, ops: int) -> Tree:
    tree = Tree(("cpu",), [100.0])
    tree.add(Element(ROOT, None))
    names = [ROOT]
    for p in range(pools):
        names.append(f"p{p}")
        tree.add(Element(f"p{p}", rng.choice(names[:-1])))
    for o in range(ops):
        tree.add(Element(f"o{o}", rng.choice(names), is_op=True))
    tree.link()
    return tree


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 6), st.integers(1, 25))
def test_picker_matches_pick_operation(seed, pools, ops):
    rng = random.Random(seed)
    tree = _tree(rng, pools, ops)
    ops_all = [n for n, e in tree.elements.items() if e.is_op]
    active = {o for o in ops_all if rng.random() < 0.7}
    sat = {o: float(rng.choice([0, 1, 2, 3])) for o in ops_all}  # many ties: the tie-break matters
    pos = {c: i for e in tree.elements.values() for i, c in enumerate(e.children)}
    picker = Picker(tree, active, lambda w: sat[w], pos)
    ref_active = set(active)
    for _ in range(3 * ops):
        want = pick_operation(tree, ref_active, lambda w: sat[w]) if ref_active else None
        got = picker.pick()
        assert got == want
        if want is None:
            break
        if rng.random() < 0.4:
            ref_active.discard(want)
            picker.deactivate(want)
        else:
            sat[want] += rng.choice([0.0, 0.5, 1.0])
            picker.changed(want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 6), st.integers(1, 25))
def test_heap_picker_matches_pick_operation(seed, pools, ops):
    """The heap of (value, path) picks what the descent picks, ties and changes included."""
    rng = random.Random(seed)
    tree = _tree(rng, pools, ops)
    ops_all = [n for n, e in tree.elements.items() if e.is_op]
    active = {o for o in ops_all if rng.random() < 0.7}
    sat = {o: float(rng.choice([0, 1, 2, 3])) for o in ops_all}
    pos = {c: i for e in tree.elements.values() for i, c in enumerate(e.children)}
    picker = HeapPicker(tree, active, lambda w: sat[w], pos)
    ref_active = set(active)
    for _ in range(3 * ops):
        want = pick_operation(tree, ref_active, lambda w: sat[w]) if ref_active else None
        assert picker.pick() == want
        if want is None:
            break
        if rng.random() < 0.4:
            ref_active.discard(want)
            picker.deactivate(want)
        else:
            sat[want] += rng.choice([-1.0, 0.0, 0.5, 1.0])
            picker.changed(want)
