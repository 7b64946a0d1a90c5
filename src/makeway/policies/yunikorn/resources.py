"""YuniKorn's resource arithmetic, exactly as its preemption and quota code rely on it (SEMANTICS section 0).

Kept apart from the generic vectors in ``core.resources`` because its rules are YuniKorn's own: a nil
vector differs from an empty one, int64 sums saturate, and several helpers consider only the types
present on one side. Only the YuniKorn model and its conformance loader use these.
"""

from __future__ import annotations

from typing import Iterable

from makeway.core.resources import INT64_MAX, INT64_MIN, MaybeRes, Number, Res


def is_zero(r: MaybeRes) -> bool:
    return r is None or all(v == 0 for v in r.values())


def is_empty(r: MaybeRes) -> bool:
    return r is None or len(r) == 0


def max_each(a: MaybeRes, b: MaybeRes) -> Res | None:
    """Union; a type on one side only keeps that side's value; both None -> None."""
    if a is None and b is None:
        return None
    out: Res = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = max(out[k], v) if k in out else v
    return out


def _saturate(v: Number) -> Number:
    if isinstance(v, int):
        if v > INT64_MAX:
            return INT64_MAX
        if v < INT64_MIN:
            return INT64_MIN
    return v


def sub_only_existing(base: MaybeRes, delta: MaybeRes) -> Res | None:
    """base's types only: base - delta. A None on either side gives a copy of base."""
    if base is None:
        return None
    if delta is None:
        return dict(base)
    # _saturate inlined: only an int outside int64 changes
    return {k: (x if INT64_MIN <= (x := v - delta.get(k, 0)) <= INT64_MAX else _saturate(x)) for k, v in base.items()}


def add_only_existing(base: MaybeRes, delta: MaybeRes) -> Res | None:
    if base is None:
        return None
    if delta is None:
        return dict(base)
    return {k: _saturate(v + delta.get(k, 0)) for k, v in base.items()}


def sub_eliminate_negative(a: MaybeRes, b: MaybeRes) -> Res:
    """a - b over the union; types that b names are clamped at 0."""
    out: Res = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = max(0, out.get(k, 0) - v)
    return out


def component_wise_min(a: MaybeRes, b: MaybeRes) -> Res | None:
    """Union; a type on one side only keeps that side's value (not min with 0)."""
    if a is None and b is None:
        return None
    if a is None:
        return dict(b)  # type: ignore[arg-type]
    if b is None:
        return dict(a)
    out: Res = dict(a)
    for k, v in b.items():
        out[k] = min(out[k], v) if k in out else v
    return out


def component_wise_min_only_existing(a: MaybeRes, b: MaybeRes) -> Res | None:
    if a is None:
        return None
    if b is None:
        return dict(a)
    return {k: (min(v, b[k]) if k in b else v) for k, v in a.items()}


def merge_if_not_present(a: MaybeRes, b: MaybeRes) -> Res | None:
    """a's values win; b adds the types a lacks."""
    if a is None and b is None:
        return None
    out: Res = dict(a or {})
    for k, v in (b or {}).items():
        out.setdefault(k, v)
    return out


def fit_in(larger: MaybeRes, smaller: MaybeRes) -> bool:
    """Node fit: smaller[k] <= max(0, larger[k]); a type missing from larger counts as 0."""
    if smaller is None:
        return True
    big = larger or {}
    return all(v <= max(0, big.get(k, 0)) for k, v in smaller.items())


def fit_in_max_undef(larger: MaybeRes, smaller: MaybeRes) -> bool:
    """Quota fit: a type missing from larger is unlimited; a None larger accepts everything."""
    if larger is None or smaller is None:
        return True
    return all(v <= max(0, larger[k]) for k, v in smaller.items() if k in larger)


def fit_in_actual(larger: MaybeRes, smaller: MaybeRes) -> bool:
    """Guarantee fit: types missing from larger are skipped; values compared as they are."""
    if smaller is None:
        return True
    big = larger or {}
    return all(v <= big[k] for k, v in smaller.items() if k in big)


def strictly_greater_than(a: MaybeRes, b: MaybeRes) -> bool:
    """Every a[k] >= b[k] over the union (missing = 0) and at least one differs."""
    keys = set(a or {}) | set(b or {})
    differs = False
    for k in keys:
        x, y = (a or {}).get(k, 0), (b or {}).get(k, 0)
        if x < y:
            return False
        if x != y:
            differs = True
    return differs


def strictly_greater_than_or_equals(a: MaybeRes, b: MaybeRes) -> bool:
    keys = set(a or {}) | set(b or {})
    return all((a or {}).get(k, 0) >= (b or {}).get(k, 0) for k in keys)


def _greater_only_existing(a: MaybeRes, b: MaybeRes, or_equals: bool) -> bool:
    if not a:
        return False
    if not b:
        return all(v > 0 for v in a.values())
    shared = [k for k in a if k in b]
    if not shared:
        return True
    if any(b[k] > a[k] for k in shared):
        return False
    return True if or_equals else any(b[k] != a[k] for k in shared)


def strictly_greater_than_only_existing(a: MaybeRes, b: MaybeRes) -> bool:
    return _greater_only_existing(a, b, or_equals=False)


def strictly_greater_than_or_equals_only_existing(a: MaybeRes, b: MaybeRes) -> bool:
    return _greater_only_existing(a, b, or_equals=True)


def strictly_greater_than_zero(r: MaybeRes) -> bool:
    if not r:
        return False
    return all(v >= 0 for v in r.values()) and any(v > 0 for v in r.values())


def equals(a: MaybeRes, b: MaybeRes, *, same_ref: bool = False) -> bool:
    """YuniKorn's Equals: the same object is equal; a None side is not; else union, missing = 0."""
    if same_ref or a is b:
        return True
    if a is None or b is None:
        return False
    keys = set(a) | set(b)
    return all(a.get(k, 0) == b.get(k, 0) for k in keys)


def equals_or_empty(a: MaybeRes, b: MaybeRes) -> bool:
    if is_zero(a) and is_zero(b):
        return True
    return equals(a, b)


def deep_equals(a: MaybeRes, b: MaybeRes) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return dict(a) == dict(b)


def match_any(a: MaybeRes, b: MaybeRes) -> bool:
    if a is None or b is None:
        return False
    return any(k in b for k in a)


def type_matching(base: MaybeRes, other: MaybeRes) -> int:
    if base is None or other is None or not base:
        return 0
    shared = sum(1 for k in base if k in other)
    return (100 * shared) // len(base)


def shares_type_wise(r: MaybeRes, total: MaybeRes, types: Iterable[str] | None = None) -> list[float]:
    """Per non-zero type of r: r/total (or the raw value without a usable total), sorted ascending."""
    out: list[float] = []
    wanted = None if types is None else set(types)
    for k, v in (r or {}).items():
        if v == 0 or (wanted is not None and k not in wanted):
            continue
        t = (total or {}).get(k, 0) if total is not None else 0
        out.append(float(v) / t if t else float(v))
    out.sort()
    return out


def compare_shares(left: list[float], right: list[float]) -> int:
    """Compare two ascending share lists from the largest entry down; leftovers decide by sign."""
    i, j = len(left) - 1, len(right) - 1
    while i >= 0 and j >= 0:
        if left[i] != right[j]:
            return 1 if left[i] > right[j] else -1
        i -= 1
        j -= 1
    while i >= 0:
        if left[i] != 0:
            return 1 if left[i] > 0 else -1
        i -= 1
    while j >= 0:
        if right[j] != 0:
            return -1 if right[j] > 0 else 1
        j -= 1
    return 0


def comp_usage_ratio_specific_types(left: MaybeRes, right: MaybeRes, total: MaybeRes,
                                    types: MaybeRes | Iterable[str] | None) -> int:
    names = None if types is None else list(types)
    return compare_shares(shares_type_wise(left, total, names), shares_type_wise(right, total, names))


def ask_queue_under(ask: Res, remaining: Res | None) -> bool:
    """False iff some type the ask requests has a negative remaining guarantee."""
    rem = remaining or {}
    return not any(k in rem and rem[k] < 0 for k in ask)


def victim_queue_over(ask: Res, remaining: Res | None) -> bool:
    rem = remaining or {}
    return any(k in rem and rem[k] < 0 for k in ask)
