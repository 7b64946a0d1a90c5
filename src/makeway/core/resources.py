"""Named resource vectors and quantities.

A resource vector is a plain ``dict[str, number]`` keyed by resource name. ``None`` ("nil") is a
distinct value from ``{}`` ("empty"), and a type missing from a map is not always zero: for a limit
it means "unlimited in that type" (YuniKorn's max, Kueue's borrowingLimit). Plain dicts keep the hot
paths cheap; callers never mutate a vector they did not create, every helper returns a new dict.

YuniKorn's own helpers (``sub_only_existing``, ``fit_in`` ...) live with its model in
``policies/yunikorn/resources.py``; these are the generic ones the rest of the core uses.
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

EPS = 1e-9
"""The one tolerance of capacity and limit comparisons: float sums of fractional quantities (0.1 cpu
three times) may land a hair above the value a user wrote, and must still fit. Every model compares
through it, so no two models disagree on whether the same request fits."""

MAX_QUANTITY = INT64_MAX
"""The largest quantity accepted (Kubernetes' own limit, int64): anything above is a typo or fuzz, and
exact huge integers (``1e400``) would later overflow float arithmetic."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal(10) ** -9, "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
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
        if v > 0 and v > avail.get(k, 0) + EPS:
            return False
    return True


def fits_on(request: Mapping[str, Number], used: Mapping[str, Number], capacity: Mapping[str, Number],
            extra: Mapping[str, Number] | None = None) -> bool:
    """The node-fit predicate: every positive requested type fits the capacity left after ``used``
    and ``extra`` (what this step already promised there), within ``EPS``. The one definition of
    "fits on a node" that placement, pending reasons and every model use."""
    for k, v in request.items():
        if v > 0 and used.get(k, 0) + (extra.get(k, 0) if extra else 0) + v > capacity.get(k, 0) + EPS:
            return False
    return True


def fits_limit(request: MaybeRes, limit: MaybeRes) -> bool:
    """Quota fit: a type missing from the limit (or a None limit) is unlimited."""
    if not request or limit is None:
        return True
    for k, v in request.items():
        if k in limit and v > limit[k] + EPS:
            return False
    return True


def total_of(vectors: Iterable[MaybeRes]) -> Res:
    out: Res = {}
    for v in vectors:
        add_into(out, v)
    return out
