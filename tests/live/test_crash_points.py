"""Every named crash point (MAKEWAY_CRASH_AT), on SQLite and on PostgreSQL: the process dies there as
kill -9 would, `serve` is started again on the same database and agent dir, and the oracles hold:
every acknowledged job is in the database and finishes, no task ran twice at once (the tasks' own
marker lines), and the journal replays to the recorded decision digests."""

from __future__ import annotations


import httpx
import pytest

from makeway.live.crash import EXIT_CODE, POINTS
from tests.live.harness import LIVE, Served, ServerExited, kill_leftovers, markers, overlapping_runs, wait_for


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    kill_leftovers(str(tmp_path))


def demo_job(jid, tmp, seconds=1.5):
    import sys

    return {"id": jid, "queue": "batch", "tasks": [{"count": 2, "resources": {"cpu": 1}}], "grace": 2,
            "command": [sys.executable, "-m", "makeway.live.demo_task", "--seconds", str(seconds),
                        "--checkpoint", str(tmp / "ck")]}


def submit_until_acknowledged(s: Served, job: dict, key: str, restart) -> str:
    """POST with an idempotency key; on a dead server, restart it and retry the same key."""
    for _ in range(3):
        try:
            r = s.post("/v1/jobs", job, headers={"Idempotency-Key": key})
            if r.status_code == 201:
                return r.json()["id"]
        except httpx.HTTPError:
            pass
        s = restart()
    raise AssertionError(f"{key}: never acknowledged")


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_crash_point(point, db, tmp, request):
    from tests.live.test_e2e import replay_digest

    url = f"sqlite:///{tmp / 'crash.db'}" if db == "sqlite" else request.getfixturevalue("pg_database")
    config = LIVE / "kueue" / "cluster.yaml"
    env = {"MAKEWAY_CRASH_AT": point, "MAKEWAY_CRASH_MARK": str(tmp / "crashed")}
    servers: list[Served] = []

    def restart() -> Served:
        """A server that is up and ready; one that dies at the crash point (even while starting: the
        local agent's registration is an event commit and a pass) is replaced."""
        for _ in range(3):
            if servers and servers[-1].proc.poll() is None:
                old = servers[-1]
                wait_for(lambda: old.proc.poll() is not None, 30, "the crashed server to exit")
            servers.append(Served(config, url, tmp, env=env))
            try:
                servers[-1].start()
                servers[-1].ready()
                return servers[-1]
            except ServerExited as exc:
                assert exc.returncode == EXIT_CODE, str(exc)
        raise AssertionError("serve did not come up after its crash")

    try:
        restart()
        acked = [submit_until_acknowledged(servers[-1], demo_job(f"job-{i}", tmp), f"key-{i}", restart)
                 for i in range(2)]

        def all_finished() -> bool:
            s = servers[-1]
            if s.proc.poll() is not None:
                assert s.proc.returncode == EXIT_CODE, s.log.read_text()[-2000:]
                restart()
                return False
            return all(s.job(j)["state"] == "finished" for j in acked)

        wait_for(all_finished, 90, f"every acknowledged job to finish after {point}", every=0.25)
        assert (tmp / "crashed").exists(), f"crash point {point} was never reached"
        assert overlapping_runs(tmp) == []
        finished = {m[1] for m in markers(tmp) if m[0] == "end" and m[4] == "finished"}
        assert finished == {f"{j}/0/{k}" for j in acked for k in range(2)}
    finally:
        for s in servers:
            s.stop()
    live, replayed = replay_digest(config, url)
    assert live == replayed
