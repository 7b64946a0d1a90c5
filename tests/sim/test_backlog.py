"""The default model's backlog skips only what would fail: its decisions equal a full re-scan's.

The reference below re-tries every pending workload on every pass, in pending order, with a plain
node scan; the default model files failures by reason and re-tries only what a release or a limit
change could have helped. Random clusters, gangs, queue limits, quota changes and node outages
must give the same starts, at the same times, on the same nodes, in the same order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.policy import PreemptionModel
from makeway.core.resources import add_into
from makeway.core.state import ClusterState
from makeway.core.placement import exceeds_free, first_fit, pending_order, within_queue_max
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange


class FullRescan(PreemptionModel):
    """Every pending workload, every pass, every node: slow and obviously right."""

    def schedule(self, state, now):
        out, nodes, queues, total = [], {}, {}, {}
        for wl_id in pending_order(state):
            wl = state.workloads[wl_id]
            need = state.pending_demand(wl_id)
            if exceeds_free(state, need, total) or not within_queue_max(state, wl.queue, need, queues):
                continue
            starts = first_fit(state, list(state.pending[wl_id]), nodes, nodes=list(state.nodes))
            if starts is None:
                continue
            for s in starts:
                add_into(nodes.setdefault(s.node, {}), state.task_resources(s.task))
            for q in state.path_to_root(wl.queue):
                add_into(queues.setdefault(q, {}), need)
            add_into(total, need)
            out.extend(starts)
        return out


def _cluster(caps, maxes):
    queues = [Queue("root"), Queue("a", "root", max=maxes[0]), Queue("b", "root", max=maxes[1])]
    nodes = [Node(f"n{i}", {"cpu": c, "mem": m}) for i, (c, m) in enumerate(caps)]
    return ClusterState(["cpu", "mem"], queues, nodes)


job = st.tuples(st.sampled_from("ab"), st.integers(0, 30), st.integers(1, 25), st.integers(1, 3),
                st.sampled_from([1, 2, 3, 4]), st.sampled_from([1, 2, 4, 8]), st.integers(0, 2))
limit = st.one_of(st.none(), st.builds(lambda c: {"cpu": c}, st.integers(2, 12)))


@settings(max_examples=60, deadline=None)
@given(caps=st.lists(st.tuples(st.sampled_from([2, 4, 8]), st.sampled_from([4, 8, 16])), min_size=1, max_size=6),
       maxes=st.tuples(limit, limit), jobs=st.lists(job, min_size=1, max_size=40),
       changes=st.lists(st.tuples(st.integers(0, 40), st.sampled_from("ab"), limit), max_size=3),
       outage=st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(1, 20), st.integers(5, 30))))
def test_backlog_decides_as_a_full_rescan(caps, maxes, jobs, changes, outage):
    runs = []
    for model in (PriorityFirstFit(), FullRescan(), PriorityFirstFit({"caches": False})):
        state = _cluster(caps, maxes)
        wls = [Workload(f"w{i}", q, float(t), float(d), (TaskGroup(n, {"cpu": c, "mem": m}),), prio)
               for i, (q, t, d, n, c, m, prio) in enumerate(jobs)]
        chs = [ConfigChange(float(t), q, {"max": mx}) for t, q, mx in changes]
        if outage is not None:
            node, down, up = outage
            node = f"n{node % len(caps)}"
            original = model.schedule

            def schedule(state, now, original=original, node=node, down=down, up=up):
                # a node outage between passes, as a service would see it
                state.set_schedulable(node, not (down <= now < down + up))
                return original(state, now)
            model.schedule = schedule
        rec = simulate(state, model, wls, chs, SimOptions(record_starts=True))
        runs.append([(e["time"], e["allocation"], e["node"]) for e in rec.events if e["kind"] == "start"])
    assert runs[0] == runs[1] == runs[2]


def test_backlog_retries_only_on_the_freed_node():
    """One freed node: a filed single is tried there, and new work of a filed shape is settled at once."""
    state = ClusterState(["cpu"], [Queue("root")], [Node(f"n{i}", {"cpu": 2}) for i in range(3)])
    model = PriorityFirstFit()
    for i in range(3):
        state.submit(Workload(f"big{i}", "root", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0))
    state.submit(Workload("late", "root", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0))
    first = model.schedule(state, 0.0)
    assert [(d.task, d.node) for d in first] == [("big0/0/0", "n0"), ("big1/0/0", "n1"), ("big2/0/0", "n2")]
    for d in first:
        state.start(d.task, d.node, 0.0)
    assert "late" in model._backlog.failed
    state.submit(Workload("later", "root", 1.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0))
    assert model.schedule(state, 1.0) == []
    assert "later" in model._backlog.failed
    state.finish("big1/0/0")
    assert [(d.task, d.node) for d in model.schedule(state, 10.0) if isinstance(d, Start)] == [("late/0/0", "n1")]
