"""Named resource vectors and quantities.

A resource vector is a plain ``dict[str, number]`` keyed by resource name. ``None`` ("nil") is a
distinct value from ``{}`` ("empty"), and a type missing from a map is not always zero: for a limit
it means "unlimited in that type" (YuniKorn's max, Kueue's borrowingLimit). Plain dicts keep the hot
paths cheap; callers never mutate a vector they did not create, every helper returns a new dict.

The helpers named after YuniKorn's (``sub_only_existing``, ``fit_in`` ...) follow its exact
semantics, because the YuniKorn models are specified in terms of them; the generic ones (``add``,
``sub``, ``fits``) are what the rest of the core uses.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Iterable, Mapping, Optional

Number = int | float
Res = dict[str, Number]
MaybeRes = Optional[Mapping[str, Number]]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
MAX_QUANTITY = INT64_MAX
"""The largest quantity accepted (Kubernetes' own limit, int64): anything above is a typo or fuzz, and
exact huge integers (``1e400``) would later overflow float arithmetic."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "K": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9),
            "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|[numkKMGTPE]?)\s*$")


class QuantityError(ValueError):
    """A quantity string that cannot be read; the message says what was wrong with it."""


def _shown(value: object) -> str:
    """The value as quoted in an error message, cut short (a fuzzer's 400-digit number is one line)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return "a number of more than 38 digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_quantity(value: object, *, allow_negative: bool = False) -> Number:
    """Read a Kubernetes-style quantity (``500m``, ``10Gi``, ``1.5``, ``2k``) or a plain number.

    Returns an ``int`` when the value is integral (exact arithmetic for the common case) and a
    ``float`` otherwise. Negative values are refused unless asked for, since capacities, quotas and
    requests are never negative.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{_shown(value)} is not a quantity")
    if isinstance(value, int):
        number: Decimal = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{_shown(value)} is not a finite quantity")
        number = Decimal(repr(value))
    elif isinstance(value, str):
        m = _QUANTITY.match(value)
        if not m:
            raise QuantityError(f"{_shown(value)} is not a quantity")
        try:
            base = Decimal(m.group(1))
        except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
            raise QuantityError(f"{_shown(value)} is not a quantity") from exc
        suffix = m.group(2)
        if base.adjusted() > 40:
            raise QuantityError(f"{_shown(value)} is too large (limit {MAX_QUANTITY}, 2^63-1)")
        number = base * (_BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix])
    else:
        raise QuantityError(f"{_shown(value)} is not a quantity")
    if not number.is_finite():
        raise QuantityError(f"{_shown(value)} is not a finite quantity")
    if number < 0 and not allow_negative:
        raise QuantityError(f"{_shown(value)} is negative")
    if abs(number) > MAX_QUANTITY:
        raise QuantityError(f"{_shown(value)} is too large (limit {MAX_QUANTITY}, 2^63-1)")
    if number == number.to_integral_value():
        return int(number)
    return float(number)


def parse_resources(values: Mapping[str, object] | None, *, allow_negative: bool = False) -> Res | None:
    """Parse a map of quantities; ``None`` stays ``None`` (not set)."""
    if values is None:
        return None
    return {str(k): parse_quantity(v, allow_negative=allow_negative) for k, v in values.items()}


def format_quantity(value: Number) -> str:
    """Short human form of a quantity, with binary suffixes for large powers of two."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 2**30 and value % 2**20 == 0:
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if value % factor == 0:
                return f"{value // factor}{suffix}"
        return f"{value / 2**30:.3g}Gi"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


# ---------------------------------------------------------------------------------------------
# Generic vector arithmetic (missing = 0 unless stated)


def add(a: MaybeRes, b: MaybeRes) -> Res:
    """Union of types, missing = 0; never returns None."""
    out: Res = dict(a) if a else {}
    if b:
        for k, v in b.items():
            out[k] = out.get(k, 0) + v
    return out


def sub(a: MaybeRes, b: MaybeRes) -> Res:
    out: Res = dict(a) if a else {}
    if b:
        for k, v in b.items():
            out[k] = out.get(k, 0) - v
    return out


def scale(a: MaybeRes, factor: Number) -> Res:
    return {k: v * factor for k, v in (a or {}).items()}


def add_into(acc: Res, b: MaybeRes, sign: int = 1) -> None:
    """In-place accumulate, for incremental indexes the owner controls.

    Float sums are rounded to 9 decimals so that running totals of fractional quantities
    (0.1 + 0.1 + 0.1 cpu) land exactly on the value a user wrote instead of drifting above it.
    """
    if b:
        for k, v in b.items():
            x = acc.get(k, 0) + sign * v
            acc[k] = round(x, 9) if type(x) is float else x


def fits(request: MaybeRes, available: MaybeRes) -> bool:
    """Node fit: every requested type is at most what is available; a missing type counts as 0."""
    if not request:
        return True
    avail = available or {}
    for k, v in request.items():
        if v > 0 and v > avail.get(k, 0) + 1e-9:
            return False
    return True


def fits_limit(request: MaybeRes, limit: MaybeRes) -> bool:
    """Quota fit: a type missing from the limit (or a None limit) is unlimited."""
    if not request or limit is None:
        return True
    for k, v in request.items():
        if k in limit and v > limit[k] + 1e-9:
            return False
    return True


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






def total_of(vectors: Iterable[MaybeRes]) -> Res:
    out: Res = {}
    for v in vectors:
        add_into(out, v)
    return out


# ---------------------------------------------------------------------------------------------
# YuniKorn's helpers, exactly as its preemption code relies on them (SEMANTICS section 0).


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
    return {k: _saturate(v - delta.get(k, 0)) for k, v in base.items()}


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
