"""The Philly bench scenario (issue 20's whole-trace target): the study's cluster at 704 GPUs under
each preemption model, run here on the 40-job excerpt in tests/data (the whole trace takes tens of
minutes and is run with ``makeway bench --only philly``)."""

from pathlib import Path

import pytest

from makeway import benchmarks
from makeway.benchmarks import PHILLY_MODELS, bench_philly, philly_config, selected

EXCERPT = Path(__file__).resolve().parents[1] / "data" / "philly" / "philly.csv"


@pytest.mark.parametrize("model", PHILLY_MODELS)
def test_the_study_cluster_is_scaled_to_704_gpus_under_the_model(model):
    cfg, qmap = philly_config(model)
    assert cfg.preemption.model == model
    assert sum(n.count * n.capacity["gpu"] for n in cfg.nodes) == 704
    assert qmap.is_file()


def test_every_model_replays_the_trace_against_the_60_s_target(monkeypatch):
    monkeypatch.setattr(benchmarks, "_shared", lambda rel: EXCERPT)
    figures = bench_philly(False)
    assert [f["metric"] for f in figures] == [f"philly_{m}_cpu_s" for m in PHILLY_MODELS]
    for f in figures:
        assert f["target"] == 60.0 and f["unit"] == "s" and f["gpus"] == 704
        assert f["finished"] == 40  # 704 GPUs run all 40 jobs of the excerpt to their end
        assert f["simulated_s"] > 0


def test_without_the_trace_nothing_is_reported(monkeypatch):
    monkeypatch.setattr(benchmarks, "_shared", lambda rel: None)
    assert bench_philly(True) == []


def test_outside_a_clone_nothing_is_reported(monkeypatch):
    """An installed package has no examples/: the study's config is not found, nothing is run."""
    monkeypatch.setattr(benchmarks, "_shared", lambda rel: EXCERPT)
    monkeypatch.setattr(benchmarks, "_beside", lambda rel: None)
    assert philly_config("kueue") is None
    assert bench_philly(False) == []


def test_the_philly_scenario_runs_only_when_named():
    assert "philly" not in selected(None)
    assert selected(["philly"]) == ["philly"]
    assert set(selected(None)) | {"philly"} == set(benchmarks.SCENARIOS)
