"""The free-capacity index must give exactly the answer of a scan over the nodes in order."""

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.node_index import FreeIndex

free_maps = st.lists(st.fixed_dictionaries({"cpu": st.integers(0, 8), "mem": st.integers(0, 8)}), min_size=1, max_size=40)
requests = st.fixed_dictionaries({"cpu": st.integers(0, 9), "mem": st.integers(0, 9)})


def scan(free, req, start):
    for i in range(start, len(free)):
        if all(v <= 0 or free[i].get(k, 0) >= v for k, v in req.items()):
            return i
    return None


@settings(max_examples=300, deadline=None)
@given(free_maps, requests, st.integers(0, 45), st.lists(st.tuples(st.integers(0, 39), st.integers(0, 8)), max_size=10))
def test_index_matches_scan(free, req, start, updates):
    idx = FreeIndex(("cpu", "mem"), free)
    for i, cpu in updates:
        if i < len(free):
            free[i] = {"cpu": cpu, "mem": free[i]["mem"]}
            idx.set(i, free[i])
    assert idx.first_fit(req, start) == scan(free, req, start)


def test_unschedulable_and_unknown_resources():
    idx = FreeIndex(("cpu",), [{"cpu": 4}, {"cpu": 4}])
    idx.set(0, None)
    assert idx.first_fit({"cpu": 1}) == 1
    assert idx.first_fit({"gpu": 1}) is None
    assert idx.first_fit({"gpu": 0, "cpu": 0}) == 1
