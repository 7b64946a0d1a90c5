import pytest

from makeway.core import resources as R
from makeway.policies.yunikorn import resources as YR
from makeway.core.resources import QuantityError, parse_quantity


@pytest.mark.parametrize("text, value", [
    ("500m", 0.5), ("1", 1), ("1.5", 1.5), ("10Gi", 10 * 2**30), ("2k", 2000), ("1M", 10**6),
    ("128Mi", 128 * 2**20), (3, 3), (2.5, 2.5), ("0", 0), ("1e3", 1000), ("250m", 0.25), ("2000m", 2),
])
def test_parse_quantity(text, value):
    got = parse_quantity(text)
    assert got == value
    assert isinstance(got, int) == float(value).is_integer()


@pytest.mark.parametrize("text, problem", [
    ("12Qx", "is not a quantity"), ("-5", "is negative"), (-1, "is negative"), ("", "is not a quantity"),
    ("1.2.3", "is not a quantity"), (True, "is not a quantity"), (None, "is not a quantity"),
    (float("inf"), "not a finite"), ("Gi", "is not a quantity"),
])
def test_parse_quantity_rejects(text, problem):
    with pytest.raises(QuantityError, match=problem):
        parse_quantity(text)


def test_negative_allowed_when_asked():
    assert parse_quantity("-5", allow_negative=True) == -5


@pytest.mark.parametrize("request_, available, expected", [
    ({"cpu": 2}, {"cpu": 2}, True),
    ({"cpu": 3}, {"cpu": 2}, False),
    ({"gpu": 1}, {"cpu": 8}, False),          # a missing type counts as zero on a node
    ({"gpu": 0}, {"cpu": 8}, True),
    ({}, {}, True),
    (None, None, True),
])
def test_fits(request_, available, expected):
    assert R.fits(request_, available) is expected


@pytest.mark.parametrize("request_, limit, expected", [
    ({"cpu": 2, "gpu": 5}, {"cpu": 2}, True),    # a limit that does not name gpu is unlimited in gpu
    ({"cpu": 3}, {"cpu": 2}, False),
    ({"cpu": 3}, None, True),                     # no limit at all
    ({"cpu": 1}, {"cpu": 0}, False),              # zero is a limit, not "unset"
])
def test_fits_limit_not_set_differs_from_zero(request_, limit, expected):
    assert R.fits_limit(request_, limit) is expected


def test_arithmetic_returns_new_dicts():
    a, b = {"cpu": 1}, {"cpu": 2, "gpu": 1}
    c = R.add(a, b)
    assert c == {"cpu": 3, "gpu": 1} and a == {"cpu": 1}
    assert R.sub(b, a) == {"cpu": 1, "gpu": 1}
    assert R.add(None, None) == {}


@pytest.mark.parametrize("fn, a, b, expected", [
    (YR.sub_only_existing, None, {"a": 1}, None),
    (YR.sub_only_existing, {"a": 5}, {"a": 3, "b": 1}, {"a": 2}),
    (YR.component_wise_min, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    (YR.component_wise_min, None, None, None),
    (YR.merge_if_not_present, {"a": 1}, {"a": 2, "b": 3}, {"a": 1, "b": 3}),
    (YR.sub_eliminate_negative, {"a": 1, "b": 5}, {"a": 3}, {"a": 0, "b": 5}),
])
def test_yunikorn_helpers(fn, a, b, expected):
    assert fn(a, b) == expected


def test_int64_saturation():
    assert YR.sub_only_existing({"a": R.INT64_MIN}, {"a": 1}) == {"a": R.INT64_MIN}
    assert YR.add_only_existing({"a": R.INT64_MAX}, {"a": 1}) == {"a": R.INT64_MAX}


def test_format_quantity():
    assert R.format_quantity(32 * 2**30) == "32Gi"
    assert R.format_quantity(3) == "3"
