"""The growth exponent reads cost ~ n^k from two runs; the scenarios it times scale their input."""

from __future__ import annotations

import math

import pytest

from makeway import growth


@pytest.mark.parametrize("small,big,ratio,k", [(1.0, 4.0, 4, 1.0), (1.0, 16.0, 4, 2.0), (2.0, 2.0, 4, 0.0),
                                                (1.0, 8.0, 2, 3.0)])
def test_exponent(small, big, ratio, k):
    assert math.isclose(growth.exponent(small, big, ratio), k)


def test_a_zero_cost_does_not_divide_by_zero():
    assert growth.exponent(0.0, 0.0) == 0.0


def test_throughput_scenario_scales_its_jobs():
    cost, n = growth.throughput_cost(0.005)
    assert n == 500 and cost >= 0.0


def test_every_bench_scenario_it_scales_is_reached_from_its_bench_name():
    assert growth.for_bench(["swf-fifo-easy"], True) == ["swf-fifo-strict", "swf-easy-backfill"]
    assert growth.for_bench(["memory", "throughput"], True) == ["memory", "throughput"]
    assert growth.for_bench(["ytsaurus-cluster"], True) == []
    assert growth.for_bench(["throughput"], False) == ["throughput", *[n for n in growth.SCENARIOS if n != "throughput"]]


def test_memory_growth_reads_bytes():
    cost, n = growth.memory_cost(0.005)
    assert n == 100 and cost > 1000
