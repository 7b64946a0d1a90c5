import pytest

from makeway.core.decisions import Preempt, Reason, Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.core.policy import PreemptionModel
from makeway.core.placement import first_fit
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.sim.engine import SimOptions, SimulationError, simulate
from makeway.sim.trace import ConfigChange

from .helpers import cluster, job


class EvictYoungest(PriorityFirstFit):
    """Test model: a pending workload of higher priority evicts the youngest lower-priority allocation."""

    name = "test-evict"

    def schedule(self, state, now):
        out = super().schedule(state, now)
        if out:
            return out
        for wl_id in sorted(state.pending, key=lambda w: (-state.workloads[w].priority, w)):
            prio = state.workloads[wl_id].priority
            victims = sorted((a for a in state.allocations.values() if a.priority < prio and not a.preempting),
                             key=lambda a: (-a.start, a.id))
            if victims:
                v = victims[0]
                return [Preempt(v.id, Reason("test", "youngest", wl_id))]
        return []


@pytest.mark.parametrize("name, jobs, expect_finish", [
    ("one job", [job("j1", duration=10)], {"j1": 10}),
    ("fifo when full", [job("j1", count=8, duration=10), job("j2", submit=1, duration=5)], {"j1": 10, "j2": 15}),
    ("priority first", [job("big", count=8, duration=10), job("lo", submit=1, count=8, duration=5),
                        job("hi", submit=2, count=8, duration=5, priority=5)],
     {"big": 10, "hi": 15, "lo": 20}),
    ("gang waits for all", [job("j1", count=7, duration=10), job("j2", submit=1, count=2, duration=1)],
     {"j1": 10, "j2": 11}),
])
def test_default_model_table(name, jobs, expect_finish):
    rec = simulate(cluster(), PriorityFirstFit(), jobs)
    assert rec.finish_t == expect_finish, name
    assert rec.preemptions == 0


def test_preemption_requeues_and_counts_waste():
    jobs = [job("lo", count=8, duration=100), job("hi", submit=10, count=1, duration=5, priority=9)]
    rec = simulate(cluster(), EvictYoungest(), jobs)
    assert rec.preemptions == 1
    assert rec.wasted == {"cpu": 10}  # one cpu for the 10 s it ran
    assert rec.finish_t["hi"] == 15
    # the evicted task restarts when hi finishes and runs its full duration again
    assert rec.finish_t["lo"] == 115
    evt = [e for e in rec.events if e["kind"] == "preempt"][0]
    assert evt["reason"]["preemptor"] == "hi" and evt["reason"]["rule"] == "youngest"


def test_grace_period_keeps_resources_until_expiry():
    jobs = [job("lo", count=8, duration=100, grace=30), job("hi", submit=10, duration=5, priority=9)]
    rec = simulate(cluster(), EvictYoungest(), jobs)
    assert rec.finish_t["hi"] == 45  # starts at 40 when the victim's grace ends
    assert rec.wasted == {"cpu": 40}


def test_victim_that_finishes_during_grace_loses_nothing():
    jobs = [job("lo", count=8, duration=20, grace=30), job("hi", submit=10, duration=5, priority=9)]
    rec = simulate(cluster(), EvictYoungest(), jobs)
    assert rec.wasted == {}
    assert rec.finished_in_grace == 1
    assert rec.finish_t["hi"] == 25


def test_kill_at_requested_time():
    rec = simulate(cluster(), PriorityFirstFit(), [job("j", duration=100, requested=30)],
                   options=SimOptions(kill_at_requested_time=True))
    assert rec.finish_t["j"] == 30 and rec.summary()["killed_at_requested_time"] == 1


def test_queue_max_change_applies_to_later_placement():
    state = cluster()
    rec = simulate(state, PriorityFirstFit(),
                   [job("j1", count=2, duration=10), job("j2", submit=5, count=2, duration=10)],
                   [ConfigChange(1, "a", {"max": {"cpu": 2}})])
    assert rec.finish_t == {"j1": 10, "j2": 20}  # j2 waits for j1 under the lowered max
    assert [e["kind"] for e in rec.events] == ["config"]


class BadModel(PreemptionModel):
    def schedule(self, state, now):
        return [Start(t, "n0") for w in state.pending for t in state.pending[w]]


def test_start_that_does_not_fit_is_rejected():
    with pytest.raises(SimulationError, match="does not fit"):
        simulate(cluster(), BadModel(), [job("j", count=5)])


def test_unknown_victim_is_rejected():
    class Bad(PreemptionModel):
        def schedule(self, state, now):
            return [Preempt("nope", Reason("t", "r"))]

    with pytest.raises(SimulationError, match="unknown allocation"):
        simulate(cluster(), Bad(), [job("j")])


def test_heartbeat_models_get_called_and_loop_ends():
    class Beat(PreemptionModel):
        heartbeat_period = 5.0
        calls = 0

        def heartbeat(self, state, node, now):
            Beat.calls += 1
            starts = []
            for w in sorted(state.pending):
                s = first_fit(state, list(state.pending[w]), nodes=[node])
                if s:
                    starts.extend(s)
                    break
            return starts

    rec = simulate(cluster(), Beat(), [job("j", submit=2, duration=7)])
    assert rec.finish_t == {"j": 12}  # placed at the heartbeat at t=5
    assert Beat.calls > 2


def test_summary_utilisation():
    rec = simulate(cluster(nodes=1, cpu=2), PriorityFirstFit(), [job("j", count=1, duration=10)])
    assert rec.summary()["utilisation"]["cpu"] == pytest.approx(0.5)


def _mixed_cluster() -> ClusterState:
    nodes = [Node("small", {"cpu": 4, "memory": 64}), Node("big", {"cpu": 16, "memory": 32})]
    return ClusterState(["cpu", "memory", "gpu"], [Queue("root"), Queue("a", "root")], nodes)


def _wl(id, *groups, submit=0.0):
    return Workload(id, "a", submit, 10.0, tuple(TaskGroup(n, res) for n, res in groups))


@pytest.mark.parametrize("name, workloads, count, first, started", [
    ("fits one node", [_wl("w", (1, {"cpu": 16, "memory": 32}))], 0, None, {"w"}),
    ("too much memory", [_wl("w", (1, {"cpu": 1, "memory": 65}))], 1, ("w", "memory", 65, 64), set()),
    ("second group too big", [_wl("w", (2, {"cpu": 1}), (1, {"cpu": 17}))], 1, ("w", "cpu", 17, 16), set()),
    ("no node has the resource", [_wl("w", (1, {"gpu": 1}))], 1, ("w", "gpu", 1, 0), set()),
    ("empty group is ignored", [_wl("w", (0, {"cpu": 99}), (1, {"cpu": 1}))], 0, None, {"w"}),
    ("first in submit order is named", [_wl("ok", (1, {"cpu": 1})), _wl("x", (1, {"cpu": 20}), submit=1),
                                        _wl("y", (1, {"memory": 99}), submit=2)], 2, ("x", "cpu", 20, 16), {"ok"}),
    # within each resource's maximum but no single node has both: not caught, by design (cheap check)
    ("too big only in combination", [_wl("w", (1, {"cpu": 16, "memory": 64}))], 0, None, set()),
])
def test_workloads_bigger_than_every_node_are_counted(name, workloads, count, first, started):
    rec = simulate(_mixed_cluster(), PriorityFirstFit(), workloads)
    assert rec.unplaceable == rec.summary()["unplaceable"] == count, name
    assert rec.first_unplaceable == first, name
    assert set(rec.first_start) == started, name  # the check changes no scheduling decision


class PingPong(PreemptionModel):
    """Workloads in ``rivals`` run only on n0 and, when pending, take it from each other at every heartbeat
    of n0 (first pending rival in id order); everything else is first fit on the node that beats."""

    heartbeat_period = 5.0
    rivals = ("a", "b")
    rounds = None  # stop preempting after this many preemptions (None: never)

    def __init__(self, settings=None):
        super().__init__(settings)
        self.made = 0

    def heartbeat(self, state, node, now):
        out = []
        for w in sorted(state.pending):
            tasks = list(state.pending[w])
            if not tasks:
                continue
            if w not in self.rivals:
                out.extend(first_fit(state, tasks, nodes=[node]))
                continue
            if node != "n0":
                continue
            if state.fits_node(state.task_resources(tasks[0]), node):
                return out + [Start(tasks[0], node)]
            if self.rounds is not None and self.made >= self.rounds:
                continue
            victims = [t for t in state.node_allocs[node] if state.allocations[t].workload in self.rivals
                       and state.allocations[t].workload != w and not state.allocations[t].preempting]
            if victims:
                self.made += 1
                return out + [Preempt(victims[0], Reason("test", "ping-pong", w, "rival")), Start(tasks[0], node)]
        return out


def _pingpong(jobs, rounds=None, **opts):
    model = PingPong()
    model.rounds = rounds
    return simulate(cluster(nodes=2, cpu=1, queues=("a",)), model, jobs, options=SimOptions(**opts))


def test_no_progress_stops_a_livelock_and_says_why():
    rec = _pingpong([job("a", duration=100), job("b", submit=1, duration=100)])
    # a starts at 0; b is submitted at 1 and takes n0 at 5, a takes it back at 10, ...: no task ever
    # finishes. The last progress is b's first start at 5; the stop comes at the first preemption
    # once 600 s (the default window) have passed and the cycle has held for the last 300 s.
    assert rec.stopped_reason is not None and rec.stopped_reason.startswith("no-progress: from t=5 to t=605")
    assert rec.summary()["stopped"] == rec.stopped_reason
    assert rec.finish_t == {}
    assert rec.preemptions == 121  # one at every heartbeat of n0 from 5 (b takes it from a) to 605
    stop = [e for e in rec.events if e["kind"] == "stopped"]
    assert stop == [{"time": 605.0, "kind": "stopped", "reason": "no-progress", "message": rec.stopped_reason,
                     "workloads": ["a", "b"]}]
    again = _pingpong([job("a", duration=100), job("b", submit=1, duration=100)])
    assert again.events == rec.events  # deterministic


def test_no_progress_waits_for_a_steady_allocation_to_finish():
    # c runs on n1 for 2,000 s while a and b cycle on n0: progress is possible (c will finish), so
    # nothing stops before c's finish; the window counts again from there.
    rec = _pingpong([job("c", duration=2000), job("a", duration=100), job("b", submit=1, duration=100)])
    assert rec.finish_t == {"c": 2000}
    stop = next(e for e in rec.events if e["kind"] == "stopped")
    assert 2600 <= stop["time"] <= 2605 and stop["workloads"] == ["a", "b"]


def test_no_progress_waits_for_pending_submissions():
    rec = _pingpong([job("a", duration=100), job("b", submit=1, duration=100), job("late", submit=5000, duration=1)])
    assert rec.finish_t == {"late": 5001}  # placed on n1 by the heartbeat at its submission
    stop = next(e for e in rec.events if e["kind"] == "stopped")
    assert stop["time"] >= 5000 + 600


def test_no_progress_leaves_a_run_that_ends_alone_untouched():
    # 100 preemptions over 500 s, then the cycle stops and both finish: no stop, same as with the watch off
    jobs = [job("a", duration=100), job("b", submit=1, duration=100)]
    rec = _pingpong(jobs, rounds=100)
    assert rec.stopped_reason is None and rec.summary()["stopped"] is None
    assert rec.preemptions == 100 and set(rec.finish_t) == {"a", "b"}
    off = _pingpong(jobs, rounds=100, no_progress_window=float("inf"))
    assert off.events == rec.events and off.finish_t == rec.finish_t


def test_no_progress_can_be_switched_off_and_resized():
    jobs = [job("a", duration=100), job("b", submit=1, duration=100)]
    off = _pingpong(jobs, no_progress_window=float("inf"), horizon=3000)
    assert off.stopped_reason == "horizon" and off.preemptions == 600  # every heartbeat of n0 from 5 to 3000
    short = _pingpong(jobs, no_progress_window=100)
    assert short.stopped_reason.startswith("no-progress: from t=5 to t=105")
