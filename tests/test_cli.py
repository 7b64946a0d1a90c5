"""The CLI as a user meets it: exit codes, one-line errors, no tracebacks."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "makeway", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=120)


def test_simulate_quickstart(tmp_path):
    out = tmp_path / "r.json"
    p = run("simulate", "examples/quickstart.yaml", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "preemptions" in p.stdout and "jobs finished" in p.stdout
    results = json.loads(out.read_text())
    assert results["summary"]["jobs_finished"] == results["summary"]["jobs_submitted"] == 5


@pytest.fixture
def broken(tmp_path):
    def make(old: str, new: str) -> Path:
        shutil.copy(EXAMPLES / "quickstart-trace.jsonl", tmp_path)
        text = (EXAMPLES / "quickstart.yaml").read_text()
        assert old in text
        p = tmp_path / "q.yaml"
        p.write_text(text.replace(old, new, 1))
        return p
    return make


@pytest.mark.parametrize("old, new, message", [
    ("memory: 32Gi}", "memory: 12Qx}", "nodes.node.capacity.memory: '12Qx' is not a quantity"),
    ("cpu: 16, memory: 64Gi", "cpu: -5, memory: 64Gi", "queues.prod.guaranteed.cpu: -5 is negative"),
    ("queues:", "queues: [", "invalid YAML"),
])
def test_bad_config_exits_2_with_one_line(broken, old, new, message):
    p = run("simulate", str(broken(old, new)))
    assert p.returncode == 2
    assert message in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_missing_file_exits_2():
    p = run("simulate", "no/such/file.yaml")
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr


def test_bad_trace_line_is_named(tmp_path):
    shutil.copy(EXAMPLES / "quickstart.yaml", tmp_path)
    lines = (EXAMPLES / "quickstart-trace.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"cpu": 4', '"cpu": "lots"')
    (tmp_path / "quickstart-trace.jsonl").write_text("\n".join(lines) + "\n")
    where = "quickstart-trace.jsonl:3: tasks.0.resources.cpu: 'lots' is not a quantity"
    lenient = run("simulate", str(tmp_path / "quickstart.yaml"))
    assert lenient.returncode == 0  # skipped with a line-numbered warning and a count
    assert where in lenient.stderr and "1 unreadable records skipped" in lenient.stderr
    assert "jobs finished" in lenient.stdout and "4 of 4" in lenient.stdout
    strict = run("simulate", str(tmp_path / "quickstart.yaml"), "--strict")
    assert strict.returncode == 2 and where in strict.stderr and "Traceback" not in strict.stderr


def test_conformance_yunikorn_resources(shared, tmp_path):
    cases = [p for p in (shared / "conformance" / "yunikorn" / "cases").glob("res-*.json")
             if json.loads(p.read_text())["model"] == "yunikorn-resources"]
    assert cases
    p = run("conformance", *map(str, cases))
    assert p.returncode == 0, p.stdout
    assert p.stdout.strip().splitlines()[-1] == f"{len(cases)} passed, 0 failed"


def test_conformance_unknown_model_fails(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"id": "x/unknown", "model": "borg", "input": {}, "expected": {}}))
    p = run("conformance", str(tmp_path))
    assert p.returncode == 1
    assert "unknown model 'borg'" in p.stdout and p.stdout.strip().endswith("0 passed, 1 failed")
