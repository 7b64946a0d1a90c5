"""Golden decision logs: performance work on the Kueue model must not change a single decision.

Each scenario runs the simulator with a recording wrapper around ``KueueModel`` and hashes every
decision (time, kind, task/allocation, node, rule, preemptor, values). The digests were recorded
before the model was optimised; a change here means a decision changed, not just its speed.
"""

import random
from pathlib import Path

import pytest

from makeway import benchmarks as B
from makeway.config import build_state, load_config
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.kueue import KueueModel
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import load_jsonl
from tests.decision_log import RecordsSchedule, digest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kueue" / "cluster.yaml"


class Recording(RecordsSchedule, KueueModel):
    pass


def run_example() -> list[str]:
    cfg = load_config(EXAMPLE)
    model = Recording(cfg.preemption.settings)
    workloads, changes = load_jsonl(EXAMPLE.parent / "trace.jsonl")
    simulate(build_state(cfg), model, workloads, changes, options=SimOptions())
    return model.log


def run_baseline(scale: float = 0.02) -> list[str]:
    state, workloads = B.kueue_baseline(scale=scale)
    model = Recording({})
    simulate(state, model, workloads, options=SimOptions())
    return model.log


def run_random(fair: bool, seed: int = 3, n: int = 100, grace: float = 0.0, cls=None) -> list[str]:
    rnd = random.Random(seed)
    policy = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    queues = [Queue("org", settings={"kind": "Cohort"}), Queue("sub", "org", settings={"kind": "Cohort"})]
    for i in range(5):
        groups = [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4 + 2 * i,
                                         **({"borrowingLimit": 6} if i % 2 else {})}]}]}]
        queues.append(Queue(f"q{i}", "sub" if i >= 3 else "org", weight=1.0 + i % 2,
                            settings={"kind": "ClusterQueue", "resourceGroups": groups, "preemption": policy}))
    state = ClusterState(["cpu"], queues, [Node(f"n{i}", {"cpu": 8}, {"flavor": "f"}) for i in range(5)])
    workloads, t = [], 0.0
    for j in range(n):
        t += rnd.expovariate(1 / 3.0)
        workloads.append(Workload(f"w{j}", f"q{rnd.randrange(5)}", round(t, 1), rnd.choice([20.0, 60.0, 200.0]),
                                  (TaskGroup(rnd.choice([1, 2, 4]), {"cpu": rnd.choice([1, 2, 3])}),),
                                  rnd.choice([0, 1, 5]), grace=grace))
    model = (cls or Recording)({"fairSharing": {}} if fair else {})
    simulate(state, model, workloads, options=SimOptions(check_invariants=True))
    return model.log


GOLDEN = {
    "example": "0fb3afe0cb5d2b2d",
    "baseline": "7d70c8ce1159475f",
    # Re-recorded (2026-11-29): a parked workload is requeued by a release of quota in its own cohort
    # tree only (Kueue's requeueWorkloadsCQ), or by any end when it waited for room on the nodes
    # (tests/kueue/test_requeue_scope.py). First change, t=1.3: cohort-3's parked heads are no
    # longer requeued by cohort-4's preemption at t=1.2, so cq-0-1-cohort-3/small-13 preempts in the
    # instant's first call, before cohort-4's starts.
    "baseline_05": "61a3193fe59170ed",
    "random_fair": "351195845e3643a1",
    # Re-recorded (issue 19): classic head order compares the borrowing *level* (height of the cohort
    # subtree the request borrows from), as Kueue's makeClassicalIterator does (Assignment.Borrows()
    # is an int; kueue-cycle case sched-in-a-hierarchical-cohort-workload-borrowing-less-is-scheduled-
    # first). First change, t=217.3: w66 (q4 in sub, borrows from sub) now goes before w52 (q0,
    # borrows from org; same priority, earlier), is admitted without preempting, and w52 waits.
    "random_classic": "7efff00377d9ad2b",
    # Re-recorded (issue 13) when a workload admitted and finished between two calls was found
    # to leave its release unnoticed, so parked workloads stayed parked on an idle cluster.
    # victims with a grace period: they keep their quota, marked evicted, until they leave
    # (re-recorded when a stale "no targets" memo was fixed; equal to evaluating every head,
    # see test_grace_period_decides_as_full_evaluation)
    "grace_fair": "ec7a3c069928d2a1",
    # issue 19, same rule: at t=83.5 w18 (q3 in sub, lower borrowing level) goes before the older w11
    # (q1, borrows from org; same priority), preempts w23 as before, and w11 no longer fits after it.
    "grace_classic": "b856e5f4ecd0cc41",
}


@pytest.mark.skipif(not EXAMPLE.is_file(), reason="example missing")
def test_example_golden():
    assert digest(run_example()) == GOLDEN["example"]


def test_baseline_golden():
    assert digest(run_baseline()) == GOLDEN["baseline"]


def test_baseline_larger_golden():
    assert digest(run_baseline(0.05)) == GOLDEN["baseline_05"]


def test_random_fair_sharing_golden():
    assert digest(run_random(True)) == GOLDEN["random_fair"]


def test_random_classic_golden():
    assert digest(run_random(False)) == GOLDEN["random_classic"]


def test_grace_period_golden():
    assert digest(run_random(True, seed=4, grace=1.5)) == GOLDEN["grace_fair"]
    assert digest(run_random(False, seed=4, grace=1.5)) == GOLDEN["grace_classic"]


class FullEvaluation(Recording):
    """The model with ``caches: false`` (the ground truth for the caches): every head evaluated
    from scratch, every call made; no twin's no-op outcome, GetTargets answer, "no targets" stamp
    or flavor assignment is reused."""

    def __init__(self, settings=None):
        super().__init__({**(settings or {}), "caches": False})


@pytest.mark.parametrize("fair,seed", [(False, 3), (False, 5)])
def test_noop_memo_decides_as_full_evaluation(fair, seed):
    """Heads are skipped when a twin decided nothing under the same stamps; a deep backlog of mixed
    pod shapes (2 pods x 1 cpu and 1 pod x 2 cpu are equal quota, not equal placement) must still
    decide exactly as evaluating every head."""
    assert run_random(fair, seed=seed, n=300) == run_random(fair, seed=seed, n=300, cls=FullEvaluation)


@pytest.mark.parametrize("fair", [True, False])
def test_grace_period_decides_as_full_evaluation(fair):
    """A "no targets" answer recorded while a call's own admissions sat in the quota tree was once
    reused by a later call with the same admitted set but without that usage."""
    assert run_random(fair, seed=4, grace=1.5) == run_random(fair, seed=4, grace=1.5, cls=FullEvaluation)
