"""The live commands: ``serve``, ``token`` and the CLI over the REST API (submit, jobs, queues, nodes,
cancel, preempt, audit).

Registered on the main ``app`` by ``makeway.cli``; every client command takes ``--server`` (default
``MAKEWAY_SERVER``, else http://127.0.0.1:8642) and ``--token`` (default ``MAKEWAY_TOKEN``), and turns a
refused request into one stderr line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from makeway.cli import app, fail

SERVER = typer.Option(None, "--server", help="makeway server URL, or URL1,URL2 to fail over to a standby "
                                             "(default: $MAKEWAY_SERVER or http://127.0.0.1:8642)")
OUTPUT = typer.Option("table", "--output", "-o", help="table or json")
TOKEN = typer.Option(None, "--token", help="bearer token (default: $MAKEWAY_TOKEN)", show_default=False)


def _client(server: Optional[str], token: Optional[str] = None):
    from makeway.live.client import Client

    return Client(server, token=token)


def _age(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    s = int(max(0, seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*["-" if v is None else str(v) for v in r])
    Console(width=200).print(t)


def _check_output(output: str) -> None:
    if output not in ("table", "json"):
        raise fail(f"--output: {output!r} is not table or json")


def _listing(server: Optional[str], output: str, path: str, key: str, token: Optional[str] = None,
             **params: Any) -> Optional[dict]:
    """GET a list; with ``--output json`` print it and return None, else return the whole answer."""
    _check_output(output)
    got = _client(server, token).get(path, **params)
    if output == "json":
        typer.echo(json.dumps(got[key], indent=1))
        return None
    return got


@app.command()
def serve(
    config: Path = typer.Argument(..., help="cluster config (the same YAML the simulator reads)"),
    db: Optional[str] = typer.Option(None, "--db", help="database URL (default: sqlite file beside the config); "
                                                         "postgresql+psycopg://user@host/db for production"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8642, "--port", min=0, max=65535, help="0 picks a free port"),
    local_agent: bool = typer.Option(False, "--local-agent", help="also run an agent for the config's nodes here"),
    agent_dir: Optional[Path] = typer.Option(None, "--agent-dir", help="local agent work dir (default: beside the db)"),
    recovery_grace: float = typer.Option(10.0, "--recovery-grace", min=0,
                                         help="seconds to wait for agents to re-register after a restart"),
    min_pass_interval: float = typer.Option(0.02, "--min-pass-interval", min=0, max=60,
                                            help="seconds between scheduling passes at least (inputs batch up)"),
    lease: float = typer.Option(30.0, "--lease", min=0, max=86400,
                                help="seconds an agent may be silent before its supervisors kill its tasks; "
                                     "3 s later the server declares the node lost and requeues them (0: never)"),
    suspect_after: float = typer.Option(10.0, "--suspect-after", min=0, max=86400,
                                        help="seconds of agent silence after which a node gets no new starts"),
    api_workers: int = typer.Option(1, "--api-workers",
                                    help="processes answering the API on the one port: this one (which "
                                         "schedules) and N-1 acceptors that journal submits themselves and "
                                         "pass every other request to it (more durable submits/s on more cores)"),
) -> None:
    """Run the live scheduler: REST API, one scheduler loop, durable journal; prints the URL it listens on.

    A second serve on the same PostgreSQL database is a standby that takes over when the first one
    stops; on a SQLite file it is refused (exit 2)."""
    import logging

    from makeway.config import load_config
    from makeway.live.serve import Server, default_db

    if api_workers < 1:
        raise fail(f"--api-workers: expected a whole number >= 1, got {api_workers}")
    cfg = load_config(config)
    url = db or default_db(config)
    if local_agent and agent_dir is None:
        agent_dir = (config.parent / f"{config.stem}-agent").resolve()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its per-start INFO lines say nothing to an operator
    server = Server(cfg, url, host, port, local_agent=local_agent, agent_dir=agent_dir,
                    recovery_grace=recovery_grace, min_pass_interval=min_pass_interval, lease=lease,
                    suspect_after=suspect_after, api_workers=api_workers)

    def listening(u: str) -> None:
        typer.echo(f"makeway serving {cfg.name} ({cfg.preemption.model}) on {u}", err=False)
        typer.echo(server.access_note)
        sys.stdout.flush()

    def standing_by(u: str) -> None:
        typer.echo(f"makeway standby for {cfg.name} on {u}: another serve leads this database; "
                   "taking over when it stops", err=False)
        sys.stdout.flush()

    server.run(on_listen=listening, on_standby=standing_by)


def _read_job(path: str) -> dict[str, Any]:
    from makeway.config import parse_yaml

    if path == "-":
        text, where = sys.stdin.read(), "stdin"
    else:
        p = Path(path)
        if not p.is_file():
            raise fail(f"{path}: no such file")
        text, where = p.read_text(), path
    data = parse_yaml(text, where)
    if not isinstance(data, dict):
        raise fail(f"{where}: a job file holds one job (a mapping with id, queue, tasks, command)")
    return data


@app.command()
def submit(
    job: str = typer.Argument(..., help="job file (YAML or JSON; '-' for stdin)"),
    server: Optional[str] = SERVER,
    key: Optional[str] = typer.Option(None, "--idempotency-key", help="retry-safe key for this submission"),
    token: Optional[str] = TOKEN,
) -> None:
    """Submit one job (the fields of a trace line plus command and env); prints its id."""
    got = _client(server, token).submit(_read_job(job), key)
    typer.echo(got["id"])


@app.command()
def jobs(
    server: Optional[str] = SERVER,
    output: str = OUTPUT,
    state: Optional[str] = typer.Option(None, "--state", help="only jobs in this state"),
    queue: Optional[str] = typer.Option(None, "--queue", help="only jobs of this queue"),
    token: Optional[str] = TOKEN,
) -> None:
    """List jobs, squeue-like: id, queue, state, node, age, reason code (the ones your token may see)."""
    got = _listing(server, output, "/v1/jobs", "jobs", token, state=state, queue=queue)
    if got is None:
        return
    now = got.get("now", 0.0)
    rows = [[j["id"], j["queue"], j["state"], j.get("node"),
             _age(now - j["submitted"]) if j.get("submitted") is not None else "-",
             j.get("reason_code") or ""] for j in got["jobs"]]
    _table("jobs", ["ID", "QUEUE", "STATE", "NODE", "AGE", "REASON"], rows)


def _res(r: Optional[dict]) -> str:
    if not r:
        return "-"
    return ",".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in r.items())


def _share(share: Optional[dict]) -> str:
    if not share:
        return "-"
    if "drs" in share:
        return f"drs {share['drs']}" + (" (borrowing)" if share.get("borrowing") else "")
    if "fair_share" in share:
        return f"fair {share['fair_share']:.3g} / used {share['usage_share']:.3g}"
    return ",".join(f"{k}={v}" for k, v in share.items())


@app.command()
def queues(server: Optional[str] = SERVER, output: str = OUTPUT, token: Optional[str] = TOKEN) -> None:
    """The queue tree: guaranteed, max, usage, pending (sshare / kubectl get clusterqueues-like)."""
    got = _listing(server, output, "/v1/queues", "queues", token)
    if got is None:
        return
    depth: dict[str, int] = {}
    rows = []
    for q in got["queues"]:
        depth[q["name"]] = depth.get(q["parent"], -1) + 1 if q["parent"] else 0
        rows.append(["  " * depth[q["name"]] + q["name"], _res(q["guaranteed"]), _res(q["max"]), _res(q["usage"]),
                     _share(q.get("share")), q["pending"], q["running"]])
    _table(f"queues ({got.get('model')})", ["QUEUE", "GUARANTEED", "MAX", "USAGE", "SHARE", "PENDING", "RUNNING"], rows)


@app.command()
def nodes(server: Optional[str] = SERVER, output: str = OUTPUT, token: Optional[str] = TOKEN) -> None:
    """Nodes: capacity, used, registered, cordoned, attempts."""
    got = _listing(server, output, "/v1/nodes", "nodes", token)
    if got is None:
        return
    rows = [[n["name"], _res(n["capacity"]), _res(n["used"]),
             "ready" if n["registered"] and not n["cordoned"] else ("cordoned" if n["cordoned"] else "unregistered"),
             n["attempts"]] for n in got["nodes"]]
    _table("nodes", ["NODE", "CAPACITY", "USED", "STATE", "TASKS"], rows)


@app.command()
def cancel(job: str = typer.Argument(..., help="job id"), server: Optional[str] = SERVER,
           token: Optional[str] = TOKEN) -> None:
    """Cancel a job: pending tasks are dropped, running ones get their stop signal and grace."""
    got = _client(server, token).cancel(job)
    typer.echo(f"{got['id']} {got['state']}")


@app.command()
def preempt(job: str = typer.Argument(..., help="job id"), server: Optional[str] = SERVER,
            token: Optional[str] = TOKEN) -> None:
    """Preempt a job by hand (admin, or its tenant's admin): its running tasks stop and it waits again."""
    got = _client(server, token).preempt(job)
    typer.echo(f"{got['id']} {got['state']}")


@app.command()
def reprioritise(job: str = typer.Argument(..., help="job id"),
                 priority: int = typer.Argument(..., help="the new priority (higher goes first)"),
                 server: Optional[str] = SERVER, token: Optional[str] = TOKEN) -> None:
    """Change a waiting job's priority (scontrol update Priority=-like): users may lower their own
    jobs', tenant admins and admins may set any."""
    got = _client(server, token).reprioritise(job, priority)
    typer.echo(f"{got['id']} priority {got['previous']} -> {got['priority']}")


@app.command()
def audit(server: Optional[str] = SERVER, output: str = OUTPUT, token: Optional[str] = TOKEN,
          limit: int = typer.Option(1000, "--limit", min=1, max=100000)) -> None:
    """The audit log: quota changes, cancels, preemptions, node operations and refused attempts, with who."""
    got = _listing(server, output, "/v1/audit", "audit", token, limit=limit)
    if got is None:
        return
    rows = [[a["id"], f"{a['at']:.3f}", a["who"], a["role"], a.get("tenant"), a["action"], a["target"],
             a["outcome"], (a.get("details") or {}).get("error", "")] for a in got["audit"]]
    _table("audit", ["ID", "AT", "WHO", "ROLE", "TENANT", "ACTION", "TARGET", "OUTCOME", "ERROR"], rows)


# -- tokens ----------------------------------------------------------------------------------------

token_app = typer.Typer(no_args_is_help=True, help="Bearer tokens of a live server (stored hashed in its database).")
app.add_typer(token_app, name="token")
DB = typer.Option(..., "--db", help="the server's database URL (as given to 'makeway serve --db')")


def _store(db: str):
    from makeway.live.store import Store

    return Store(db)


@token_app.command("create")
def token_create(
    role: str = typer.Option(..., "--role", help="admin, tenant-admin, user or agent"),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="the tenant of a tenant-admin or user token"),
    name: Optional[str] = typer.Option(None, "--name", help="a name to list and revoke it by (default: role-id)"),
    db: str = DB,
    config: Optional[Path] = typer.Option(None, "--config", help="cluster config: check that the tenant is declared"),
) -> None:
    """Create a token and print it, once: only its hash is stored. The first token makes every request
    to the server need one (and lets it listen beyond 127.0.0.1)."""
    import getpass

    from makeway.live.auth import check_grant, create_token

    cfg = None
    if config is not None:
        from makeway.config import load_config

        cfg = load_config(config)
    check_grant(role, tenant, name, cfg)  # before the database is opened (or created)
    with _store(db) as store:
        token, row = create_token(store, role, tenant, name, cfg, by=f"cli:{getpass.getuser()}")
    typer.echo(token)
    typer.echo(f"created token {row['name']} (id {row['id']}, role {role}"
               + (f", tenant {tenant}" if tenant else "") + "); it is shown only now", err=True)


@token_app.command("list")
def token_list(db: str = DB, output: str = OUTPUT) -> None:
    """Tokens (never their secrets): id, name, role, tenant, created, revoked."""
    _check_output(output)
    with _store(db) as store:
        rows = store.tokens()
    if output == "json":
        typer.echo(json.dumps(rows, indent=1))
        return
    _table("tokens", ["ID", "NAME", "ROLE", "TENANT", "CREATED", "REVOKED"],
           [[r["id"], r["name"], r["role"], r["tenant"], _when(r["created"]), _when(r["revoked"])] for r in rows])


@token_app.command("revoke")
def token_revoke(token: str = typer.Argument(..., help="id or name of the token"), db: str = DB) -> None:
    """Revoke a token (a running server stops taking it within a second)."""
    import getpass
    import time

    with _store(db) as store:
        row = store.revoke_token(token, time.time())
        if row is None:
            raise fail(f"token: no token with id or name {token!r}")
        store.add_audit({"at": time.time(), "who": f"cli:{getpass.getuser()}", "role": "admin",
                         "action": "token.revoke", "target": f"token:{row['name']}", "target_tenant": row["tenant"],
                         "outcome": "ok", "status": 0, "details": {"id": row["id"]}})
    typer.echo(f"revoked {row['name']} ({row['id']})")


def _when(t: Optional[float]) -> Optional[str]:
    import datetime

    return None if t is None else datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def explain_live(job: str, server: Optional[str], output: str = "table", token: Optional[str] = None) -> None:
    got = _client(server, token).get(f"/v1/jobs/{job}/explain")
    if output == "json":
        typer.echo(json.dumps(got, indent=1))
        return
    typer.echo(f"job {got['id']} in queue {got['queue']}: {got['state']}"
               + (f" ({got['message']})" if got.get("message") else ""))
    p = got.get("pending")
    if p:
        pos = f", position {p['position']} in {p.get('queue')}" if p.get("position") else ""
        typer.echo(f"  pending: {p['code']}: {p['message']}{pos}")
    for line in got.get("story", []):
        typer.echo("  " + line)
    for pr in got.get("preemptions", []):
        typer.echo(f"  preempted: model={pr['model']} rule={pr['rule']} preemptor={pr.get('preemptor')} "
                   f"values={json.dumps(pr.get('values', {}), sort_keys=True)}")


__all__ = ["explain_live"]
