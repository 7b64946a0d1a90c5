"""Nodes that join and leave, and workloads cancelled, between scheduling calls, under every model.

A live cluster changes under the scheduler: the executor adds and removes nodes (first ending and
requeueing what ran on a removed one), cordons them, and withdraws cancelled workloads (ending
their running tasks without requeue). No simulator here: each test drives ``model.schedule`` (and
``heartbeat`` for YTsaurus) itself and applies the Starts and Preempts to the state, as the live
executor will. Checked after every call: the state's invariants hold, no Start names a removed or
cordoned node, a withdrawn workload never starts again, and no model raises; and a workload that
only a newly added node can hold starts there.

Cost (2 shared cores): about 10-20 s for the whole file.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Preempt, Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState, StateError

MODELS = ["none", "fifo-strict", "easy-backfill", "kueue", "yunikorn", "ytsaurus", "symphony"]
EXAMPLES = {"ytsaurus": 30}
DEFAULT_EXAMPLES = 60

_MODEL_SETTINGS: dict[str, dict] = {
    "yunikorn": {"preemptionEnabled": True},
    "ytsaurus": {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.0,
                 "preemptive_scheduling_backoff": 0.5, "fair_share_starvation_timeout": 1.0,
                 "fair_share_aggressive_starvation_timeout": 3.0},
}
_SESSION_TYPES = {"batch": {"preemptive": False, "preemptionRank": 10},
                  "urgent": {"preemptive": True, "preemptionRank": 20}}


def _queues(model: str) -> list[Queue]:
    """Two leaves under one root, with what each model needs to preempt between them."""
    leaves = []
    for name in ("q0", "q1"):
        g: dict | None = None
        s: dict[str, Any] = {}
        if model == "kueue":
            g = {"cpu": 12}  # nominal quota: the big workload below fits its own queue's
            s = {"preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}}
        elif model == "yunikorn":
            g = {"cpu": 4}
            s = {"properties": {"preemption.delay": "1s"}}
        elif model == "ytsaurus":
            g = {"cpu": 4}
        elif model == "symphony":
            s = {"sessionTypes": _SESSION_TYPES}
        leaves.append(Queue(name, "root", g, None, 1.0, settings=s))
    return [Queue("root")] + leaves


def _workload(model: str, wid: str, queue: str, now: float, count: int, cpu: int, priority: int,
              duration: float) -> Workload:
    ws = {"sessionType": "urgent" if priority else "batch"} if model == "symphony" else {}
    return Workload(wid, queue, now, duration, (TaskGroup(count, {"cpu": cpu}),), priority=priority, settings=ws)


class Driver:
    """The live executor's part, reduced to what the models see: starts, preemptions (immediate
    end and requeue), finishes after ``duration``, and topology and cancel events."""

    def __init__(self, model_name: str, nodes: list[int], graceful: bool = False):
        self.name = model_name
        self.graceful = graceful  # preempted allocations stay (marked preempting) instead of ending
        self.model = load_model(model_name, dict(_MODEL_SETTINGS.get(model_name, {})))
        self.state = ClusterState(["cpu"], _queues(model_name),
                                  [Node(f"n{i}", {"cpu": c}) for i, c in enumerate(nodes)])
        self.model.bind(self.state)
        self.now = 0.0
        self.seq = 0
        self.started: dict[str, str] = {}  # task -> node of its latest start

    def submit(self, queue: str, count: int, cpu: int, priority: int, duration: float = 3.0) -> str:
        wid = f"w{self.seq}"
        self.seq += 1
        self.state.submit(_workload(self.name, wid, queue, self.now, count, cpu, priority, duration))
        return wid

    def add_node(self, name: str, cpu: int) -> None:
        self.state.add_node(Node(name, {"cpu": cpu}))

    def remove_node(self, name: str) -> None:
        """Lose a node: what ran there ends and is requeued (unless withdrawn), then it goes."""
        for tid in list(self.state.node_allocs[name]):
            self.state.end(tid)
            wl = tid.rsplit("/", 2)[0]
            if wl not in self.state.withdrawn:
                self.state.requeue(tid)
        self.state.remove_node(name)

    def withdraw(self, wid: str) -> None:
        self.state.withdraw(wid)
        for tid in list(self.state.running.get(wid, ())):
            self.state.end(tid)
        with pytest.raises(StateError):
            self.state.requeue(f"{wid}/0/0")

    def step(self, dt: float = 1.0) -> list[Start]:
        """Advance the clock, finish what is done, call the model, apply its decisions."""
        self.now += dt
        st_ = self.state
        for tid, a in list(st_.allocations.items()):
            if a.start + st_.workloads[a.workload].duration <= self.now + 1e-9:
                st_.finish(tid)
        starts = self._apply(self.model.schedule(st_, self.now))
        if self.model.heartbeat_period is not None:
            for node in st_.node_names:
                starts += self._apply(self.model.heartbeat(st_, node, self.now))
        problems = st_.check_invariants()
        assert not problems, problems
        return starts

    def _apply(self, decisions: list) -> list[Start]:
        """Apply decisions at once (each heartbeat reads the state the previous one left)."""
        st_ = self.state
        starts = []
        for d in decisions:
            if isinstance(d, Start):
                node = st_.nodes[d.node]
                wl = d.task.rsplit("/", 2)[0]
                assert not node.removed and node.schedulable, f"{self.name}: {d.task} started on {d.node}"
                assert wl not in st_.withdrawn, f"{self.name}: withdrawn {wl} started"
                st_.start(d.task, d.node, self.now)
                self.started[d.task] = d.node
                starts.append(d)
            elif isinstance(d, Preempt) and d.allocation in st_.allocations and self.graceful:
                st_.mark_preempting(d.allocation)
            elif isinstance(d, Preempt) and d.allocation in st_.allocations:
                st_.end(d.allocation)
                st_.requeue(d.allocation)
        return starts


_OPS = st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(["q0", "q1"]), st.integers(1, 3), st.sampled_from([1, 2, 3]),
              st.integers(0, 2)),
    st.tuples(st.just("add"), st.sampled_from([2, 4, 8])),
    st.tuples(st.just("remove"), st.integers(0, 7)),
    st.tuples(st.just("readd"), st.integers(0, 7), st.sampled_from([2, 4, 8])),
    st.tuples(st.just("withdraw"), st.integers(0, 30)),
    st.tuples(st.just("cordon"), st.integers(0, 7), st.booleans()),
    st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 3.0])),
)


def _run_ops(d: Driver, ops: list[tuple]) -> None:
    st_ = d.state
    for op in ops:
        kind = op[0]
        live = [n for n in st_.node_names if not st_.nodes[n].removed]
        gone = [n for n in st_.node_names if st_.nodes[n].removed]
        if kind == "submit":
            d.submit(op[1], op[2], op[3], op[4])
        elif kind == "add":
            d.add_node(f"x{len(st_.node_names)}", op[1])
        elif kind == "remove" and len(live) > 1:
            d.remove_node(live[op[1] % len(live)])
        elif kind == "readd" and gone:
            d.add_node(gone[op[1] % len(gone)], op[2])
        elif kind == "withdraw" and st_.workloads:
            ids = list(st_.workloads)
            d.withdraw(ids[op[1] % len(ids)])
        elif kind == "cordon" and live:
            st_.set_schedulable(live[op[1] % len(live)], op[2])
        d.step(op[1] if kind == "wait" else 1.0)
    for _ in range(3):
        d.step(2.0)


@pytest.mark.parametrize("model", MODELS)
def test_random_topology_and_cancel(model: str) -> None:
    @settings(max_examples=EXAMPLES.get(model, DEFAULT_EXAMPLES), deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(nodes=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=3),
           ops=st.lists(_OPS, min_size=4, max_size=18))
    def run(nodes: list[int], ops: list[tuple]) -> None:
        d = Driver(model, nodes)
        for i in range(4):
            d.submit("q0" if i % 2 else "q1", 1, 2, i % 3, duration=4.0)
        _run_ops(d, ops)
        # withdrawn work is gone for good, whatever the model kept about it
        for wid in d.state.withdrawn:
            assert wid not in d.state.pending and not d.state.running.get(wid)
    run()


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("before", [False, True], ids=["submit-after-add", "submit-before-add"])
def test_workload_fitting_only_a_new_node_starts_there(model: str, before: bool) -> None:
    """A task bigger than every node starts once a node that holds it joins (YTsaurus fails such
    an operation at submission, as the real one does, so there only a later submission counts)."""
    if before and model == "ytsaurus":
        pytest.skip("YTsaurus fails an operation no node can hold; covered by the other case")
    d = Driver(model, [4, 4])
    for i in range(3):
        d.submit("q0", 1, 2, 0, duration=50.0)
    d.step()
    d.step()
    big = d.submit("q1", 1, 12, 1, duration=5.0) if before else None
    d.step()
    d.add_node("big", 16)
    if not before:
        big = d.submit("q1", 1, 12, 1, duration=5.0)
    for _ in range(6):
        d.step()
        if f"{big}/0/0" in d.started:
            break
    assert d.started.get(f"{big}/0/0") == "big"


@pytest.mark.parametrize("model", MODELS)
def test_removed_node_is_never_used_and_can_come_back(model: str) -> None:
    d = Driver(model, [4, 4])
    for _ in range(4):
        d.submit("q0", 1, 2, 0, duration=2.0)
    d.step()
    d.remove_node("n0")
    assert d.state.nodes["n0"].removed and d.state.nodes["n0"].capacity == {}
    assert d.state.total_capacity_cached() == {"cpu": 4}
    for _ in range(8):  # the requeued tasks run on n1 only
        d.step()
    assert not d.state.pending
    d.add_node("n0", {"cpu": 8}["cpu"])
    assert d.state.node_order["n0"] == 0 and d.state.total_capacity_cached() == {"cpu": 12}
    wid = d.submit("q1", 1, 6, 0)
    for _ in range(4):
        d.step()
    assert d.started.get(f"{wid}/0/0") == "n0"


def test_state_refuses_what_a_live_executor_must_not_do() -> None:
    state = ClusterState(["cpu"], [Queue("root")], [Node("a", {"cpu": 2})])
    state.submit(Workload("w", "root", 0.0, 1.0, (TaskGroup(2, {"cpu": 1}),)))
    state.start("w/0/0", "a", 0.0)
    with pytest.raises(StateError, match="still runs"):
        state.remove_node("a")
    with pytest.raises(StateError, match="already"):
        state.add_node(Node("a", {"cpu": 4}))
    before = (state.submit_epoch, state.pending_log.position)
    assert state.withdraw("w") == ["w/0/1"]
    assert (state.submit_epoch, state.pending_log.position) == (before[0] + 1, before[1] + 1)
    assert state.withdraw("w") == []
    state.end("w/0/0")
    with pytest.raises(StateError, match="withdrawn"):
        state.requeue("w/0/0")
    epoch = state.topology_epoch
    state.remove_node("a")
    assert state.topology_epoch == epoch + 1
    with pytest.raises(StateError):
        state.set_schedulable("a", True)
    freed = state.freed_epoch
    state.add_node(Node("b", {"cpu": 1}))
    assert state.freed_epoch == freed + 1 and state.node_names == ["a", "b"] and state.node_freed_epoch[1] == freed + 1
    assert state.free_index().first_fit({"cpu": 1}) == 1
    assert not state.check_invariants()
