"""The kueue-cycle loader follows the README schema, not only the keys the visible cases use.

Every expected key and every per-workload outcome field the README documents is enumerated from
the README itself; for each, a passing case is perturbed on that key alone and the loader must
then report a failure (a key it ignored would still pass). Input settings the loader cannot model
must be refused, never silently ignored.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from makeway.conformance.kueue_cycle import run_case

FOLDER = (Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "kueue-cycle").resolve()
pytestmark = pytest.mark.skipif(not FOLDER.is_dir(), reason="../shared is not beside the checkout")

# Documented as not asserted ("`message` is informational").
INFORMATIONAL = {"message"}


def _readme() -> str:
    return (FOLDER / "README.md").read_text()


def documented_expected_keys() -> set[str]:
    block = re.search(r'^  "expected": \{\n(.*?)^  \}', _readme(), re.S | re.M)
    assert block, "README schema block for expected not found"
    return set(re.findall(r'^    "(\w+)":', block.group(1), re.M))


def documented_outcome_fields() -> set[str]:
    fields: set[str] = set()
    for line in re.findall(r'^  \* `\{"outcome": .*$', _readme(), re.M):
        fields |= set(re.findall(r'"(\w+)"', line.split("`")[1])) - {"admitted", "preempted", "pending", "unchanged"}
    return fields


def _case(name: str) -> dict:
    return json.loads((FOLDER / "cases" / f"{name}.json").read_text())


def _with_outcome(outcome: str) -> tuple[dict, str]:
    for path in sorted((FOLDER / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        for key, w in case["expected"]["workloads"].items():
            if w["outcome"] == outcome:
                return case, key
    raise AssertionError(f"no case with outcome {outcome}")


def _with(key: str) -> dict:
    for path in sorted((FOLDER / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        if case["expected"].get(key):
            return case
    raise AssertionError(f"no case with expected.{key}")


def _perturb_expected(key: str) -> dict:
    case = copy.deepcopy(_with(key) if key not in ("pending", "inadmissible", "assignments") else
                         _case("sched-multiple-cqs-need-preemption"))
    exp = case["expected"]
    if key == "assignments":
        first = next(iter(exp["assignments"].values()))
        first["podSetAssignments"][0]["count"] += 1
    elif key == "admitted":
        exp["admitted"] = sorted(exp["admitted"] + ["nobody/ghost"])
    elif key == "preempted":
        victim = next(iter(exp["preempted"]))
        exp["preempted"][victim] = "InCohortFairSharing" if exp["preempted"][victim] != "InCohortFairSharing" \
            else "InClusterQueue"
    elif key in ("pending", "inadmissible"):
        exp[key] = {**exp[key], "ghost-cq": ["nobody/ghost"]}
    elif key == "workloads":
        w = next(iter(exp["workloads"].values()))
        w["outcome"] = "unchanged" if w["outcome"] != "unchanged" else "admitted"
    elif key == "skippedPreemptions":
        cq = next(iter(exp[key]))
        exp[key][cq] += 1
    elif key == "preemptionTargetRecomputations":
        cq = next(iter(exp[key]))
        result = next(iter(exp[key][cq]))
        exp[key][cq][result] += 1
    else:
        raise AssertionError(f"README documents expected.{key}, which this test cannot perturb: extend it")
    return case


@pytest.mark.parametrize("key", sorted(documented_expected_keys()) if FOLDER.is_dir() else [])
def test_every_documented_expected_key_is_compared(key):
    case = _perturb_expected(key)
    assert not run_case(case).ok, f"expected.{key} changed but the loader still passes: it ignores the key"


def test_readme_documents_the_keys_this_test_knows():
    assert documented_expected_keys() == {"assignments", "admitted", "preempted", "pending", "inadmissible",
                                          "workloads", "skippedPreemptions", "preemptionTargetRecomputations"}
    assert documented_outcome_fields() >= {"admittedCondition", "evictedReason", "preemptionReason",
                                           "quotaReservedReason", "message"}


_OUTCOME_OF = {"outcome": "pending", "admittedCondition": "admitted", "evictedReason": "preempted",
               "preemptionReason": "preempted",
               "quotaReservedReason": "pending"}


@pytest.mark.parametrize("field", sorted(documented_outcome_fields()) if FOLDER.is_dir() else [])
def test_every_documented_outcome_field_is_compared(field):
    if field in INFORMATIONAL:
        assert "`message` is informational" in _readme()
        return
    assert field in _OUTCOME_OF, f"README documents workloads.*.{field}: extend this test"
    case, key = _with_outcome(_OUTCOME_OF[field])
    case = copy.deepcopy(case)
    w = case["expected"]["workloads"][key]
    w[field] = (not w[field]) if isinstance(w[field], bool) else w[field] + "X"
    assert not run_case(case).ok, f"workloads.{key}.{field} changed but the loader still passes"


@pytest.mark.parametrize("path,value", [
    (("config", "admissionFairSharing"), {"usageHalfLifeTime": "1h"}),
    (("config", "waitForPodsReady"), {"blockAdmission": True}),
    (("config", "cycles"), 2),
    (("config", "quotaCheckStrategy"), "Something"),
    (("config", "featureGates", "SomeFutureGate"), True),
])
def test_unmodelled_settings_are_refused(path, value):
    case = copy.deepcopy(_case("sched-not-enough-resources"))
    node = case["input"]
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    r = run_case(case)
    assert not r.ok and "unsupported input" in r.message and path[-1] in r.message


def test_gate_partial_admission_is_read():
    case = _case("sched-partial-admission-single-variable-pod-set")
    assert run_case(case).ok
    case["input"]["config"]["featureGates"]["PartialAdmission"] = False
    assert not run_case(case).ok  # the workload no longer fits without partial admission
