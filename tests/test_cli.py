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
    # makeway's own JSONL is written by hand: a bad line is an error by default, not a silently lost job
    strict = run("simulate", str(tmp_path / "quickstart.yaml"))
    assert strict.returncode == 2 and where in strict.stderr and "Traceback" not in strict.stderr
    assert len(strict.stderr.strip().splitlines()) == 1 and strict.stdout == ""
    lenient = run("simulate", str(tmp_path / "quickstart.yaml"), "--lenient")
    assert lenient.returncode == 0  # skipped with a line-numbered warning and a count
    assert where in lenient.stderr and "1 unreadable record skipped" in lenient.stderr
    assert "jobs finished" in lenient.stdout and "4 of 4" in lenient.stdout


def test_conformance_yunikorn_resources(tmp_path):
    cases = [p for p in (Path(__file__).resolve().parent / "conformance" / "yunikorn" / "cases").glob("res-*.json")
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
    # SIGINT back to its default in the child: a shell's background job (e.g. CI started with '&')
    # passes SIGINT on ignored, and Python then leaves it ignored
    proc = subprocess.Popen([sys.executable, "-m", "makeway", "simulate", str(cfg), "-q", "-o", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.startswith("interrupted") and "no results were written" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# -- issue 13: every bad input is one line and exit 2, before any simulation work --------------------

def cli(*args: str):
    """In-process run (the fuzz test's harness): (exit status, stdout, stderr)."""
    from tests.test_fuzz_inputs import run_cli

    code, out, err, _ = run_cli(list(args))
    assert "Traceback" not in out + err
    if code == 2:
        assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return code, out, err


QUICK = str(EXAMPLES / "quickstart.yaml")


def _trace(tmp_path, *extra: dict, drop: int = 0) -> Path:
    lines = (EXAMPLES / "quickstart-trace.jsonl").read_text().splitlines()[drop:]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n")
    return p


@pytest.mark.parametrize("event, message", [
    ({"max": {"cpu": 4}}, "guaranteed.cpu: 8 is above max 4 (after this event)"),
    ({"max": {"gpu": 4}}, "max.gpu: unknown resource"),
    ({"guaranteed": {"cpu": 64}}, "guaranteed.cpu: 64 is above max 32"),
    ({"max": {"cpu": "1e400"}}, "max.cpu: '1e400' is too large"),
    ({"max": {"cpu": -1}}, "max.cpu: -1 is negative"),
    ({"weight": None}, "weight: null is not a value here"),
])
def test_config_event_is_validated_like_the_config(tmp_path, event, message):
    trace = _trace(tmp_path, {"event": "config", "time": 100, "queue": "batch", **event})
    code, out, err = cli("simulate", QUICK, "--trace", str(trace), "--strict")  # lenient skips unreadable events
    assert code == 2 and message in err and out == ""


def test_config_events_are_checked_against_the_queue_as_earlier_events_left_it(tmp_path):
    raise_max = {"event": "config", "time": 100, "queue": "batch", "max": {"cpu": 64}}
    raise_g = {"event": "config", "time": 200, "queue": "batch", "guaranteed": {"cpu": 48}}
    lower = {"event": "config", "time": 300, "queue": "batch", "max": {"cpu": 40}}
    assert cli("simulate", QUICK, "--trace", str(_trace(tmp_path, raise_max, raise_g)), "-q")[0] == 0
    code, _, err = cli("simulate", QUICK, "--trace", str(_trace(tmp_path, raise_max, raise_g, lower)))
    assert code == 2 and "t=300" in err and "guaranteed.cpu: 48 is above max 40" in err
    code, _, err = cli("simulate", QUICK, "--trace", str(_trace(tmp_path, raise_g)))  # not yet raised at t=200
    assert code == 2 and "t=200" in err and "guaranteed.cpu: 48 is above max 32" in err
    unknown = {"event": "config", "time": 5, "queue": "nope", "max": {"cpu": 1}}
    code, _, err = cli("simulate", QUICK, "--trace", str(_trace(tmp_path, unknown)))
    assert code == 2 and "queue: unknown queue 'nope'" in err


@pytest.mark.parametrize("command", [
    ["simulate", QUICK, "--out"], ["simulate", QUICK, "-o"], ["compare", QUICK, "--model", "none", "--model", "kueue", "-o"],
    ["trace", "convert", str(EXAMPLES / "quickstart-trace.jsonl")], ["bench", "--quick", "--out"],
    ["import", "kueue", str(EXAMPLES / "quickstart.yaml"), "-o"], ["report", str(EXAMPLES / "quickstart.yaml"), "-o"],
])
@pytest.mark.parametrize("where", ["missing-dir", "a-directory", "under-a-file"])
def test_unwritable_output_fails_before_any_work(tmp_path, command, where):
    target = {"missing-dir": tmp_path / "no" / "out", "a-directory": tmp_path,
              "under-a-file": tmp_path / "file" / "out"}[where]
    (tmp_path / "file").write_text("x")
    code, out, err = cli(*command, str(target))
    assert code == 2 and str(target) in err and out == ""
    if where == "missing-dir":
        assert "does not exist" in err


def test_duplicate_workload_id_names_both_lines(tmp_path):
    first = json.loads((EXAMPLES / "quickstart-trace.jsonl").read_text().splitlines()[0])
    trace = _trace(tmp_path, first)
    n = len(trace.read_text().splitlines())
    code, _, err = cli("simulate", QUICK, "--trace", str(trace))
    assert code == 2 and f"t.jsonl:{n}: id: workload {first['id']!r} is also on line 1" in err


def test_binary_config_and_trace(tmp_path):
    blob = tmp_path / "blob.yaml"
    blob.write_bytes(bytes(range(256)) * 4)
    code, _, err = cli("simulate", str(blob))
    assert code == 2 and "blob.yaml: not a text file" in err
    code, _, err = cli("simulate", QUICK, "--trace", str(blob), "--trace-format", "jsonl")
    assert code == 2 and "blob.yaml" in err
    code, _, err = cli("simulate", QUICK, "--trace", str(blob), "--trace-format", "jsonl", "--lenient")
    assert code == 2 and "no workload could be read" in err


@pytest.mark.parametrize("old, new, message", [
    ("count: 4", "count: 100000000000", "nodes.node.count: Input should be less than or equal to 1000000"),
    ("count: 4", "count: 600000", None),  # 600,000 is allowed alone ...
    ("memory: 32Gi}", "memory: 1e400}", "nodes.node.capacity.memory: '1e400' is too large"),
    ("memory: 32Gi}", "memory: .nan}", "nodes.node.capacity.memory: nan is not a finite quantity"),
    ("priority: 100", "priority: 3000000000", "queues.prod.priority: Input should be less than or equal to 2147483647"),
    ("trace: quickstart-trace.jsonl", "simulation: {heartbeat_period: 1e-300}\ntrace: quickstart-trace.jsonl",
     "simulation.heartbeat_period: Input should be greater than or equal to 0.001"),
    ("trace: quickstart-trace.jsonl", "simulation: {heartbeat_period: .inf}\ntrace: quickstart-trace.jsonl",
     "simulation.heartbeat_period: Input should be a finite number"),
    ("trace: quickstart-trace.jsonl", "simulation: {horizon: .nan}\ntrace: quickstart-trace.jsonl",
     "simulation.horizon: Input should be a finite number"),
    ("queues:", "queues:\n  deep: {settings: " + "[" * 300 + "]" * 300 + "}\n", "nested deeper than 64 levels"),
])
def test_sizes_and_non_finite_numbers_in_config(broken, old, new, message):
    cfg = broken(old, new)
    if message is None:
        text = cfg.read_text() + "\n"
        cfg.write_text(text.replace("nodes:\n", "nodes:\n  - {name: more, count: 500000, capacity: {cpu: 1}}\n", 1))
        code, _, err = cli("simulate", str(cfg))  # ... but not with 500,000 more
        assert code == 2 and "nodes: 1,100,000 nodes in all (counts added up); the limit is 1,000,000" in err
        return
    code, _, err = cli("simulate", str(cfg))
    assert code == 2 and message in err, err


@pytest.mark.parametrize("change, message", [
    ({"duration": 1e400}, "duration: Input should be a finite number"),
    ({"duration": float("nan")}, "duration: Input should be a finite number"),
    ({"submit": 1e11}, "submit: Input should be less than or equal to 10000000000"),
    ({"tasks": [{"count": 1e12, "resources": {"cpu": 1}}]}, "tasks.0.count: Input should be less than or equal to 1000000"),
    ({"tasks": [{"count": 600000, "resources": {"cpu": 1}}] * 2}, "tasks: 1,200,000 tasks in all"),
])
def test_non_finite_and_huge_numbers_in_a_trace(tmp_path, change, message):
    rec = {**json.loads((EXAMPLES / "quickstart-trace.jsonl").read_text().splitlines()[0]), "id": "x", **change}
    trace = _trace(tmp_path, rec)
    code, _, err = cli("simulate", QUICK, "--trace", str(trace), "--strict")
    assert code == 2 and message in err
    code, out, err = cli("simulate", QUICK, "--trace", str(trace))  # JSONL: strict unless told otherwise
    assert code == 2 and message in err and out == ""
    code, _, err = cli("simulate", QUICK, "--trace", str(trace), "--lenient", "-q")  # skipped with a warning
    assert code == 0 and message in err and "1 unreadable record skipped" in err


def test_nothing_to_simulate_is_an_error_unless_allowed(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("# nothing\n")
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"id": "a"}\n{"id": "b", "queue": 3}\n')
    no_trace = tmp_path / "c.yaml"
    no_trace.write_text((EXAMPLES / "quickstart.yaml").read_text().replace("trace: quickstart-trace.jsonl", ""))
    cases = [([QUICK, "--trace", str(empty)], "the trace holds no workload"),
             ([QUICK, "--trace", str(bad), "--lenient"], "no workload could be read (2 unreadable records skipped, first: "),
             ([str(no_trace)], "no trace: the config names no 'trace' and no --trace was given")]
    for args, message in cases:
        code, out, err = cli("simulate", *args)
        assert code == 2 and message in err and "--allow-empty" in err and out == ""
        code, out, _ = cli("simulate", *args, "--allow-empty")
        assert code == 0 and "0 of 0" in out
    code, _, err = cli("compare", QUICK, "--model", "none", "--model", "kueue", "--trace", str(empty))
    assert code == 2 and "no workload" in err


@pytest.mark.parametrize("horizon", ["-5", "0", "nan", "inf", "1e11"])
def test_bad_horizon(horizon):
    code, out, err = cli("simulate", QUICK, "--horizon", horizon)
    assert code == 2 and err.startswith("error: --horizon:") and out == ""


def test_swf_non_finite_fields_are_skipped_or_strict_errors(tmp_path):
    src = (REPO / "tests" / "data" / "swf" / "KTH-SP2-excerpt.swf").read_text().splitlines()
    i = next(i for i, ln in enumerate(src) if ln.strip() and not ln.startswith(";"))
    for value, problem in (("nan", "field 4 is not a finite number: 'nan'"), ("1e400", "field 4 is not a finite number"),
                           ("1e12", "submit, run or requested time above 1e+10 s")):
        parts = src[i].split()
        parts[3] = value
        p = tmp_path / "x.swf"
        p.write_text("\n".join(src[:i] + [" ".join(parts)] + src[i + 1:]) + "\n")
        code, _, err = cli("simulate", "--trace", str(p), "-q", "--horizon", "10")
        assert code == 0 and f"x.swf:{i + 1}: job" in err or problem in err
        code, _, err = cli("simulate", "--trace", str(p), "-q", "--strict")
        assert code == 2 and f"x.swf:{i + 1}:" in err and problem in err


YUNIKORN_QUEUES = "partitions:\n- name: default\n  queues:\n  - name: root\n    queues:\n    - name: a\n"


@pytest.mark.parametrize("kind, text, looks", [
    ("kueue", YUNIKORN_QUEUES, "this looks like a YuniKorn queues.yaml (top-level 'partitions'); "
                               "use 'makeway import yunikorn'"),
    ("yunikorn", "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n",
     "use 'makeway import kueue'"),
    ("ytsaurus", YUNIKORN_QUEUES, "use 'makeway import yunikorn'"),
    ("symphony", YUNIKORN_QUEUES, "use 'makeway import yunikorn'"),
    ("kueue", '<?xml version="1.0"?>\n<Profile/>\n', "use 'makeway import symphony'"),
    ("kueue", (EXAMPLES / "quickstart.yaml").read_text(), "makeway cluster config"),
    ("kueue", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "no Kueue object found"),
    ("ytsaurus", "just some text\n", "no pool tree"),
])
def test_importer_refuses_the_wrong_kind(tmp_path, kind, text, looks):
    f = tmp_path / "input.yaml"
    f.write_text(text)
    code, out, err = cli("import", kind, str(f), "-o", str(tmp_path / "out.yaml"))
    assert code == 2 and looks in err and not (tmp_path / "out.yaml").exists()


def test_the_command_line_keeps_openblas_to_one_thread():
    """numpy's OpenBLAS would start a spinning worker per core at import (about 0.1 s of CPU a
    command); the command line asks for one thread unless the user set a number (the tasks an
    agent runs get the user's environment back: ``tests/live/test_supervisor.py``)."""
    import os

    code = "import os, makeway.cli, numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MAKEWAY_SET_OPENBLAS_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60)
    assert out.stdout.split() == ["1"]
    env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60)
    assert out.stdout.split() == ["3"]
