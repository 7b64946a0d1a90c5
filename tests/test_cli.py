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
    assert where in lenient.stderr and "1 unreadable record skipped" in lenient.stderr
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


@pytest.mark.parametrize("skipped, text", [
    (0, None),
    (1, "warning: 1 unreadable record skipped (use --strict to stop at the first)"),
    (5, "warning: 5 unreadable records skipped (use --strict to stop at the first)"),
])
def test_skipped_count_is_singular_or_plural(capsys, skipped, text):
    from makeway.cli import _warn_stats
    from makeway.sim.importers import ImportStats

    _warn_stats(ImportStats(skipped=skipped), strict=False)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ([text] if text else [])


@pytest.mark.parametrize("too_big, warning", [
    ([], None),
    (["huge"], "warning: 1 workload can never start: a task asks for more than any node has "
               "(first: huge asks memory 40Gi, largest node has 32Gi)"),
    (["huge", "wide"], "warning: 2 workloads can never start: a task asks for more than any node has "
                       "(first: huge asks memory 40Gi, largest node has 32Gi)"),
])
def test_unplaceable_workloads_are_warned_about(tmp_path, too_big, warning):
    shutil.copy(EXAMPLES / "quickstart.yaml", tmp_path)
    lines = (EXAMPLES / "quickstart-trace.jsonl").read_text().splitlines()
    extra = {"huge": {"cpu": 1, "memory": "40Gi"}, "wide": {"cpu": 9}}
    for i, wl in enumerate(too_big):
        lines.append(json.dumps({"id": wl, "queue": "batch", "submit": 100 + i, "duration": 10,
                                 "tasks": [{"count": 1, "resources": extra[wl]}]}))
    (tmp_path / "quickstart-trace.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    p = run("simulate", str(tmp_path / "quickstart.yaml"), "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines() == ([warning] if warning else [])
    summary = json.loads(out.read_text())["summary"]
    assert summary["unplaceable"] == len(too_big)
    assert summary["jobs_finished"] == summary["jobs_submitted"] - len(too_big)


def test_help_and_version():
    p = run("-h")
    assert p.returncode == 0 and "simulate" in p.stdout
    p = run("simulate", "-h")
    assert p.returncode == 0 and "--out" in p.stdout and "-o" in p.stdout
    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("makeway ")


def test_first_fit_is_named_and_fifo_stays_an_alias(tmp_path):
    outs = []
    for name in ("first-fit", "fifo"):
        out = tmp_path / f"{name}.json"
        p = run("simulate", "examples/quickstart.yaml", "--model", name, "-q", "-o", str(out))
        assert p.returncode == 0, p.stderr
        r = json.loads(out.read_text())
        outs.append((r["summary"], r["workloads"]))
    assert outs[0] == outs[1]


def test_ctrl_c_says_how_far_and_writes_nothing(tmp_path):
    """SIGINT during a long run: one line with the simulated time reached, no results file, exit 130."""
    import signal
    import time

    cfg = tmp_path / "long.yaml"
    cfg.write_text("resources: [cpu]\nnodes: [{name: n, capacity: {cpu: 1}}]\nqueues: {q: {}}\n"
                   "preemption: {model: none}\ntrace: long.jsonl\n")
    (tmp_path / "long.jsonl").write_text("".join(
        json.dumps({"id": f"j{i}", "queue": "q", "submit": i, "duration": 5,
                    "tasks": [{"count": 1, "resources": {"cpu": 1}}]}) + "\n" for i in range(400_000)))
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "makeway", "simulate", str(cfg), "-q", "-o", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.startswith("interrupted") and "no results were written" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
