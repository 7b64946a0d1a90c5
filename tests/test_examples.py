"""The shipped examples show what makeway is for: each makes way (preempts) under its own model,
and the quickstart's side-by-side run shows every preempting model doing it, with its reason."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.example_files import example_configs

from makeway.sim.run import run
from makeway.config import load_config, trace_path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# studies replay whole real traces from shared/ (hours of simulated load): tests/sim/test_study_inputs.py
# checks their files instead
CONFIGS = [p for p in example_configs() if "studies" not in p.parts]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_preempts_under_its_own_model(path):
    cfg = load_config(path)
    rec = run(cfg, trace_path(cfg, path))
    s = rec.summary()
    assert s["preemptions"] >= 1, f"{path.name} under {cfg.preemption.model} made no preemption"
    assert s["jobs_finished"] == s["jobs_submitted"] > 0
    assert cfg.preemption.model not in ("none", "first-fit", "fifo")


def test_quickstart_main_job_shows_each_model_making_way():
    """The README's main job: the quickstart under four models side by side, with who preempted whom."""
    p = subprocess.run([sys.executable, "-m", "makeway", "compare", "examples/quickstart.yaml",
                        "--model", "none,kueue,yunikorn,ytsaurus"], capture_output=True, text=True, cwd=REPO,
                       timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "none: no preemptions" in out
    for rule in ("kueue/InCohortReclamation", "yunikorn/inter-queue-preemption", "ytsaurus/preemptive-stage"):
        assert rule in out
    assert "prod-urgent <- batch-" in out
    assert "5 of 5" in out
