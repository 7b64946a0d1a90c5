"""Parked marks (``kueue/parked.py``): a queue walked to its end is parked by one mark, and
membership, ``unparked`` and the pending index's insertion clock agree through the changes a
run makes between calls: submissions, starts, withdrawals, an index rebuild, discards, clears."""

from makeway.core.objects import Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.kueue.parked import Parked
from makeway.policies.kueue.pending import PendingIndex


def _state():
    return ClusterState(["cpu"], [Queue("a"), Queue("b")], [])


def _submit(state, name, queue, t, priority=0):
    state.submit(Workload(name, queue, t, 10.0, (TaskGroup(1, {"cpu": 1}),), priority))


def _sync(index, state):
    wls = state.workloads
    index.sync(state, lambda w: (True, -wls[w].priority, wls[w].submit, w, 0, False), ())


def _four():
    """A state with w0..w3 pending in queue ``a``, its synced index and an empty Parked."""
    state, index = _state(), PendingIndex()
    for i in range(4):
        _submit(state, f"w{i}", "a", float(i))
    _sync(index, state)
    return state, index, Parked(index)


def _filtered(index, parked, q):
    """What ``unparked`` must list: the queue's entries, filtered by membership."""
    return [e for e in index.order.get(q, []) if e[3] not in parked]


def test_a_mark_parks_what_the_index_holds_and_nothing_inserted_later():
    state, index = _state(), PendingIndex()
    parked = Parked(index)
    for i in range(5):
        _submit(state, f"w{i}", "a", float(i))
    _submit(state, "x0", "b", 0.0)
    _sync(index, state)
    parked.mark("a", {"w3"})  # the call left w3 unparked (say, waiting for its victims)
    assert [e[3] for e in parked.unparked("a")] == ["w3"]
    assert "w0" in parked and "w3" not in parked and "x0" not in parked
    _submit(state, "w5", "a", 5.0)
    _submit(state, "w_early", "a", -1.0)  # inserted after the mark, ahead of every entry
    _sync(index, state)
    got = parked.unparked("a")
    assert [e[3] for e in got] == ["w_early", "w3", "w5"]
    assert got == _filtered(index, parked, "a")
    assert parked.unparked("b") == _filtered(index, parked, "b") == index.order["b"]


def test_marks_survive_an_index_rebuild_and_changed_entries_escape_them():
    state, index, parked = _four()
    parked.mark("a", set())
    assert parked.unparked("a") == []
    index.reset()  # e.g. a start the model did not decide: the next sync rebuilds
    _sync(index, state)
    assert parked.unparked("a") == [] == _filtered(index, parked, "a")
    state.workloads["w1"].priority = 7  # its entry changes: re-inserted, so no longer marked
    index.reset()
    _sync(index, state)
    assert [e[3] for e in parked.unparked("a")] == ["w1"] == [e[3] for e in _filtered(index, parked, "a")]


def test_one_by_one_parks_discards_withdrawals_and_clear():
    state, index, parked = _four()
    parked.add("w2")
    parked.mark("a", {"w1", "w2"})
    assert "w2" in parked  # parked one by one wins over the exception
    assert [e[3] for e in parked.unparked("a")] == ["w1"]
    parked.discard("w0")
    assert [e[3] for e in parked.unparked("a")] == ["w0", "w1"] == [e[3] for e in _filtered(index, parked, "a")]
    state.withdraw("w1")
    _sync(index, state)
    assert [e[3] for e in parked.unparked("a")] == ["w0"] == [e[3] for e in _filtered(index, parked, "a")]
    parked.clear()
    assert parked.unparked("a") == index.order["a"] and "w3" not in parked


def test_release_queues_requeues_only_those_queues_marks_and_members():
    state, index = _state(), PendingIndex()
    parked = Parked(index)
    for i in range(3):
        _submit(state, f"w{i}", "a", float(i))
        _submit(state, f"x{i}", "b", float(i))
    _sync(index, state)
    parked.add("w0")
    parked.add("x0")
    parked.mark("a", set())
    parked.mark("b", set())
    parked.release_queues({"a"})
    assert [e[3] for e in parked.unparked("a")] == ["w0", "w1", "w2"]
    assert parked.unparked("b") == [] and "x0" in parked and "x2" in parked
    assert parked.unparked("a") == _filtered(index, parked, "a")


def test_release_nodes_requeues_only_what_waited_for_room_even_under_a_mark():
    state, index, parked = _four()
    parked.add("w1", node=True)
    parked.add("w2")
    parked.mark("a", set())  # the call walked the queue: everything in it is parked
    assert [parked.kind(w) for w in ("w0", "w1", "w2")] == [1, 2, 1]
    parked.release_nodes()
    assert [e[3] for e in parked.unparked("a")] == ["w1"]
    assert parked.kind("w1") == 0 and "w0" in parked and "w2" in parked
    parked.add("w2", node=True)
    parked.add("w2")  # parked again for quota: no longer waiting for room
    parked.release_nodes()
    assert "w2" in parked
