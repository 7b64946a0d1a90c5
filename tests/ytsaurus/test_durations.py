"""Durations with units in YTsaurus settings ("5s", "500ms", "2m"): the same run as in seconds,
and a clear error for anything else (issue 17)."""

from __future__ import annotations

import json

import pytest

from makeway.config import build_state, parse_config
from makeway.errors import MakewayError
from makeway.policies.ytsaurus.durations import seconds
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import workload_from_record


@pytest.mark.parametrize("text, value", [("5s", 5.0), ("500ms", 0.5), ("2m", 120.0), ("1h30m", 5400.0),
                                         (".2s", 0.2), ("1d", 86400.0), (" 30s ", 30.0), (7, 7)])
def test_duration_strings_are_seconds(text, value):
    assert seconds(text) == value


def _config(settings: dict, queue_settings: dict | None = None):
    return parse_config({
        "name": "d", "resources": ["cpu"], "nodes": [{"name": "n", "count": 2, "capacity": {"cpu": 4}}],
        "queues": {"root": {}, "a": {"parent": "root", "guaranteed": {"cpu": 6}, "settings": queue_settings or {}},
                   "b": {"parent": "root"}},
        "preemption": {"model": "ytsaurus", "settings": settings}})


def _run(cfg) -> str:
    recs = [{"id": f"b{i}", "queue": "b", "submit": float(i), "duration": 500, "tasks": [{"count": 2, "resources": {"cpu": 1}}]}
            for i in range(4)]
    recs += [{"id": "a0", "queue": "a", "submit": 20.0, "duration": 100, "tasks": [{"count": 6, "resources": {"cpu": 1}}],
              "settings": {"allocation_preemption_timeout": "3s"}}]
    rec = simulate(build_state(cfg), load_model(cfg.preemption.model, cfg.preemption.settings),
                   [workload_from_record(r) for r in recs], options=SimOptions(horizon=2_000.0))
    res = rec.results({})
    return json.dumps({k: res[k] for k in ("summary", "events", "workloads")}, sort_keys=True, default=str)


def test_a_run_with_duration_strings_is_the_run_in_seconds():
    words = _config({"fair_share_starvation_timeout": "10s", "fair_share_update_period": "500ms",
                     "preemptive_scheduling_backoff": "5s", "allocation_graceful_preemption_timeout": "1m"},
                    {"fair_share_starvation_timeout": "12s"})
    numbers = _config({"fair_share_starvation_timeout": 10, "fair_share_update_period": 0.5,
                       "preemptive_scheduling_backoff": 5, "allocation_graceful_preemption_timeout": 60},
                      {"fair_share_starvation_timeout": 12})
    run = _run(words)
    assert run == _run(numbers)
    assert '"kind": "preempt"' in run


@pytest.mark.parametrize("bad", ["5x", "five seconds", "", "5 s", "-5s"])
def test_a_bad_duration_names_the_setting(bad):
    with pytest.raises(MakewayError) as err:
        _config({"fair_share_starvation_timeout": bad})
    msg = str(err.value)
    assert "preemption.settings.fair_share_starvation_timeout" in msg and "not a duration" in msg
