"""The numpy paths for large curves must agree with the list paths (same left/right values)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.policies.ytsaurus import plf
from makeway.policies.ytsaurus.plf import PLF


def random_curve(rng: random.Random, n: int, dim: int, end: float = 2.0) -> PLF:
    xs = sorted(round(rng.uniform(0, end), 2) for _ in range(n - 2))
    xs = [0.0] + xs + [end]
    ys, cur = [], [0.0] * dim
    for _ in xs:
        cur = [c + (rng.choice([0.0, 0.0, round(rng.uniform(0, 0.1), 3)])) for c in cur]
        ys.append(list(cur))
    return plf.clean(xs, ys)


def values(xs, vs, probes):
    out = []
    for p in probes:
        out.extend(plf._eval1(list(xs), list(vs), p))
    return out


def same_fn(a: PLF, b: PLF, probes):
    for p in probes:
        assert a.left(p) == pytest.approx(b.left(p), abs=1e-9), p
        assert a.right(p) == pytest.approx(b.right(p), abs=1e-9), p


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(3, 120), dim=st.integers(1, 3))
def test_numpy_and_list_paths_agree(seed, n, dim):
    rng = random.Random(seed)
    curve = random_curve(rng, n, dim)
    g = [round(rng.uniform(0, 0.3), 2) for _ in range(dim)]
    lim = [round(rng.uniform(0.2, 2), 2) for _ in range(dim)]
    probes = sorted({0.0, 1.0} | {round(rng.uniform(0, 1), 3) for _ in range(25)}
                    | {x for x in curve.xs if x <= 1})
    old = plf.LARGE
    try:
        plf.LARGE = 10**9
        comps_py = [plf.mff_component(curve, r, g[r], lim[r]) for r in range(dim)]
        m_py = plf.min_scalar(comps_py)
        c_py = plf.compose(curve, *m_py)
        plf.LARGE = 0
        comps_np = [plf.mff_component(curve, r, g[r], lim[r]) for r in range(dim)]
        m_np = plf.min_scalar(comps_np)
        c_np = plf.compose(curve, *m_np)
    finally:
        plf.LARGE = old
    for (xa, va), (xb, vb) in zip(comps_py, comps_np):
        assert values(xa, va, probes) == pytest.approx(values(xb, vb, probes), abs=1e-9)
    assert values(*m_py, probes) == pytest.approx(values(*m_np, probes), abs=1e-9)
    same_fn(c_py, c_np, probes)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5]), min_size=3, max_size=3),
                               st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.4, 0.7, 1.0]), min_size=3, max_size=3)),
                     min_size=1, max_size=6))
def test_closed_form_operation_share_matches_generic(rows):
    import numpy as np

    from makeway.policies.ytsaurus import fairshare

    ops = [([min(u, d) for u, d in zip(us, ds)], ds) for us, ds in rows]
    batch = fairshare.op_fsbs_batch(np.array([u for u, _ in ops]), np.array([d for _, d in ops]))
    probes = sorted({i / 40 for i in range(41)} | {x for u, d in ops for x in u + d if x <= 1})
    for (u, d), fast in zip(ops, batch):
        curve = fairshare.op_curve(u, d)
        generic = plf.compose(curve, *fairshare.fit_factor_fn(curve, [0.0] * 3, [1.0] * 3))
        same_fn(generic, fast, probes)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 1.0]), min_size=2, max_size=12),
       st.lists(st.floats(-0.5, 1.5, allow_nan=False), max_size=12))
def test_sweep_eval_is_eval1(xs, extra):
    """The one-pass evaluation in min_scalar gives _eval1's values bit for bit (jumps included)."""
    xs = sorted(xs)
    vs = [float(i) * 0.3 + (0.7 if i % 3 == 0 else 0.0) for i in range(len(xs))]
    pos = sorted(set(xs) | set(extra))
    left, right = plf._sweep_eval(xs, vs, pos)
    assert list(zip(left, right)) == [plf._eval1(xs, vs, p) for p in pos]
