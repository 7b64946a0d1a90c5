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


def test_repeated_runs_take_the_exponent_between_the_smallest_costs(monkeypatch):
    """Runs alternate small and big; the slowest of each size (a busy spell) does not count."""
    costs = iter([2.0, 9.0, 1.0, 4.5, 1.5, 4.0])  # small, big, small, big, ...
    calls = []

    def scenario(scale):
        calls.append(scale)
        return next(costs), int(100 * scale)

    monkeypatch.setitem(growth.SCENARIOS, "fake", scenario)
    fig = growth.growth("fake", False, repeat=3)
    assert calls == [0.25, 1.0] * 3
    assert fig["small_cpu_s"] == 1.0 and fig["big_cpu_s"] == 4.0 and math.isclose(fig["value"], 1.0)
    assert fig["repeat"] == 3 and fig["small_cpu_s_runs"] == [2.0, 1.0, 1.5] and fig["big_cpu_s_runs"] == [9.0, 4.5, 4.0]
    with pytest.raises(ValueError, match="repeat: 0"):
        growth.growth("fake", False, repeat=0)


@pytest.mark.parametrize("args,message", [(["--repeat", "0"], "--repeat"), (["--repeat", "-1"], "--repeat")])
def test_bench_refuses_a_repeat_it_cannot_use(tmp_path, args, message):
    from typer.testing import CliRunner

    from makeway.cli import app

    res = CliRunner().invoke(app, ["bench", "--quick", "--only", "memory", "--out", str(tmp_path / "b.json"), *args])
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "b.json").exists()


def test_decision_growth_reads_the_median_decision_among_the_admitted():
    cost, n = growth.decision_cost(0.05)
    assert n == 500 and 0.0 < cost < 1000.0
    assert growth.UNITS["preemption-decision"] == "ms"


def test_decision_growth_at_the_quick_runs_small_size():
    """``bench --quick --growth`` asks for 625 admitted (1/16 of the full 10,000): taken as 600,
    which fill the 100 nodes and ClusterQueues; 625 left room and the preemptor needed no victim."""
    cost, n = growth.decision_cost(0.25 / 4)
    assert n == 600 and cost > 0.0


def test_the_decision_scenario_refuses_a_count_it_cannot_fill():
    from makeway.benchmarks import decision_ms

    with pytest.raises(ValueError, match="admitted: 625"):
        decision_ms(625, 1)


def test_fair_share_growth_scales_pools_and_operations():
    cost, n = growth.fair_share_cost(0.01)
    assert n == 1000
    assert math.isnan(cost) or cost > 0.0  # nan: numba (makeway[fast]) not installed
