"""Paths and small builders shared by the Kueue tests."""

from pathlib import Path

from makeway.policies.kueue.quota import Admitted, CohortSpec, CQSpec, FlavorQuota, Policy, QuotaTree

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared"
CASES = REPO / "tests" / "conformance" / "kueue" / "cases"  # the repository copy of shared/
CONFIGS = SHARED / "configs" / "kueue"
F = "default"


def cpu(n: float) -> dict:
    return {(F, "cpu"): int(n * 1000)}


def quota(nominal: float, borrowing: float | None = None, lending: float | None = None) -> dict:
    m = lambda v: None if v is None else int(v * 1000)  # noqa: E731
    return {(F, "cpu"): FlavorQuota(int(nominal * 1000), m(borrowing), m(lending))}


def cq(name, cohort=None, nominal=0.0, borrowing=None, lending=None, weight=1.0, **policy) -> CQSpec:
    return CQSpec(name, cohort, weight, quota(nominal, borrowing, lending), [(("cpu",), (F,))], Policy(**policy))


def tree(cohorts, cqs, workloads=()) -> QuotaTree:
    t = QuotaTree([c if isinstance(c, CohortSpec) else CohortSpec(c) for c in cohorts], cqs)
    for w in workloads:
        t.add_workload(w)
    return t


def wl(name, queue, cpus, priority=0, admitted=0.0, created=0.0, evicted=False) -> Admitted:
    return Admitted(name, queue, priority, cpu(cpus), admitted, created, name, evicted)
