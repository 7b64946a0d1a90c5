"""``makeway bench --repeat N`` reports each scenario's best run, every run's value beside it."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from makeway import benchmarks
from makeway.benchmarks import best_of, figure, met


def test_the_best_run_is_the_smallest_time_and_the_largest_rate():
    runs = [[figure("t", 3.0, "s", 2.0, cpu_s=3.0), figure("r", 900.0, "jobs/s", 1000)],
            [figure("t", 1.5, "s", 2.0, cpu_s=1.5), figure("r", 800.0, "jobs/s", 1000)],
            [figure("t", 2.5, "s", 2.0, cpu_s=2.5), figure("r", 1100.0, "jobs/s", 1000)]]
    t, r = best_of(runs)
    assert (t["value"], t["cpu_s"], t["runs"]) == (1.5, 1.5, [3.0, 1.5, 2.5]) and met(t)
    assert (r["value"], r["runs"]) == (1100.0, [900.0, 800.0, 1100.0]) and met(r)


def test_one_run_is_reported_as_it_is_and_nan_is_never_best():
    one = [figure("t", 3.0, "s", 2.0)]
    assert best_of([one]) == one and not met(one[0])
    got = best_of([[figure("u", float("nan"), "ms", 100)], [figure("u", 120.0, "ms", 100)]])[0]
    assert got["value"] == 120.0 and math.isnan(got["runs"][0])
    assert met(figure("x", 1.0, "s", None)) is None


def test_bench_repeat_runs_each_scenario_that_many_times(tmp_path, monkeypatch):
    from makeway.cli import app

    values = iter([5.0, 2.0, 4.0])
    calls = []

    def scenario(quick):
        calls.append(quick)
        return [figure("fake_s", next(values), "s", 3.0)]

    monkeypatch.setitem(benchmarks.SCENARIOS, "fake", scenario)
    out = tmp_path / "b.json"
    res = CliRunner().invoke(app, ["bench", "--quick", "--only", "fake", "--repeat", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    fig = json.loads(out.read_text())[0]
    assert calls == [True] * 3 and fig["value"] == 2.0 and fig["runs"] == [5.0, 2.0, 4.0]
    assert "fake_s" in res.output and "yes" in res.output
