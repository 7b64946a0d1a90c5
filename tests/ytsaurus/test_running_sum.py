"""``tree._running_sum``: pool sums, one component at a time, bit for bit the sums added vector by
vector from 0.0 (the order decides the rounding, and fair shares read the sums)."""

from operator import add

from hypothesis import given
from hypothesis import strategies as st

from makeway.policies.ytsaurus.tree import _running_sum

floats = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


def _vector_by_vector(vecs, dim):
    acc = [0.0] * dim
    for v in vecs:
        acc = list(map(add, acc, v))
    return acc


@given(st.integers(1, 4).flatmap(lambda dim: st.tuples(
    st.just(dim), st.lists(st.lists(floats, min_size=dim, max_size=dim + 1), max_size=40))))
def test_component_sums_equal_vector_sums_bit_for_bit(case):
    dim, vecs = case
    got, want = _running_sum(vecs, dim), _vector_by_vector(vecs, dim)
    assert [x.hex() for x in got] == [x.hex() for x in want]


def test_a_short_vector_truncates_as_before():
    vecs = [[1.0, 2.0], [0.5], [0.25, 4.0]]
    assert _running_sum(vecs, 2) == _vector_by_vector(vecs, 2) == [1.75]


def test_summed_in_order_not_compensated():
    # 1e16 + 1 + 1 - 1e16 in this order gives 0.0 in plain additions (a compensated sum gives 2.0)
    assert _running_sum([[1e16], [1.0], [1.0], [-1e16]], 1) == [0.0]
