"""Durable journal appends per second of the live store (not a test): SQLite and PostgreSQL, one
thread and eight, one event per transaction and batches.

    python bench/store_append.py [--seconds 3] [--pg postgresql+psycopg://...] [--no-pg]

Every append is a committed transaction, as the API's acknowledgement needs. SQLite runs in WAL mode
with synchronous=NORMAL (a commit survives a crash of the process, not of the machine); PostgreSQL
is a throwaway cluster with its default durability (fsync on, synchronous_commit on) unless --pg
names another one. Each append carries an Idempotency-Key, as an API submit does.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from makeway.live.group_commit import GroupCommit  # noqa: E402
from makeway.live.store import Store  # noqa: E402

PAYLOAD = {"job": {"id": None, "queue": "research", "priority": 0, "preemptible": True, "grace": 10,
                   "tasks": [{"count": 2, "resources": {"cpu": 1, "memory": 2}}],
                   "command": ["python3", "train.py"], "env": {}}}


def run_case(store: Store, threads: int, batch: int, seconds: float, group: GroupCommit | None = None
             ) -> tuple[float, float]:
    """(appends per second, p99 latency of one call in ms) over ``seconds`` of wall time."""
    keys = itertools.count()
    lock = threading.Lock()
    done = 0
    lat: list[float] = []
    stop = time.perf_counter() + seconds

    def worker():
        nonlocal done
        mine, my_lat = 0, []
        while time.perf_counter() < stop:
            with lock:
                ks = [next(keys) for _ in range(batch)]
            items = [{"kind": "submit", "payload": {"job": {**PAYLOAD["job"], "id": f"j{k}"}},
                      "idem_key": f"bench-{k}", "at": time.time()} for k in ks]
            t0 = time.perf_counter()
            if group is not None:
                it = items[0]
                group.append(it["kind"], it["payload"], idem_key=it["idem_key"], at=it["at"])
            elif batch == 1:
                it = items[0]
                store.append_event(it["kind"], it["payload"], idem_key=it["idem_key"], at=it["at"])
            else:
                store.append_events(items)
            my_lat.append(time.perf_counter() - t0)
            mine += batch
        with lock:
            done += mine
            lat.extend(my_lat)

    t0 = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - t0
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000 if lat else float("nan")
    return done / elapsed, p99


def pass_latency(store: Store, changed: int, passes: int = 60) -> tuple[float, float]:
    """(p50, p99 ms) of ``record_pass`` upserting ``changed`` full job rows and as many attempts,
    with a tenth as many decisions: the write side of one scheduling pass."""
    base = (store.last_pass().pass_no if store.last_pass() else 0) + 1
    lat = []
    for p in range(base, base + passes):
        jobs = [{"id": f"job{j}", "queue": "research", "state": "running", "tenant": "default",
                 "spec": PAYLOAD["job"], "submitted": 1.0, "updated": float(p), "reason": None,
                 "pending": {"code": "fits_nowhere", "position": j}} for j in range(changed)]
        attempts = [{"attempt": f"job{j}/0/0#1", "job": f"job{j}", "task": f"job{j}/0/0", "attempt_no": 1,
                     "node": f"n{j % 100}", "state": "running", "started": float(p)} for j in range(changed)]
        decisions = [{"idx": i, "kind": "preempt", "task": f"job{i}/0/0", "node": f"n{i}", "workload": f"job{i}",
                      "reason": {"model": "kueue", "rule": "r", "preemptor": "x", "values": {"a": 1}}}
                     for i in range(max(1, changed // 10))]
        t0 = time.perf_counter()
        store.record_pass(p, p, float(p), f"{p:064x}", decisions, jobs, attempts, expect_epoch=store.epoch())
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return lat[len(lat) // 2] * 1000, lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000


def bench(name: str, url: str, seconds: float, rows: list, pass_rows: list) -> None:
    with Store(url) as store:
        for changed in (10, 100, 1000):
            p50, p99 = pass_latency(store, changed)
            pass_rows.append((name, changed, p50, p99))
            print(f"  {name:<10} record_pass changed={changed:<4} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms",
                  file=sys.stderr)
        for threads, batch, grouped in ((1, 1, False), (8, 1, False), (1, 100, False), (8, 100, False),
                                        (8, 1, True), (32, 1, True)):
            if grouped:
                with GroupCommit(store) as group:
                    rate, p99 = run_case(store, threads, batch, seconds, group)
            else:
                rate, p99 = run_case(store, threads, batch, seconds)
            mode = "group" if grouped else "direct"
            rows.append((name, mode, threads, batch, rate, p99))
            print(f"  {name:<10} {mode:<6} threads={threads:<2} batch={batch:<3} {rate:>9.0f} appends/s"
                  f"  p99 {p99:7.2f} ms", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="wall time per case")
    ap.add_argument("--pg", help="a PostgreSQL URL to use instead of a throwaway cluster")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = ap.parse_args()
    rows: list = []
    pass_rows: list = []
    with tempfile.TemporaryDirectory() as tmp:
        bench("sqlite", f"sqlite:///{tmp}/bench.db", args.seconds, rows, pass_rows)
    if args.pg:
        bench("postgresql", args.pg, args.seconds, rows, pass_rows)
    elif not args.no_pg:
        from tests.live.pg import PgCluster, find_bindir

        bindir = find_bindir()
        if bindir is None:
            print("no PostgreSQL binaries; skipping PostgreSQL", file=sys.stderr)
        else:
            cluster = PgCluster(bindir, fsync=True).start()
            try:
                bench("postgresql", cluster.create_database("bench"), args.seconds, rows, pass_rows)
            finally:
                cluster.stop()
    print(f"{'database':<11} {'mode':<6} {'threads':>7} {'batch':>5} {'appends/s':>10} {'p99 call ms':>12}")
    for name, mode, threads, batch, rate, p99 in rows:
        print(f"{name:<11} {mode:<6} {threads:>7} {batch:>5} {rate:>10.0f} {p99:>12.2f}")
    print()
    print(f"{'database':<11} {'rows changed':>12} {'record_pass p50 ms':>19} {'p99 ms':>8}")
    for name, changed, p50, p99 in pass_rows:
        print(f"{name:<11} {changed:>12} {p50:>19.2f} {p99:>8.2f}")


if __name__ == "__main__":
    main()
