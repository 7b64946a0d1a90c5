"""YuniKorn's quota-preemption e2e suite (k8shim ``test/e2e/quota-preemption``) replayed on virtual time.

Each scenario imports the suite's own ConfigMaps with our importer, turns the later ConfigMap into
config events (the queue diff), submits the suite's deployments and checks the running/pending pod
counts of ``root.parent.queue-a`` at the moments the suite asserts them (PROVENANCE.md 4.1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from makeway.adapters.yunikorn import import_files, import_workloads
from makeway.config import build_state, parse_config
from makeway.core.decisions import Note
from makeway.registry import load_model
from makeway.policies.yunikorn.quota import QuotaModel
from makeway.sim.engine import SimOptions, Simulation
from makeway.sim.trace import change_from_record, workload_from_record

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()
SUITE = SHARED / "configs/yunikorn/yunikorn-k8shim/test/e2e/testdata/quota-preemption"
QUEUE = "root.parent.queue-a"

pytestmark = pytest.mark.skipif(not SUITE.is_dir(), reason="../shared is not beside the checkout")


def _config(name: str) -> dict:
    cfg, _ = import_files([SUITE / "configs" / f"yunikorn-configs-{name}.yaml"])
    return cfg


def config_events(old: dict, new: dict, time: float) -> list[dict]:
    """The queue-level difference between two imported configs as makeway config events."""
    events = []
    for name, q in new["queues"].items():
        before = old["queues"].get(name, {})
        rec: dict = {"event": "config", "time": time, "queue": name}
        unset = []
        for key in ("max", "guaranteed"):
            if q.get(key) != before.get(key):
                if q.get(key) is None:
                    unset.append(key)
                else:
                    rec[key] = q[key]
        if q["settings"] != before.get("settings"):
            rec["settings"] = q["settings"]
        if unset:
            rec["unset"] = unset
        if len(rec) > 3:
            events.append(rec)
    return events


def simulate(initial: str, changes: list[tuple[float, str]], deployments: list[str], until: float,
             model: str = "quota") -> tuple[int, int, list[Note]]:
    """Run to ``until``; return (running, pending) pods of queue-a and the quota notes."""
    cfg = _config(initial)
    parsed = parse_config(cfg, initial)
    state = build_state(parsed)
    settings = parsed.preemption.settings
    m = QuotaModel(settings) if model == "quota" else load_model("yunikorn", settings)
    events, prev = [], cfg
    for t, name in changes:
        nxt = _config(name)
        events.extend(config_events(prev, nxt, t))
        prev = nxt
    wls = [workload_from_record(r) for r in import_workloads([SUITE / "deployments" / d for d in deployments])]
    sim = Simulation(state, m, SimOptions(horizon=until))
    sim.add_workloads(wls)
    sim.add_changes(change_from_record(e) for e in events)
    sim.run()
    running = sum(1 for tid in state.queue_allocs[QUEUE] if not state.allocations[tid].preempting)
    pending = sum(len(p) for w, p in state.pending.items() if state.workloads[w].queue == QUEUE)
    notes = [n for _, n in getattr(sim.recorder, "notes", [])] if hasattr(sim.recorder, "notes") else []
    return running, pending, notes


# The full YuniKorn model composes the same QuotaPreemption; its placement must admit three 100m pods
# under a 300m max (headroom and node room are compared rounded, as YuniKorn's integer units are).
MODELS = ["quota", "yunikorn"]
CHANGE = 10.0  # the moment the suite applies the second ConfigMap (all pods are running by then)


@pytest.mark.parametrize("model", MODELS)
def test_three_pods_run_under_the_initial_max(model):
    assert simulate("quota-preemption-enabled", [], ["deployment1.yaml"], 5, model)[:2] == (3, 0)


@pytest.mark.parametrize("model", MODELS)
def test_quota_lowered_to_200mi_preempts_one_pod_after_the_delay(model):
    changes = [(CHANGE, "quota-reduced")]  # 1 s delay
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 0.5, model)[:2] == (3, 0)
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 5, model)[:2] == (2, 1)


@pytest.mark.parametrize("model", MODELS)
def test_quota_raised_keeps_all_pods(model):
    changes = [(CHANGE, "quota-increased")]
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 30, model)[:2] == (3, 0)


@pytest.mark.parametrize("model", MODELS)
def test_partition_flag_off_keeps_all_pods(model):
    changes = [(CHANGE, "quota-reduced-preemption-disabled")]
    assert simulate("quota-preemption-disabled", changes, ["deployment1.yaml"], CHANGE + 30, model)[:2] == (3, 0)


@pytest.mark.parametrize("model", MODELS)
def test_20s_delay_waits_then_preempts(model):
    changes = [(CHANGE, "reduced-quota-preemption-20-seconds-delay")]
    assert simulate("quota-preemption-zero-delay", changes, ["deployment1.yaml"], CHANGE + 10, model)[:2] == (3, 0)
    assert simulate("quota-preemption-zero-delay", changes, ["deployment1.yaml"], CHANGE + 25, model)[:2] == (2, 1)


@pytest.mark.parametrize("model", MODELS)
def test_zero_delay_never_preempts(model):
    changes = [(CHANGE, "reduced-quota-preemption-zero-delay")]
    assert simulate("quota-preemption-zero-delay", changes, ["deployment1.yaml"], CHANGE + 60, model)[:2] == (3, 0)


@pytest.mark.parametrize("model", MODELS)
def test_delay_inherited_from_parent(model):
    changes = [(CHANGE, "parent-delay-child-quota-reduced")]
    assert simulate("parent-delay-no-child-delay", changes, ["deployment1.yaml"], CHANGE + 10, model)[:2] == (3, 0)
    assert simulate("parent-delay-no-child-delay", changes, ["deployment1.yaml"], CHANGE + 25, model)[:2] == (2, 1)


@pytest.mark.parametrize("model", MODELS)
def test_max_lowered_above_usage_preempts_nothing(model):
    changes = [(CHANGE, "quota-above-current-usage")]
    assert simulate("quota-preemption-enabled", changes, ["deployment2.yaml"], CHANGE + 30, model)[:2] == (2, 0)


@pytest.mark.parametrize("model", MODELS)
def test_delay_change_moves_a_running_timer(model):
    # 5 s timer armed at CHANGE; 2 s later the delay becomes 15 s: the start shifts by +10 s.
    changes = [(CHANGE, "quota-reduced-5s-delay"), (CHANGE + 2, "quota-reduced-15s-delay")]
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 7, model)[:2] == (3, 0)
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 14, model)[:2] == (3, 0)
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 20, model)[:2] == (2, 1)


@pytest.mark.parametrize("model", MODELS)
def test_further_reduction_with_longer_delay(model):
    changes = [(CHANGE, "quota-reduced-5s-delay"), (CHANGE + 2, "quota-further-reduced-100Mi-10s-delay")]
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 7, model)[:2] == (3, 0)
    assert simulate("quota-preemption-enabled", changes, ["deployment1.yaml"], CHANGE + 20, model)[:2] == (1, 2)


def test_quota_run_reports_its_numbers():
    changes = [(CHANGE, "quota-reduced")]
    cfg = _config("quota-preemption-enabled")
    parsed = parse_config(cfg, "x")
    state = build_state(parsed)
    model = QuotaModel(parsed.preemption.settings)
    sim = Simulation(state, model, SimOptions(horizon=CHANGE + 5))
    sim.add_workloads(workload_from_record(r) for r in import_workloads([SUITE / "deployments/deployment1.yaml"]))
    sim.add_changes(change_from_record(e) for e in config_events(cfg, _config("quota-reduced"), CHANGE))
    sim.run()
    run = model.quota.runs[-1]
    assert run.queue == QUEUE
    assert run.amount == {"cpu": 100, "memory": 100 * 2**20}  # fractional cpu is computed in millicores
    assert run.verdict == "successful"
    assert len(run.preempted) == 1
