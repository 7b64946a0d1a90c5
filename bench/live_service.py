"""Live service benchmark (not a test): durable submits/s over HTTP, and scheduling-pass latency with
1,000 queued jobs on 100 nodes whose agents are simulated by a load generator speaking the agent
protocol (register, heartbeat reports, desired sets).

    python bench/live_service.py [--db URL] [--model kueue] [--clients 16] [--submits 6000]

Targets (issue 14): >= 2,000 durable submits/s; pass p99 <= 50 ms. Prints one table; ``--json`` writes
the figures. Each phase runs its own ``makeway serve`` subprocess on 127.0.0.1 with a fresh database.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

NODES, NODE_CPU = 100, 32


def config(model: str) -> dict:
    prio = {"preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}
    queues = {"root": {}}
    for q in "abcd":
        queues[q] = {"parent": "root", "guaranteed": {"cpu": NODES * NODE_CPU // 4}, "settings": prio}
    return {"name": "bench-live", "resources": ["cpu"], "nodes": [{"name": "n", "count": NODES,
            "capacity": {"cpu": NODE_CPU}}], "queues": queues, "preemption": {"model": model}}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, tmp: Path, db: str, model: str):
        self.cfg = tmp / "bench.yaml"
        self.cfg.write_text(yaml.safe_dump(config(model)))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "makeway", "serve", str(self.cfg), "--port", str(self.port),
                "--recovery-grace", "0", "--min-pass-interval", os.environ.get("BENCH_MIN_PASS", "0.02"), "--db", db]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=(tmp / "serve.log").open("w"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit("serve did not come up: " + (tmp / "serve.log").read_text()[-2000:])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def fresh_db(base: str | None, tmp: Path, phase: str) -> str:
    """A new, empty database for one phase: a SQLite file, or a new database on the given PostgreSQL."""
    if base is None:
        return f"sqlite:///{tmp / (phase + '.db')}"
    import sqlalchemy as sa

    url = sa.engine.make_url(base)
    name = f"makeway_bench_{phase}"
    eng = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with eng.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def job(i: int, cpu: int = 1, queue: str | None = None) -> dict:
    return {"id": f"j{i}", "queue": queue or "abcd"[i % 4], "tasks": [{"count": 1, "resources": {"cpu": cpu}}],
            "command": ["true"]}


def _submit_proc(args: tuple) -> int:
    """One client process: ``threads`` keep-alive clients posting ``per`` jobs each (``batch`` jobs a
    request when > 1); errors counted. The standard library's client: the load generator shares the
    machine's two cores with the server, so it should cost as little as it can."""
    import http.client
    from urllib.parse import urlsplit

    url, first, threads, per, batch = args
    host = urlsplit(url)
    errors = []

    def worker(c: int) -> None:
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        ids = list(range(first + c * per, first + (c + 1) * per))
        for k in range(0, per, batch):
            chunk = [job(i) for i in ids[k:k + batch]]
            body = json.dumps(chunk if batch > 1 else chunk[0])
            conn.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status != 201:
                errors.append(data)
        conn.close()

    ts = [threading.Thread(target=worker, args=(c,)) for c in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(errors)


def submits(url: str, clients: int, total: int, procs: int = 1, batch: int = 1, first: int = 0) -> dict:
    """``total`` submissions from ``clients`` keep-alive clients spread over ``procs`` processes (one
    Python client process cannot post fast enough); each 201 means committed."""
    from concurrent.futures import ProcessPoolExecutor

    threads = max(1, clients // procs)
    per = total // (procs * threads)
    work = [(url, first + p * threads * per, threads, per, batch) for p in range(procs)]
    with ProcessPoolExecutor(procs) as pool:
        pool.submit(int).result()  # start the workers before the clock
        t0 = time.perf_counter()
        errors = sum(pool.map(_submit_proc, work))
        dt = time.perf_counter() - t0
    n = per * procs * threads
    return {"submits": n, "seconds": dt, "per_s": n / dt, "errors": errors}


def pass_latency(url: str, queued: int, seconds: float, run_time: float = 0.5) -> dict:
    """100 simulated agents: tasks run ``run_time`` s; the queue is topped up to ``queued`` jobs."""
    h = httpx.Client(base_url=url, timeout=30)
    names = [f"n-{i}" for i in range(NODES)]
    for n in names:
        h.post("/v1/agent/register", json={"node": n, "capacity": {"cpu": NODE_CPU}, "attempts": []}).raise_for_status()
    next_id = 10**6
    for _ in range(queued + NODES):
        h.post("/v1/jobs", json=job(next_id, NODE_CPU)).raise_for_status()
        next_id += 1
    seqs = dict.fromkeys(names, 0)
    started: dict[str, float] = {}
    done: set[str] = set()
    rng = random.Random(1)
    t_end = time.monotonic() + seconds
    exits = 0
    while time.monotonic() < t_end:
        for n in names:
            d = h.get("/v1/agent/desired", params={"node": n, "wait": 0}).json()
            reports = []
            for a in d["attempts"]:
                aid = a["attempt"]
                if aid in done:
                    continue
                if aid not in started:
                    started[aid] = time.monotonic()
                    seqs[n] += 1
                    reports.append({"seq": seqs[n], "attempt": aid, "event": "started"})
                elif a["action"] == "stop" or time.monotonic() - started[aid] > run_time * (0.5 + rng.random()):
                    seqs[n] += 1
                    reports.append({"seq": seqs[n], "attempt": aid, "event": "exited", "exit_code": 0})
                    done.add(aid)
                    exits += 1
                    h.post("/v1/jobs", json=job(next_id, NODE_CPU)).raise_for_status()
                    next_id += 1
            if reports:
                h.post("/v1/agent/heartbeat", json={"node": n, "reports": reports}).raise_for_status()
    stats = h.get("/v1/stats").json()
    stats["tasks_finished"] = exits
    return stats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    ap.add_argument("--model", default="kueue")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--submits", type=int, default=6000)
    ap.add_argument("--procs", type=int, default=1, help="client processes (on 2 cores more only compete)")
    ap.add_argument("--queued", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    figures = []
    with tempfile.TemporaryDirectory() as d:
        s = Serve(Path(d), fresh_db(args.db, Path(d), "submits"), args.model)
        try:
            sub = submits(s.url, args.clients, args.submits, args.procs)
            arr = submits(s.url, 4, args.submits * 4, args.procs, batch=100, first=10**7)
        finally:
            s.stop()
        figures.append(("durable submits/s over HTTP", sub["per_s"], ">= 2000", f"{sub['submits']} in {sub['seconds']:.2f} s, "
                        f"{args.clients} clients, one job a request, {sub['errors']} errors"))
        figures.append(("durable submits/s, arrays of 100", arr["per_s"], ">= 2000",
                        f"{arr['submits']} in {arr['seconds']:.2f} s, 4 clients, {arr['errors']} errors"))
    with tempfile.TemporaryDirectory() as d:
        s = Serve(Path(d), fresh_db(args.db, Path(d), "passes"), args.model)
        try:
            st = pass_latency(s.url, args.queued, args.seconds)
        finally:
            s.stop()
        pm = st["pass_ms"]
        figures.append(("pass p99 ms (1,000 queued, 100 nodes)", pm["p99"], "<= 50",
                        f"p50 {pm['p50']:.2f} ms, max {pm['max']:.1f} ms, {pm['n']} passes, "
                        f"{st['tasks_finished']} tasks finished, {st['pending_workloads']} pending at the end"))
    print(f"{'metric':42} {'value':>10} {'target':>8}  detail")
    for name, value, target, detail in figures:
        print(f"{name:42} {value:10.2f} {target:>8}  {detail}")
    if args.json:
        args.json.write_text(json.dumps([dict(zip(("metric", "value", "target", "detail"), f)) for f in figures],
                                        indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
