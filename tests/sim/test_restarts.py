"""The recorder keeps every restart of an evicted task (time, node, eviction time) and writes it to
the results, so ``explain`` can tell the whole story of a preempted workload."""

import json

import pytest

from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.sim.engine import simulate

from .helpers import cluster, job
from .test_engine import EvictYoungest

LO = [job("lo", count=8, duration=100)]


@pytest.mark.parametrize("name, jobs, expect", [
    ("never preempted", [job("j", duration=10)], {}),
    ("preempted once", LO + [job("hi", submit=10, duration=5, priority=9)],
     {"lo": [(15.0, "lo/0/0", 10.0)]}),
    # the second preemptor evicts the youngest allocation: lo/0/0 again, just after its restart
    ("preempted twice", LO + [job("hi", submit=10, duration=5, priority=9),
                              job("hi2", submit=50, duration=5, priority=9)],
     {"lo": [(15.0, "lo/0/0", 10.0), (55.0, "lo/0/0", 50.0)]}),
    ("finished during grace", [job("lo", count=8, duration=20, grace=30),
                               job("hi", submit=10, duration=5, priority=9)], {}),
])
def test_restarts_table(name, jobs, expect):
    rec = simulate(cluster(), EvictYoungest(), jobs)
    got = {w: [(t, a, ev) for t, a, _, ev in rs] for w, rs in rec.restarts.items()}
    assert got == expect, name
    for w, rs in rec.restarts.items():
        assert all(node in rec.state.nodes for _, _, node, _ in rs), name
        assert rec.first_start[w] < rs[0][0], f"{name}: first_start must stay the very first start"


def test_start_once_workloads_keep_no_restart_state():
    rec = simulate(cluster(), PriorityFirstFit(), [job(f"j{i}", submit=i, duration=5) for i in range(20)])
    assert rec.restarts == {} and rec._evicted_at == {}


def test_results_json_carries_restarts_per_workload():
    jobs = LO + [job("hi", submit=10, duration=5, priority=9), job("hi2", submit=50, duration=5, priority=9)]
    runs = [json.dumps(simulate(cluster(), EvictYoungest(), jobs).results(), sort_keys=True) for _ in range(2)]
    assert runs[0] == runs[1], "results must stay deterministic"
    rows = {w["id"]: w for w in json.loads(runs[0])["workloads"]}
    assert rows["hi"]["restarts"] == [] and rows["hi2"]["restarts"] == []
    assert [(r["time"], r["allocation"], r["evicted_at"]) for r in rows["lo"]["restarts"]] == \
        [(15.0, "lo/0/0", 10.0), (55.0, "lo/0/0", 50.0)]
    assert {"time", "allocation", "node", "evicted_at"} == set(rows["lo"]["restarts"][0])
    assert rows["lo"]["first_start"] == 0.0
