"""Every conformance loader answers the keys its README documents, not only the visible cases' keys.

Three checks per pack (kueue, ytsaurus, symphony, yunikorn; kueue-cycle has its own in
``tests/kueue/test_cycle_schema.py``):

1. **Coverage**: every expected key the README documents is exercised by a visible case or by a
   case written in this file (``WRITTEN``) from a visible one.
2. **No key is ignored**: in every visible case, each asserted key replaced by a value no loader
   can produce must fail the case (a loader that skipped or echoed the key would still pass).
3. **Values are compared**: each scalar inside an asserted value, changed alone (a bool flipped, a
   number moved, a string altered), must fail the case, except where the README gives the key a
   one-sided meaning (``ONE_SIDED``).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from makeway.conformance.result import CaseResult
from makeway.registry import case_loader

PACKS = Path(__file__).resolve().parent / "conformance"
SENTINEL = "<a value no loader produces>"

# Descriptive keys the READMEs mark as not asserted.
INFORMATIONAL = {"comparison", "note", "notes", "sideEffect", "sideEffects", "afterReset", "derivedPreempted"}
# Keys whose meaning is one-sided, so changing one member can keep the assertion true:
# "these are not preempted" stays true for a key that does not exist; "at least one of" likewise.
ONE_SIDED = {"notPreempted", "preemptedAtLeastOneOf", "preemptionStatusNot", "excludedLeaves"}
# Descriptive members inside an asserted value (the README says they restate the input).
DESCRIPTIVE = {"setup"}


def run(case: dict) -> CaseResult:
    loader = case_loader(case["model"])
    assert loader is not None, case["model"]
    try:
        return loader(case)
    except Exception as exc:  # a crash on a bad expectation is a failure, as in the runner
        return CaseResult(False, case.get("expected"), f"{type(exc).__name__}: {exc}")


def cases(pack: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((PACKS / pack / "cases").rglob("*.json"))]


def _readme(pack: str) -> str:
    return (PACKS / pack / "README.md").read_text()


def _json_block_keys(pack: str) -> set[str]:
    block = re.search(r'"expected": \{\n(.*?)\n\s*\}', _readme(pack), re.S)
    assert block, f"{pack}: README expected block not found"
    return set(re.findall(r'^\s*"(\w+)":', block.group(1), re.M))


def _table_keys(pack: str, start: str, end: str) -> set[str]:
    text = _readme(pack)
    i = text.index(start)
    keys: set[str] = set()
    for line in text[i:text.index(end, i)].splitlines():
        if line.startswith("| `"):
            keys |= {k.rstrip("[]") for k in re.findall(r"`([\w\[\]]+)`", line.split("|")[1])}
    return keys


def documented(pack: str) -> set[str]:
    if pack in ("kueue", "symphony"):
        return _json_block_keys(pack) - INFORMATIONAL
    if pack == "ytsaurus":
        return _table_keys(pack, "## 4. `expected`", "## 5.")
    return _table_keys(pack, "### `expected` fields (ask-triggered", "### `expected` fields (quota")


def _first(pack: str, key: str) -> dict:
    for case in cases(pack):
        if key in case["expected"]:
            return copy.deepcopy(case)
    raise AssertionError(f"{pack}: no visible case asserts {key}")


def _ytsaurus_max(source: str, key: str) -> dict:
    case = _first("ytsaurus", source)
    case["expected"] = {key: {el: max(vec.values()) for el, vec in case["expected"][source].items()}}
    return case


def _priority_case() -> dict:
    """SEMANTICS 4.3: a starving pool lends its status to its non-starving operation under the default
    scope, not under ``operation_only``; an aggressively starving operation is aggressive either way."""
    one = {"user_slots": 1, "cpu": 1, "memory": 1}
    def op(name: str, pool: str, status: str | None = None) -> dict:
        o = {"id": name, "pool": pool, "weight": 1.0, "demand": one,
             "allocations": [{"id": f"{name}1", "resources": one, "startTime": 0}], "pendingAllocationCount": 0}
        return {**o, "starvationStatus": status} if status else o
    pools = [{"name": "P", "parent": "<Root>", "weight": 1.0, "starvationStatus": "starving"},
             {"name": "Q", "parent": "<Root>", "weight": 1.0}]
    return {"id": "ytsaurus/written-preemption-priority", "model": "ytsaurus-fair-share", "tolerance": 0,
            "input": {"totalResources": {"user_slots": 10, "cpu": 10, "memory": 10}, "config": {}, "pools": pools,
                      "operations": [op("a", "P"), op("b", "Q", "aggressively_starving"), op("c", "Q")]},
            "expected": {}}


def _ytsaurus_priorities() -> dict:
    case = _priority_case()
    case["expected"] = {"preemptionPriority": {"operation_and_ancestors": {"a": "normal", "b": "aggressive", "c": "none"},
                                               "operation_only": {"a": "none", "b": "aggressive", "c": "none"}}}
    return case


def _ytsaurus_stages() -> dict:
    case = _priority_case()
    case["expected"] = {"stageParticipation": {"regular": ["a", "b", "c"], "preemptive_normal": ["a"],
                                               "PreemptiveAggressive": ["b"]}}
    return case


def _ytsaurus_usage_equals_demand() -> dict:
    case = _first("ytsaurus", "demandShare")
    ops = [o["id"] for o in case["input"]["operations"] if not o.get("allocations")]
    case["expected"] = {"usageShareEqualsDemandShare": {op: False for op in ops}}
    return case


def _ytsaurus_promised() -> dict:
    case = _first("ytsaurus", "fairShare")
    case["expected"] = {"promisedGuaranteeFairShare": {el: {r: 0 for r in vec}
                                                       for el, vec in case["expected"]["fairShare"].items()}}
    return case


def _yunikorn_log_first() -> dict:
    case = _first("yunikorn", "allocationLogExactly")
    case["expected"]["allocationLogFirst"] = case["expected"]["allocationLogExactly"][0]
    return case


def _yunikorn_events() -> dict:
    case = _first("yunikorn", "preempted")
    while not case["expected"].get("ok"):
        case = next(c for c in cases("yunikorn") if c["expected"].get("ok") and c["expected"].get("preempted"))
    case["expected"]["events"] = len(case["expected"]["preempted"])
    return case


# Keys the READMEs document that no visible case asserts, each written here from a visible case
# with the answer the semantics give (checked to pass, then perturbed like any other key).
WRITTEN = {
    ("ytsaurus", "fairShareMax"): lambda: _ytsaurus_max("fairShare", "fairShareMax"),
    ("ytsaurus", "demandShareMax"): lambda: _ytsaurus_max("demandShare", "demandShareMax"),
    ("ytsaurus", "preemptionPriority"): _ytsaurus_priorities,
    ("ytsaurus", "stageParticipation"): _ytsaurus_stages,
    ("ytsaurus", "usageShareEqualsDemandShare"): _ytsaurus_usage_equals_demand,
    ("ytsaurus", "promisedGuaranteeFairShare"): _ytsaurus_promised,
    ("yunikorn", "allocationLogFirst"): _yunikorn_log_first,
    ("yunikorn", "events"): _yunikorn_events,
}

PACK_NAMES = ("kueue", "ytsaurus", "symphony", "yunikorn")


@pytest.mark.parametrize("pack", PACK_NAMES)
def test_every_documented_key_is_exercised(pack):
    used = {k for c in cases(pack) for k in c["expected"]}
    missing = sorted(k for k in documented(pack) - used if (pack, k) not in WRITTEN)
    assert not missing, f"{pack}: documented expected keys no case exercises: {missing}"


@pytest.mark.parametrize("pack,key", sorted(WRITTEN))
def test_written_cases_pass(pack, key):
    res = run(WRITTEN[(pack, key)]())
    assert res.ok, (res.expected, res.got, res.message)


def _asserted(pack: str) -> Iterator[tuple[dict, str]]:
    for case in cases(pack):
        for key in case["expected"]:
            if key not in INFORMATIONAL:
                yield case, key
    for (p, key), make in sorted(WRITTEN.items()):
        if p == pack:
            yield make(), key


@pytest.mark.parametrize("pack", PACK_NAMES)
def test_no_asserted_key_is_ignored(pack):
    ignored = []
    for case, key in _asserted(pack):
        bad = copy.deepcopy(case)
        bad["expected"][key] = SENTINEL
        if run(bad).ok:
            ignored.append(f"{case['id']}:{key}")
    assert not ignored, f"{pack}: keys a loader ignores: {ignored}"


def _scalar_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict):
        for k in value:
            yield from _scalar_paths(value[k], path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _scalar_paths(v, path + (i,))
    elif value is not None:
        yield path


def _changed(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1 if abs(v) < 1e6 else v / 2  # 1e9 stands for "infinite" in YTsaurus cases
    return f"{v}-changed"


@pytest.mark.parametrize("pack", PACK_NAMES)
def test_every_asserted_value_is_compared(pack):
    unnoticed = []
    for case, key in _asserted(pack):
        if key in ONE_SIDED:
            continue
        paths = [p for p in _scalar_paths(case["expected"][key]) if not (set(p) & (ONE_SIDED | DESCRIPTIVE))]
        for path in paths[:4]:
            bad = copy.deepcopy(case)
            if not path:
                bad["expected"][key] = _changed(bad["expected"][key])
            else:
                holder = bad["expected"][key]
                for p in path[:-1]:
                    holder = holder[p]
                holder[path[-1]] = _changed(holder[path[-1]])
            if run(bad).ok:
                unnoticed.append(f"{case['id']}:{key}{list(path)}")
    assert not unnoticed, f"{pack}: changed values the loader did not notice: {unnoticed}"
