"""makeway as a library: config + trace -> results without the CLI, the same answer the CLI gives."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import makeway

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "examples" / "quickstart.yaml"


def test_every_public_name_resolves():
    for name in makeway.__all__:
        assert getattr(makeway, name) is not None, name


def test_run_file_equals_the_cli(tmp_path):
    rec = makeway.run_file(QUICKSTART)
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "makeway", "simulate", str(QUICKSTART), "-q", "-o", str(out)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    cli = json.loads(out.read_text())
    lib = json.loads(json.dumps(rec.results(), default=str))
    assert lib["summary"] == cli["summary"] and lib["events"] == cli["events"]
    assert lib["summary"]["preemptions"] > 0


def test_run_takes_a_config_object_a_trace_and_a_horizon():
    cfg = makeway.load_config(QUICKSTART)
    rec = makeway.run(cfg, REPO / "examples" / "quickstart-trace.jsonl", horizon=100)
    s = rec.summary()
    assert s["stopped"] == "horizon" and s["jobs_finished"] < s["jobs_submitted"]


def test_bad_input_is_a_makeway_error_before_any_work(tmp_path):
    cfg = makeway.load_config(QUICKSTART)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(makeway.MakewayError, match="holds no workload"):
        makeway.run(cfg, empty)
    assert makeway.run(cfg, empty, allow_empty=True).summary()["jobs_submitted"] == 0
