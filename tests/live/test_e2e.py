"""End to end, real processes on 127.0.0.1: `makeway serve --local-agent`, the CLI, the demo task.

Per model, two queues' work is submitted so that a preemption must happen: the victim gets its stop
signal, writes a checkpoint within its grace, is requeued, restarts and finishes; the preemptor
runs; `makeway jobs` and `/v1/jobs/{id}/explain` carry the model, rule, preemptor and values; the
journal replayed into a fresh core gives the live decision digest. The oracle for "never twice at
once" is the tasks' own start/end marker lines.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
import yaml

from makeway.config import load_config
from tests.live.harness import (LIVE, Served, dump, group_alive, job_file, kill_leftovers, markers,
                                overlapping_runs, wait_for)

MODELS = ["kueue", "yunikorn", "ytsaurus", "symphony"]
# seconds of batch work, short to keep the suite quick; the first attempt is then held (``--hold``) so
# it is still running when the model preempts (YTsaurus waits for its starvation timeout and a
# heartbeat), however loaded the machine: a fixed run length lost that race at load 11
BATCH_SECONDS = {"kueue": 2, "yunikorn": 2, "ytsaurus": 2, "symphony": 2}
HOLD_SECONDS = 60


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    kill_leftovers(str(tmp_path))


def sqlite_url(tmp):
    return f"sqlite:///{tmp / 'makeway.db'}"


def replay_digest(config, db):
    from makeway.live.loop import SchedulerLoop
    from makeway.live.store import Store

    store = Store(db)
    try:
        last = store.passes_after(0)[-1]
        loop = SchedulerLoop(load_config(config), store)
        loop.recover()  # raises RecoveryError when a replayed pass gives another digest
        return loop.core.digest, last.digest
    finally:
        store.close()


def started_tasks(tmp, job):
    return {m[1] for m in markers(tmp) if m[0] == "start" and m[1].startswith(job + "/")}


def run_scenario(model, db, tmp, cli=True):
    """``cli``: submit and read through the ``makeway`` CLI (the SQLite runs) or over HTTP (the
    PostgreSQL runs: the CLI speaks the same API whatever the store, and each call is a process
    start, about half a second of CPU)."""
    config = LIVE / model / "cluster.yaml"
    s = Served(config, db, tmp).start()
    try:
        s.ready()
        batch = job_file(model, "batch", tmp, BATCH_SECONDS[model], "batch-1", grace=5,
                         extra=["--hold", str(HOLD_SECONDS)])
        if cli:
            assert s.cli("submit", str(batch)).stdout.strip() == "batch-1"
        else:
            assert s.post("/v1/jobs", yaml.safe_load(batch.read_text())).status_code == 201
        wait_for(lambda: len(started_tasks(tmp, "batch-1")) == 2, 30, "both batch tasks to start")
        # over HTTP: a CLI start can take seconds on a loaded machine, long enough for the batch to end
        urgent = s.post("/v1/jobs", yaml.safe_load(job_file(model, "urgent", tmp, 1.0, "urgent-1").read_text()))
        assert urgent.status_code == 201 and urgent.json()["id"] == "urgent-1", urgent.text
        try:
            wait_for(lambda: any(x[0] == "checkpoint" and x[1].startswith("batch-1/") for x in markers(tmp)), 60,
                     "a batch task to be preempted", every=0.25)
            (tmp / "ck" / "release").touch()  # the batch task that was not preempted need not hold on
            wait_for(lambda: s.job("batch-1")["state"] == "finished" and s.job("urgent-1")["state"] == "finished",
                     90, "both jobs to finish", every=0.25)
        except AssertionError:
            raise AssertionError(dump(s)) from None

        m = markers(tmp)
        ckpts = [x for x in m if x[0] == "checkpoint" and x[1].startswith("batch-1/")]
        assert ckpts, f"no victim wrote a checkpoint: {m}"
        victim_task = ckpts[0][1]
        notice = json.loads((tmp / "ck" / (victim_task.replace("/", "_") + ".json")).read_text())
        assert notice.get("finished") or notice.get("notice", {}).get("reason")
        assert any(x[0] == "start" and x[1] == victim_task and x[2] == "2" for x in m), "victim never restarted"
        assert overlapping_runs(tmp) == []

        jobs = json.loads(s.cli("jobs", "--output", "json").stdout) if cli else s.get("/v1/jobs")["jobs"]
        b = next(j for j in jobs if j["id"] == "batch-1")
        assert b["reason"]["model"] == model and b["reason"]["rule"]
        assert str(b["reason"]["preemptor"] or "urgent-1").startswith("urgent-1")
        assert isinstance(b["reason"]["values"], dict)
        ex = s.get("/v1/jobs/batch-1/explain")
        assert ex["preemptions"] and ex["preemptions"][0]["model"] == model
        assert {"model", "rule", "preemptor", "values"} <= set(ex["preemptions"][0])
        leaf = next(q for q in load_config(config).queues if q != "root" and q.endswith(("batch", "research", "risk")))
        if cli:
            text = s.cli("explain", "batch-1").stdout
            assert f"model={model}" in text and "preemptor=" in text
            assert "urgent-1" in s.cli("jobs").stdout
            assert leaf in s.cli("queues").stdout
            nodes = json.loads(s.cli("nodes", "--output", "json").stdout)
        else:
            assert leaf in [q["name"] for q in s.get("/v1/queues")["queues"]]
            nodes = s.get("/v1/nodes")["nodes"]
        assert [n["name"] for n in nodes] == ["local"]
    finally:
        assert s.stop() == 0, s.log.read_text()[-3000:]
    live, replayed = replay_digest(config, db)
    assert live == replayed


@pytest.mark.parametrize("model", MODELS)
def test_preemption_end_to_end_sqlite(model, tmp):
    run_scenario(model, sqlite_url(tmp), tmp)


@pytest.mark.parametrize("model", MODELS)
def test_preemption_end_to_end_postgresql(model, pg_database, tmp):
    run_scenario(model, pg_database, tmp, cli=False)


def test_victim_ignoring_sigterm_is_killed_with_its_children_at_the_deadline(tmp):
    s = Served(LIVE / "kueue" / "cluster.yaml", sqlite_url(tmp), tmp).start()
    try:
        s.ready()
        batch = job_file("kueue", "batch", tmp, 60, "stubborn", grace=1.0, extra=["--ignore-stop"])
        s.cli("submit", str(batch))
        wait_for(lambda: len(started_tasks(tmp, "stubborn")) == 2, 30, "both tasks to start")
        pids = {int(x[4]) for x in markers(tmp) if x[0] == "start"}
        assert s.post("/v1/jobs", yaml.safe_load(job_file("kueue", "urgent", tmp, 1, "urgent-1").read_text())
                      ).status_code == 201  # HTTP, not the CLI: the preempting window is short
        seen = wait_for(lambda: s.job("stubborn")["state"] == "preempting" and time.time(), 30, "the preemption",
                        every=0.05)
        dead = wait_for(lambda: all(not group_alive(p) for p in pids) and time.time(), 10, "the victims to die",
                        every=0.05)
        assert dead - seen <= 1.0 + 1.0, f"victims outlived their deadline by {dead - seen - 1.0:.2f} s"
        wait_for(lambda: s.job("urgent-1")["state"] == "finished", 30, "the preemptor to finish")
        atts = [a for a in s.job("stubborn")["attempts"] if a["attempt_no"] == 1]
        assert all(a["signal"] == 9 or a["exit_code"] in (-9, 137) for a in atts), atts
    finally:
        s.stop()


def test_restart_while_tasks_run_loses_nothing_and_starts_nothing_twice(tmp):
    """Clean stop of serve while tasks run, then start again on the same database and agent dir:
    every acknowledged job is there, the running tasks were re-attached (one start each), and the
    scheduler goes on deciding (the urgent job submitted after the restart makes way as before)."""
    config = LIVE / "kueue" / "cluster.yaml"
    db = sqlite_url(tmp)
    s = Served(config, db, tmp).start()
    s.ready()
    s.cli("submit", str(job_file("kueue", "batch", tmp, 120, "batch-1", grace=5)))
    wait_for(lambda: len(started_tasks(tmp, "batch-1")) == 2, 30, "both batch tasks to start")
    acked = []
    for i in range(5):
        r = s.post("/v1/jobs", {"id": f"small-{i}", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}],
                                "command": ["true"]}, headers={"Idempotency-Key": f"k{i}"})
        assert r.status_code == 201
        acked.append(r.json()["id"])
    assert s.stop() == 0
    before = [m for m in markers(tmp) if m[0] == "start"]
    assert len(before) == 2 and not [m for m in markers(tmp) if m[0] == "end"], "tasks should outlive the server"

    s2 = Served(config, db, tmp).start()
    try:
        s2.ready()
        # first the urgent job, while the batch tasks surely still run (a loaded machine restarts slowly)
        urgent = s2.post("/v1/jobs", yaml.safe_load(job_file("kueue", "urgent", tmp, 1.0, "urgent-1").read_text()))
        assert urgent.status_code == 201, urgent.text
        bad = tmp / "bad.yaml"
        bad.write_text("queue: batch\ntasks: [{count: 1, resources: {gpu: 1}}]\ncommand: [x]\n")
        p = s2.cli("submit", str(bad), check=False)
        assert p.returncode == 2 and "tasks.0.resources.gpu" in p.stderr and "unknown resource" in p.stderr
        # the same key again after the restart: the first answer, nothing new
        r = s2.post("/v1/jobs", {"id": "small-0", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}],
                                 "command": ["true"]}, headers={"Idempotency-Key": "k0"})
        assert r.status_code == 201 and r.json()["created"] is False
        wait_for(lambda: s2.job("urgent-1")["state"] == "finished" and s2.job("batch-1")["reason"] is not None, 60,
                 "the urgent job to preempt batch-1 and finish", every=0.25)
        assert s2.job("batch-1")["reason"]["model"] == "kueue"
        assert httpx.delete(s2.url + "/v1/jobs/batch-1", timeout=10).status_code == 202  # its long rerun is not the point
        wait_for(lambda: all(s2.job(j)["state"] == "finished" for j in acked) and
                 s2.job("batch-1")["state"] == "cancelled", 60, "the small jobs to finish", every=0.25)
        starts = [m for m in markers(tmp) if m[0] == "start" and m[2] == "1" and m[1].startswith("batch-1/")]
        assert len(starts) == 2, f"a task's first attempt started twice: {starts}"
        assert overlapping_runs(tmp) == []
        assert s2.get("/readyz")["replayed_passes"] > 0
    finally:
        assert s2.stop() == 0
    live, replayed = replay_digest(config, db)
    assert live == replayed


def test_cli_without_a_server_is_one_line_and_exit_2(tmp):
    import subprocess
    import sys

    from makeway.live.serve import free_port

    p = subprocess.run([sys.executable, "-m", "makeway", "jobs", "--server", f"http://127.0.0.1:{free_port()}"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("error: --server: cannot reach")
    assert len(p.stderr.strip().splitlines()) == 1


def test_agent_cut_off_past_its_lease(tmp):
    """SIGSTOP the agent: its supervisors kill its tasks at the lease, and only after that does the
    server declare the node lost and requeue the work (within two lease periods); the agent comes
    back, registers again, and the tasks restart as second attempts, never overlapping the first."""
    import signal
    import subprocess
    import sys

    lease = 4.0
    s = Served(LIVE / "kueue" / "cluster.yaml", sqlite_url(tmp), tmp, local_agent=False,
               extra=["--lease", str(lease), "--suspect-after", "2"]).start()
    agent = subprocess.Popen([sys.executable, "-m", "makeway", "agent", "--server", s.url, "--node", "local",
                              "--capacity", "cpu=2", "--workdir", str(tmp / "agent")],
                             stdout=subprocess.DEVNULL, stderr=(tmp / "agent.log").open("w"))
    try:
        s.ready()
        s.cli("submit", str(job_file("kueue", "batch", tmp, 60, "batch-1", grace=1)))
        wait_for(lambda: len(started_tasks(tmp, "batch-1")) == 2, 30, "both tasks to start")
        pids = {int(x[4]) for x in markers(tmp) if x[0] == "start"}
        agent.send_signal(signal.SIGSTOP)
        cut = time.time()
        dead = wait_for(lambda: all(not group_alive(p) for p in pids) and time.time(), 3 * lease, "the tasks to die",
                        every=0.05)
        lost = wait_for(lambda: (s.job("batch-1")["reason"] or {}).get("rule") == "node-lost" and time.time(),
                        3 * lease, "the server to declare the node lost", every=0.05)
        assert dead < lost, f"tasks died {dead - lost:.2f} s after the server requeued them"
        assert lost - cut <= 2 * lease, f"requeue took {lost - cut:.1f} s (lease {lease} s)"
        assert s.job("batch-1")["state"] == "pending"
        agent.send_signal(signal.SIGCONT)
        wait_for(lambda: sum(1 for m in markers(tmp) if m[0] == "start" and m[2] == "2") == 2, 30,
                 "the second attempts to start")
        assert overlapping_runs_by_pid(tmp, dead) == []
    finally:
        agent.send_signal(signal.SIGCONT)
        agent.terminate()
        agent.wait(10)
        s.stop()


def overlapping_runs_by_pid(tmp, first_dead):
    """Second attempts that started before the first attempts were dead (SIGKILL leaves no end line)."""
    return [m for m in markers(tmp) if m[0] == "start" and m[2] == "2" and float(m[3]) < first_dead]


def test_agent_killed_ten_times_its_tasks_survive_and_never_restart(tmp):
    import os
    import signal
    import subprocess
    import sys

    s = Served(LIVE / "kueue" / "cluster.yaml", sqlite_url(tmp), tmp, local_agent=False).start()
    cmd = [sys.executable, "-m", "makeway", "agent", "--server", s.url, "--node", "local", "--capacity", "cpu=2",
           "--workdir", str(tmp / "agent")]
    log = (tmp / "agent.log").open("a")
    agent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        s.ready()
        s.cli("submit", str(job_file("kueue", "batch", tmp, 9, "batch-1", grace=1)))
        wait_for(lambda: len(started_tasks(tmp, "batch-1")) == 2, 30, "both tasks to start")
        pids = {int(x[4]) for x in markers(tmp) if x[0] == "start"}
        for _ in range(10):
            agent.send_signal(signal.SIGKILL)
            agent.wait(10)
            for p in pids:
                os.kill(p, 0)  # raises if a task died with its agent
            agent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
            time.sleep(0.5)
        wait_for(lambda: s.job("batch-1")["state"] == "finished", 40, "the job to finish", every=0.25)
        starts = [m for m in markers(tmp) if m[0] == "start"]
        assert len(starts) == 2 and all(m[2] == "1" for m in starts), starts
        assert all(a["attempt_no"] == 1 for a in s.job("batch-1")["attempts"])
    finally:
        agent.kill()
        agent.wait(10)
        s.stop()
