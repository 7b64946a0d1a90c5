"""Live service benchmark (not a test): durable submits/s over HTTP, and scheduling-pass latency with
1,000 queued jobs on 100 nodes whose agents are simulated by a load generator speaking the agent
protocol (register, heartbeat reports, desired sets).

    python bench/live_service.py [--db URL] [--model kueue] [--clients 16] [--submits 20000] [--procs 2]
                                 [--api-workers 3]

Targets (issue 14): >= 2,000 durable submits/s; pass p99 <= 50 ms. Prints one table; ``--json`` writes
the figures. Each phase runs its own ``makeway serve`` subprocess on 127.0.0.1 with a fresh database.

The load generator shares the machine with the server, so it is lean: raw HTTP/1.1 over asyncio
keep-alive connections (uvloop when installed), bodies encoded before the clock starts, spread over
``--procs`` processes. Each submit phase reports the CPU the server's process tree used per submit
(psutil) and the client's, so a figure can be read against what the machine had to give.
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
    def __init__(self, tmp: Path, db: str, model: str, api_workers: int = 1):
        self.cfg = tmp / "bench.yaml"
        self.cfg.write_text(yaml.safe_dump(config(model)))
        self.port = free_port()
        self.warm: list = []
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "makeway", "serve", str(self.cfg), "--port", str(self.port),
                "--recovery-grace", "0", "--min-pass-interval", os.environ.get("BENCH_MIN_PASS", "0.02"), "--db", db,
                "--api-workers", str(api_workers)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=(tmp / "serve.log").open("w"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200 and self._acceptors_up(api_workers):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit("serve did not come up: " + (tmp / "serve.log").read_text()[-2000:])

    def _acceptors_up(self, want: int) -> bool:
        """Every acceptor answers (they start after the leader listens): seen on fresh connections."""
        acceptors = {str(i) for i in range(1, want)}
        seen = set()
        for i in range(20 * want if acceptors else 0):
            r = httpx.post(self.url + "/v1/jobs", json=job(10**9 + len(self.warm), queue="a"), timeout=5)
            self.warm.append(r)
            seen.add(r.headers.get("x-makeway-worker"))
            if acceptors <= seen:
                return True
        return not acceptors

    def cpu(self) -> float:
        """CPU seconds used so far by serve and its acceptors."""
        import psutil

        total = 0.0
        root = psutil.Process(self.proc.pid)
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

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


def _submit_proc(args: tuple) -> tuple[int, float, dict]:
    """One client process: ``conns`` keep-alive connections posting ``per`` bodies each (``batch`` jobs a
    body when > 1). Returns (errors, CPU seconds this process spent posting, answers per server process)."""
    import asyncio
    import resource
    from urllib.parse import urlsplit

    url, first, conns, per, batch = args
    where = urlsplit(url)
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: {where.hostname}:{where.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: ").encode()
    requests = []
    for c in range(conns):
        ids = list(range(first + c * per * batch, first + (c + 1) * per * batch))
        out = []
        for k in range(0, len(ids), batch):
            chunk = [job(i) for i in ids[k:k + batch]]
            body = json.dumps(chunk if batch > 1 else chunk[0]).encode()
            out.append(head + str(len(body)).encode() + b"\r\n\r\n" + body)
        requests.append(out)
    errors: list[bytes] = []
    workers: dict[str, int] = {}

    async def connection(reqs: list[bytes]) -> None:
        reader, writer = await asyncio.open_connection(where.hostname, where.port)
        for req in reqs:
            writer.write(req)
            status = int((await reader.readline()).split()[1])
            length, worker = 0, "0"
            while (line := await reader.readline()) != b"\r\n":
                name, _, value = line.partition(b":")
                name = name.lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"x-makeway-worker":
                    worker = value.strip().decode()
            data = await reader.readexactly(length)
            workers[worker] = workers.get(worker, 0) + 1
            if status != 201:
                errors.append(data)
        writer.close()

    async def run() -> None:
        await asyncio.gather(*(connection(r) for r in requests))

    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    runner(run())
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return len(errors), (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), workers


def submits(serve: "Serve", clients: int, total: int, procs: int = 1, batch: int = 1, first: int = 0) -> dict:
    """``total`` jobs from ``clients`` keep-alive connections spread over ``procs`` processes, ``batch`` a
    request; each 201 means committed. Server and client CPU are per job."""
    from concurrent.futures import ProcessPoolExecutor

    conns = max(1, clients // procs)
    per = total // (procs * conns * batch)
    work = [(serve.url, first + p * conns * per * batch, conns, per, batch) for p in range(procs)]
    with ProcessPoolExecutor(procs) as pool:
        list(pool.map(int, range(procs)))  # start the workers before the clock
        cpu0 = serve.cpu()
        t0 = time.perf_counter()
        got = list(pool.map(_submit_proc, work))
        dt = time.perf_counter() - t0
        cpu1 = serve.cpu()
    n = per * procs * conns * batch
    spread: dict[str, int] = {}
    for _, _, w in got:
        for k, v in w.items():
            spread[k] = spread.get(k, 0) + v
    return {"submits": n, "seconds": dt, "per_s": n / dt, "errors": sum(g[0] for g in got),
            "server_ms": (cpu1 - cpu0) * 1000 / n, "client_ms": sum(g[1] for g in got) * 1000 / n,
            "spread": "/".join(str(spread[k]) for k in sorted(spread))}


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
    ap.add_argument("--submits", type=int, default=20000)
    ap.add_argument("--procs", type=int, default=2, help="client processes")
    ap.add_argument("--api-workers", type=int, default=3,
                    help="serve --api-workers (processes answering the API; 3 is the configuration the README reports)")
    ap.add_argument("--queued", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    figures = []
    with tempfile.TemporaryDirectory() as d:
        s = Serve(Path(d), fresh_db(args.db, Path(d), "submits"), args.model, args.api_workers)
        try:
            sub = submits(s, args.clients, args.submits, args.procs)
            arr = submits(s, 4, args.submits * 4, args.procs, batch=100, first=10**7)
        finally:
            s.stop()
        load = os.getloadavg()[0]
        for name, f, how in (("durable submits/s over HTTP", sub, f"{args.clients} connections, one job a request"),
                             ("durable submits/s, arrays of 100", arr, "4 connections")):
            figures.append((name, f["per_s"], ">= 2000",
                            f"{f['submits']} in {f['seconds']:.2f} s, {how}, {f['errors']} errors; "
                            f"CPU/job server {f['server_ms']:.3f} ms, client {f['client_ms']:.3f} ms; "
                            f"{args.api_workers} API process(es), answers {f['spread']}; load {load:.2f}"))
    with tempfile.TemporaryDirectory() as d:
        s = Serve(Path(d), fresh_db(args.db, Path(d), "passes"), args.model, args.api_workers)
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
