"""Loader for ``yunikorn-resources`` cases: YuniKorn's resource helpers, row by row.

Each case names a Go helper in ``input.function`` and lists its arguments in ``input.rows``; the
matching results are in ``expected.rows``. The helpers under test are the generic ``add``/``sub``
of ``makeway.core.resources`` and YuniKorn's own in ``makeway.policies.yunikorn.resources``.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from makeway.conformance.result import CaseResult
from makeway.core.resources import add, sub
from makeway.policies.yunikorn import resources as R


def _both_ways(fn: Callable[[Any, Any], bool], row: dict, nil_as_empty: bool = False) -> dict:
    larger, smaller = row.get("larger"), row.get("smaller")
    if row.get("sameRef"):
        return {"largerVsSmaller": fn(larger, larger), "smallerVsLarger": fn(larger, larger)}
    rev_smaller = {} if (nil_as_empty and smaller is None) else smaller
    return {"largerVsSmaller": fn(larger, smaller), "smallerVsLarger": fn(rev_smaller, larger)}


# Go helper name -> our helper, called with the arguments in the order the signature names them.
HELPERS: dict[str, Callable[..., Any]] = {
    "Add": add, "Sub": sub, "AddOnlyExisting": R.add_only_existing,
    "SubOnlyExisting": R.sub_only_existing, "SubEliminateNegative": R.sub_eliminate_negative,
    "ComponentWiseMin": R.component_wise_min, "ComponentWiseMax": R.max_each,
    "ComponentWiseMinOnlyExisting": R.component_wise_min_only_existing,
    "MergeIfNotPresent": R.merge_if_not_present, "FitIn": R.fit_in, "FitInMaxUndef": R.fit_in_max_undef,
    "FitInActual": R.fit_in_actual, "MatchAny": R.match_any, "TypeMatching": R.type_matching,
    "IsZero": R.is_zero, "IsEmpty": R.is_empty, "StrictlyGreaterThanZero": R.strictly_greater_than_zero,
    "Equals": R.equals, "EqualsOrEmpty": R.equals_or_empty, "DeepEquals": R.deep_equals,
    "StrictlyGreaterThan": R.strictly_greater_than,
    "StrictlyGreaterThanOrEquals": R.strictly_greater_than_or_equals,
    "StrictlyGreaterThanOnlyExisting": R.strictly_greater_than_only_existing,
    "StrictlyGreaterThanOrEqualsOnlyExisting": R.strictly_greater_than_or_equals_only_existing,
    "CompUsageRatioSpecificTypes": R.comp_usage_ratio_specific_types,
    "GetSharesTypeWise": R.shares_type_wise,
}
# Helpers whose "only existing" variants read a nil receiver as empty when called the other way round.
_NIL_AS_EMPTY_REVERSED = {"StrictlyGreaterThanOnlyExisting", "StrictlyGreaterThanOrEqualsOnlyExisting"}

_CALL = re.compile(r"^\s*(?:(\w+)\.)?(\w+)\(([^)]*)\)")


def _signature(text: str) -> tuple[str, list[str]] | None:
    """``larger.FitIn(smaller)`` -> ("FitIn", ["larger", "smaller"]); ``Sub(a, b)`` -> ("Sub", ["a", "b"])."""
    m = _CALL.match(text)
    if not m:
        return None
    receiver, name, args = m.groups()
    names = [a.strip() for a in args.split(",") if a.strip()]
    return name, ([receiver] if receiver else []) + names


def _row_function(text: str) -> Callable[[dict], Any] | None:
    if " / " in text:
        # Several helpers in one table; each row says which one in ``fn``.
        sigs = [_signature(part) for part in text.split(" / ")]
        if any(s is None or s[0] not in HELPERS for s in sigs):
            return None
        table = {s[0]: s[1] for s in sigs if s}
        return lambda row: HELPERS[row["fn"]](*(row.get(a) for a in table[row["fn"]]))
    sig = _signature(text)
    if sig is None or sig[0] not in HELPERS:
        return None
    name, args = sig
    fn = HELPERS[name]
    if "both ways" in text:
        return lambda row: _both_ways(fn, row, nil_as_empty=name in _NIL_AS_EMPTY_REVERSED)
    return lambda row: fn(*(row.get(a) for a in args))


def _same(expected: Any, got: Any) -> bool:
    """Results compare by value; a resource ``None`` (nil) never equals ``{}`` (empty)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(_same(expected[k], got[k]) for k in expected)
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    return expected == got


def run_case(case: dict) -> CaseResult:
    inp, exp = case["input"], case["expected"]
    name = inp.get("function", "")
    fn = _row_function(name)
    if fn is None:
        return CaseResult(False, exp, None, f"no resource helper for {name!r}")
    rows = inp["rows"]
    got = [fn(row) for row in rows]
    bad = [i for i, (e, g) in enumerate(zip(exp["rows"], got)) if not _same(e, g)]
    if len(got) != len(exp["rows"]):
        bad.append(len(got))
    if bad:
        return CaseResult(False, [exp["rows"][i] for i in bad if i < len(exp["rows"])],
                          [got[i] for i in bad if i < len(got)], f"rows {bad} differ")
    return CaseResult(True, exp["rows"], got)
