"""kill -9 storm (issue 15): a real `makeway serve --local-agent` (two nodes) is SIGKILLed at seeded random
moments while a client posts a storm of submissions, urgent ones preempting running batch work, and
is started again on the same database and agent directory each time. The kills begin once the storm
has made the model preempt, so they land among preemptions, recoveries and restarted tasks.

The client retries every submission with its Idempotency-Key until it is acknowledged, across the
crashes, and logs each acknowledged id. Oracles, once everything settled after the last restart:
every acknowledged id is in the database (read from the store, not the API) and finished, and the
database holds no job nobody was told about; no task ran twice at once and no attempt started twice
(the tasks' own O_APPEND marker lines); the journal replays pass by pass to the recorded digests
with ``check_invariants()`` and no task allocated or handed out twice after any pass.

serve is forked from a warm launcher (``harness.Launcher``): a real process killed with SIGKILL, but
a restart does not pay for the imports again, which keeps 20 restarts inside the file's budget.
"""

from __future__ import annotations

import random
import signal
import threading
import time

import httpx
import pytest

from makeway.config import parse_config
from tests.live.harness import (Launcher, Served, duplicate_starts, kill_leftovers, markers, overlapping_runs,
                                replay_checked, two_queue_kueue, wait_for)

SEED = 20150915
CFG = two_queue_kueue("storm", {"n1": 2, "n2": 2})
# start and end lines with task, attempt, time and pid, appended (O_APPEND) by the task itself; a stop
# signal ends it with an end line too (the trap is set before the start line is written: a stop that
# lands in between must not leave a start without an end), so a missing end line means it was killed
TASK = """#!/bin/sh
m="$1"
trap 'echo "end $MAKEWAY_TASK_ID $MAKEWAY_ATTEMPT $(date +%s.%N) stopped" >> "$m"; exit 143' TERM INT USR1
echo "start $MAKEWAY_TASK_ID $MAKEWAY_ATTEMPT $(date +%s.%N) $$" >> "$m"
sleep "$2" &
wait $!
echo "end $MAKEWAY_TASK_ID $MAKEWAY_ATTEMPT $(date +%s.%N) finished" >> "$m"
"""


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    kill_leftovers(str(tmp_path))


class Storm(threading.Thread):
    """Posts jobs one after another, each with its own key, retrying the same key through connection
    errors and 5xx until the server acknowledges it. It keeps a few jobs waiting (``BACKLOG``), so
    urgent work always finds batch work to preempt and the scenario settles soon after the storm."""

    BACKLOG = 6

    def __init__(self, url: str, script: str, markers_file: str, rng: random.Random):
        super().__init__(name="storm", daemon=True)
        self.url, self.script, self.markers_file, self.rng = url, script, markers_file, rng
        self.acked: list[str] = []
        self.retries = 0
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def job(self, i: int) -> dict:
        """Batch work at priority 0; every fourth job an urgent one in batch (priority 10: preempts
        within the queue once batch is full) and every fourth one in prod (reclaims what batch borrowed)."""
        kind = ("batch", "batch", "urgent", "prod")[i % 4]
        queue = "prod" if kind == "prod" else "batch"
        count, secs = (2, "1.0") if kind == "batch" else ((1, "0.3") if kind == "urgent" else (2, "0.3"))
        return {"id": f"{kind}-{i}", "queue": queue, "priority": 0 if kind == "batch" else 10, "grace": 3,
                "tasks": [{"count": count, "resources": {"cpu": 1}}],
                "command": ["sh", self.script, self.markers_file, secs]}

    def run(self) -> None:
        try:
            with httpx.Client(timeout=5) as http:
                i = 0
                while not self.halt.is_set():
                    self.acked.append(self.submit(http, i))
                    i += 1
                    self.halt.wait(self.rng.uniform(0.05, 0.4))
                    self.wait_for_room(http)
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def wait_for_room(self, http: httpx.Client) -> None:
        """At most a few seconds while more than BACKLOG jobs wait (a dead server does not count as room)."""
        deadline = time.monotonic() + 5
        while not self.halt.is_set() and time.monotonic() < deadline:
            try:
                r = http.get(self.url + "/v1/jobs", params={"state": "pending"})
                if r.status_code == 200 and len(r.json()["jobs"]) <= self.BACKLOG:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)

    def submit(self, http: httpx.Client, i: int) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                r = http.post(self.url + "/v1/jobs", json=self.job(i), headers={"Idempotency-Key": f"key-{i}"})
                if r.status_code == 201:
                    return r.json()["id"]
                assert r.status_code >= 500, f"job {i}: {r.status_code} {r.text}"
            except httpx.HTTPError:
                pass
            self.retries += 1
            time.sleep(0.05)
        raise AssertionError(f"job {i} was never acknowledged")


def preemptions(db: str) -> int:
    from makeway.live.store import Store

    store = Store(db)
    try:
        return len(store.decisions(kind="preempt", limit=None))
    finally:
        store.close()


def run_storm(tmp, db: str, kills: int, seed: int) -> dict:
    """One server, ``kills`` kill -9 and restart cycles at seeded random moments once the storm has
    made the model preempt; then the oracles. The counts, printed, are returned."""
    import yaml

    from makeway.live.store import Store

    print(f"\nstorm seed {seed}, {kills} kills, db {db.split(':')[0]}")
    rng = random.Random(seed)
    config = tmp / "storm.yaml"
    config.write_text(yaml.safe_dump(CFG))
    script = tmp / "task.sh"
    script.write_text(TASK)
    (tmp / "ck").mkdir()
    launcher = Launcher(str(tmp))
    s = Served(config, db, tmp, recovery_grace=2.0, launcher=launcher)
    storm = Storm(s.url, str(script), str(tmp / "ck" / "markers.log"), random.Random(seed + 1))
    restarts: list[float] = []
    faults = 0
    t0 = time.monotonic()
    try:
        s.start()
        s.ready()
        storm.start()
        wait_for(lambda: preemptions(db) > 0, 60, "the storm's first preemption", every=0.2)
        t_warm = time.monotonic() - t0
        for _ in range(kills):
            time.sleep(rng.uniform(0.0, 1.0))
            s.proc.send_signal(signal.SIGKILL)
            assert s.proc.wait(10) == -signal.SIGKILL, "serve ended before its kill"
            faults += 1
            t = time.monotonic()
            s.start()
            s.ready()
            restarts.append(time.monotonic() - t)
        storm.halt.set()
        storm.join(60)
        t_storm = time.monotonic() - t0
        assert storm.error is None, storm.error
        acked = list(storm.acked)
        store = Store(db)
        try:
            def settled():
                rows = {r["id"]: r["state"] for r in store.jobs(limit=None)}
                return all(rows.get(j) == "finished" for j in acked) and rows
            try:
                rows = wait_for(settled, 90, "every acknowledged job to finish", every=0.25)
            except AssertionError:
                rows = {r["id"]: r["state"] for r in store.jobs(limit=None)}
                raise AssertionError(f"not finished: { {j: rows.get(j) for j in acked if rows.get(j) != 'finished'} }"
                                     f"\n{s.log.read_text()[-3000:]}") from None
            submitted = {e.payload["job"]["id"] for e in store.events_after(0) if e.kind == "submit"}
            preempts = len(store.decisions(kind="preempt", limit=None))
        finally:
            store.close()
        t_settle = time.monotonic() - t0
        assert s.stop() == 0, s.log.read_text()[-3000:]
    finally:
        storm.halt.set()
        s.stop(signal.SIGKILL)
        launcher.close()

    lost = sorted(set(acked) - submitted) + sorted(j for j in acked if rows.get(j) != "finished")
    unknown = sorted(set(rows) - set(acked))
    overlaps, dups = overlapping_runs(tmp), duplicate_starts(tmp)
    passes, problems = replay_checked(parse_config(CFG), db)
    counts = {"trials": kills, "faults": faults, "acknowledged": len(acked), "lost": len(lost),
              "duplicated": len(overlaps) + len(dups), "duplicated_allocations": len(problems),
              "preemptions": preempts, "task_starts": sum(1 for m in markers(tmp) if m[0] == "start"),
              "client_retries": storm.retries, "passes_replayed": passes}
    print("storm counts:", counts)
    print(f"storm timings: first preemption {t_warm:.1f} s, storm {t_storm:.1f} s, settled at {t_settle:.1f} s, "
          f"replay done at {time.monotonic() - t0:.1f} s, restart {min(restarts):.2f}..{max(restarts):.2f} s "
          f"(mean {sum(restarts) / len(restarts):.2f})")
    assert faults == kills
    assert lost == [], f"acknowledged but lost: {lost}"
    assert unknown == [], f"jobs in the database nobody acknowledged: {unknown}"
    assert overlaps == [] and dups == [], overlaps + dups
    assert problems == [], problems[:10]
    return counts


def test_kill_nine_storm_sqlite(tmp):
    """20 kill -9 faults in one long scenario on SQLite."""
    run_storm(tmp, f"sqlite:///{tmp / 'storm.db'}", kills=20, seed=SEED)


def test_kill_nine_storm_postgresql(tmp, pg_database):
    """The same storm, shorter, on PostgreSQL."""
    run_storm(tmp, pg_database, kills=3, seed=SEED + 7)
