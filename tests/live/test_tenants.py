"""Tenants, tokens, roles and the audit log of the live API (in process: TestClient, fake clock, the
loop stepped by hand): a tenant's users cannot see, cancel or preempt another tenant's jobs nor change
quotas; a tenant admin stays within the admin's limits; every refusal and every accepted change is
audited; tokens are stored and logged only hashed; an open server keeps to 127.0.0.1."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from makeway.config import parse_config
from makeway.errors import ConfigError, MakewayError
from makeway.live.api import create_app
from makeway.live.auth import Authenticator, check_grant, create_token, hash_token
from makeway.live.client import Client
from makeway.live.loop import SchedulerLoop
from makeway.live.store import Store

CFG = {
    "name": "tenants", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 8}}],
    "queues": {"root": {},
               "a": {"parent": "root", "guaranteed": {"cpu": 2}, "max": {"cpu": 4}},
               "a-dev": {"parent": "a", "guaranteed": {"cpu": 1}, "max": {"cpu": 2}},
               "b": {"parent": "root", "guaranteed": {"cpu": 2}, "max": {"cpu": 4}},
               "b-dev": {"parent": "b", "guaranteed": {"cpu": 1}, "max": {"cpu": 2}}},
    "preemption": {"model": "yunikorn"},
    "tenants": {"team-a": {"queues": ["a"]}, "team-b": {"queues": ["b"]}},
}
GRANTS = {"admin": ("admin", None), "alice": ("user", "team-a"), "amy": ("user", "team-a"),
          "bob": ("user", "team-b"), "a-admin": ("tenant-admin", "team-a"), "b-admin": ("tenant-admin", "team-b"),
          "agent": ("agent", None)}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Svc:
    def __init__(self, url: str, tokens: bool = True, cfg: dict | None = None) -> None:
        self.store = Store(url)
        self.tokens = {name: create_token(self.store, role, tenant, name)[0] for name, (role, tenant)
                       in GRANTS.items()} if tokens else {}
        self.clock = Clock()
        self.loop = SchedulerLoop(parse_config(cfg or CFG), self.store, recovery_grace=0, clock=self.clock)
        self.loop.recover()
        self.app = create_app(self.loop, self.loop.cfg, self.store, auth=Authenticator(self.store, clock=self.clock))
        self.client = TestClient(self.app.state.asgi)  # as served: submits take the fast path

    def as_(self, who: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}

    def req(self, who: str | None, method: str, path: str, **kw) -> httpx.Response:
        return self.client.request(method, path, headers={**self.as_(who), **kw.pop("headers", {})}, **kw)

    def step(self) -> None:
        self.clock.t += 1
        self.loop.step(force=True)

    def audit(self) -> list[tuple]:
        return [(a["who"], a["action"], a["target"], a["outcome"]) for a in self.store.audit()
                if a["action"] != "token.create"]

    def close(self) -> None:
        self.client.close()
        self.app.state.committer.close()
        self.store.close()


@pytest.fixture
def svc(tmp_path):
    s = Svc(f"sqlite:///{tmp_path / 'tenants.db'}")
    yield s
    s.close()


def job(jid, queue, count=1, **kw):
    return {"id": jid, "queue": queue, "tasks": [{"count": count, "resources": {"cpu": 1}}], "command": ["true"], **kw}


def test_a_tenant_cannot_see_cancel_or_preempt_another_tenants_jobs_nor_change_quotas(db_url):
    s = Svc(db_url)
    try:
        r = s.req("agent", "POST", "/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 8}, "attempts": []})
        assert r.status_code == 200, r.text
        assert s.req("alice", "POST", "/v1/jobs", json=job("a1", "a-dev")).status_code == 201
        assert s.req("amy", "POST", "/v1/jobs", json=job("a2", "a-dev")).status_code == 201
        assert s.req("bob", "POST", "/v1/jobs", json=job("b1", "b-dev")).status_code == 201
        r = s.req("alice", "POST", "/v1/jobs", json=job("x1", "b-dev"))
        assert r.status_code == 403 and r.json()["detail"]["field"] == "queue"
        r = s.req("alice", "POST", "/v1/jobs", json=job("x2", "a-dev", user="bob"))
        assert r.status_code == 403 and r.json()["detail"]["field"] == "user"
        s.step()
        assert {j["id"]: j["state"] for j in s.req("admin", "GET", "/v1/jobs").json()["jobs"]} == {
            "a1": "running", "a2": "running", "b1": "running"}

        # alice sees her own job only: another tenant's id (and a team mate's) is a 404 like a missing one
        assert [j["id"] for j in s.req("alice", "GET", "/v1/jobs").json()["jobs"]] == ["a1"]
        assert s.req("alice", "GET", "/v1/jobs/a1").json()["spec"]["user"] == "alice"
        missing = s.req("alice", "GET", "/v1/jobs/nope").json()["detail"]
        for path in ("/v1/jobs/b1", "/v1/jobs/b1/explain", "/v1/jobs/b1/events", "/v1/jobs/b1/logs", "/v1/jobs/a2"):
            r = s.req("alice", "GET", path)
            assert r.status_code == 404 and r.json()["detail"]["field"] == "job", path
        assert s.req("alice", "GET", "/v1/jobs/b1").json()["detail"] == {**missing, "error": missing["error"].replace(
            "nope", "b1")}
        assert s.req("alice", "DELETE", "/v1/jobs/b1").status_code == 404
        assert s.req("alice", "POST", "/v1/jobs/b1/preempt").status_code == 404
        assert s.req("alice", "POST", "/v1/jobs/a1/preempt").status_code == 403  # a user preempts nothing
        assert s.req("alice", "PATCH", "/v1/jobs/b1", json={"priority": 9}).status_code == 404
        for q in ("a-dev", "b-dev", "a"):
            r = s.req("alice", "PATCH", f"/v1/queues/{q}", json={"max": {"cpu": 1}})
            assert r.status_code == 403, r.text
        assert s.req("alice", "GET", "/v1/audit").status_code == 403
        # queue-level figures are for everyone; pending lists and the feed only show what one may see
        assert {q["name"] for q in s.req("alice", "GET", "/v1/queues").json()["queues"]} == set(CFG["queues"])
        assert s.req("bob", "GET", "/v1/preemptions").json()["preemptions"] == []
        assert s.req("bob", "POST", "/v1/jobs", json=job("b2", "b-dev", count=2)).status_code == 201
        s.step()  # one of b2's tasks waits (b-dev's max is 2): its position shows to bob and b's admin, not to team-a
        assert [r["job"] for r in s.req("bob", "GET", "/v1/queues/b-dev/pending").json()["pending"]] == ["b2"]
        assert [r["job"] for r in s.req("b-admin", "GET", "/v1/queues/root/pending").json()["pending"]] == ["b2"]
        assert s.req("a-admin", "GET", "/v1/queues/root/pending").json()["pending"] == []

        # the tenant admin sees and preempts its tenant's jobs, never the other tenant's
        assert sorted(j["id"] for j in s.req("a-admin", "GET", "/v1/jobs").json()["jobs"]) == ["a1", "a2"]
        assert s.req("a-admin", "POST", "/v1/jobs/b1/preempt").status_code == 404
        assert s.req("a-admin", "POST", "/v1/jobs/a2/preempt").status_code == 202
        assert s.req("b-admin", "DELETE", "/v1/jobs/a1").status_code == 404
        assert s.req("alice", "DELETE", "/v1/jobs/a1").status_code == 202
        s.step()
        assert s.req("admin", "GET", "/v1/jobs/a1").json()["state"] == "cancelled"
        assert s.req("admin", "GET", "/v1/jobs/b1").json()["state"] == "running"
        a2 = s.req("amy", "GET", "/v1/jobs/a2/explain").json()
        assert a2["preemptions"][0]["rule"] == "manual" and a2["preemptions"][0]["values"] == {"by": "a-admin"}
        assert [p["victim"] for p in s.req("amy", "GET", "/v1/preemptions").json()["preemptions"]] == ["a2"]
        assert s.req("alice", "GET", "/v1/preemptions").json()["preemptions"] == []

        audit = s.audit()
        assert audit == [
            ("alice", "job.submit", "job:x1", "forbidden"), ("alice", "job.submit", "job:x2", "forbidden"),
            ("alice", "job.cancel", "job:b1", "not-found"), ("alice", "job.preempt", "job:b1", "not-found"),
            ("alice", "job.preempt", "job:a1", "forbidden"), ("alice", "job.reprioritise", "job:b1", "not-found"),
            ("alice", "queue.patch", "queue:a-dev", "forbidden"), ("alice", "queue.patch", "queue:b-dev", "forbidden"),
            ("alice", "queue.patch", "queue:a", "forbidden"), ("alice", "audit.read", "audit", "forbidden"),
            ("a-admin", "job.preempt", "job:b1", "not-found"), ("a-admin", "job.preempt", "job:a2", "ok"),
            ("b-admin", "job.cancel", "job:a1", "not-found"), ("alice", "job.cancel", "job:a1", "ok")]
        rows = s.req("admin", "GET", "/v1/audit").json()["audit"]
        assert all(r["status"] in (200, 403, 404) and r["at"] >= 1000 for r in rows if r["action"] != "token.create")
        ok = [r for r in rows if r["outcome"] == "ok" and r["action"] != "token.create"]
        assert all(r["seq"] is not None for r in ok)  # committed with the input they record
        # a tenant admin reads its tenant's rows: its own principals' and those aimed at its jobs/queues
        b_rows = s.req("b-admin", "GET", "/v1/audit").json()["audit"]
        assert {r["target"] for r in b_rows if r["action"] != "token.create"} == {
            "job:x1", "queue:b-dev", "job:b1", "job:a1"}
        assert all(r["tenant"] == "team-b" or r["target_tenant"] == "team-b" for r in b_rows)
    finally:
        s.close()


def test_tokens_are_required_once_they_exist_and_roles_keep_to_their_endpoints(svc):
    r = svc.req(None, "GET", "/v1/jobs")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert r.json()["detail"]["field"] == "authorization"
    for header in ("Bearer mwt_000000000000_" + "x" * 43, "Bearer nonsense", "Basic abc",
                   "Bearer " + svc.tokens["alice"][:-1] + ("B" if svc.tokens["alice"].endswith("A") else "A")):
        assert svc.client.get("/v1/jobs", headers={"Authorization": header}).status_code == 401, header
    assert svc.req(None, "GET", "/healthz").status_code == 200
    assert svc.req("agent", "GET", "/v1/jobs").status_code == 403
    assert svc.req("alice", "POST", "/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 1}}).status_code == 403
    assert svc.req("alice", "POST", "/v1/nodes/n1/drain").status_code == 403
    # a revoked token stops working once its cached look-up expires
    assert svc.req("bob", "GET", "/v1/queues").status_code == 200
    svc.store.revoke_token("bob", 1.0)
    assert svc.req("bob", "GET", "/v1/queues").status_code == 200
    svc.clock.t += 2
    assert svc.req("bob", "GET", "/v1/queues").status_code == 401
    # idempotency keys are per tenant: the same key in two tenants is two jobs
    k = {"Idempotency-Key": "same"}
    ra = svc.req("alice", "POST", "/v1/jobs", json=job("ka", "a-dev"), headers=k).json()
    ra2 = svc.req("alice", "POST", "/v1/jobs", json=job("ka", "a-dev"), headers=k).json()
    svc.tokens["bob2"] = create_token(svc.store, "user", "team-b", "bob2")[0]
    rb = svc.req("bob2", "POST", "/v1/jobs", json=job("kb", "b-dev"), headers=k).json()
    assert ra["created"] and not ra2["created"] and rb["created"] and rb["seq"] != ra["seq"]
    assert [(e.tenant, e.payload["job"]["id"]) for e in svc.store.events_after(0) if e.kind == "submit"] == [
        ("team-a", "ka"), ("team-b", "kb")]


def test_a_tenant_admin_stays_within_the_admins_limits(svc):
    def patch(who, q, body):
        return svc.req(who, "PATCH", f"/v1/queues/{q}", json=body)

    assert patch("a-admin", "a-dev", {"max": {"cpu": 4}}).status_code == 200  # = the root's max
    for q, body, field in (("a-dev", {"max": {"cpu": 5}}, "max.cpu"),
                           ("a-dev", {"guaranteed": {"cpu": 3}, "max": {"cpu": 4}}, "guaranteed.cpu"),
                           ("a-dev", {"unset": ["max"]}, "max.cpu"),
                           ("a", {"max": {"cpu": 3}}, "queue"),
                           ("b-dev", {"max": {"cpu": 1}}, "queue")):
        r = patch("a-admin", q, body)
        assert r.status_code == 403 and r.json()["detail"]["field"] == field, (q, body, r.text)
    assert patch("alice", "a-dev", {"max": {"cpu": 1}}).status_code == 403
    assert patch("admin", "a", {"guaranteed": {"cpu": 4}, "max": {"cpu": 6}}).status_code == 200
    svc.step()
    assert patch("a-admin", "a-dev", {"guaranteed": {"cpu": 3}, "max": {"cpu": 6}}).status_code == 200
    svc.step()
    q = {q["name"]: q for q in svc.req("alice", "GET", "/v1/queues").json()["queues"]}
    assert (q["a-dev"]["guaranteed"], q["a-dev"]["max"]) == ({"cpu": 3}, {"cpu": 6})
    rows = [r for r in svc.store.audit() if r["action"] == "queue.patch"]
    assert [(r["who"], r["target"], r["outcome"]) for r in rows] == (
        [("a-admin", "queue:a-dev", "ok")] + [("a-admin", f"queue:{q}", "forbidden") for q in
                                               ("a-dev", "a-dev", "a-dev", "a", "b-dev")]
        + [("alice", "queue:a-dev", "forbidden"), ("admin", "queue:a", "ok"), ("a-admin", "queue:a-dev", "ok")])
    assert rows[0]["details"]["before"] == {"guaranteed": {"cpu": 1}, "max": {"cpu": 2}}
    assert rows[1]["details"]["error"].startswith("max.cpu: 5 is above the admin's limit 4")


def test_a_manual_preemption_replays_to_the_same_decisions(svc, tmp_path):
    svc.req("agent", "POST", "/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 8}, "attempts": []})
    svc.req("alice", "POST", "/v1/jobs", json=job("p", "a-dev", count=2, grace=5))
    svc.step()
    assert svc.req("admin", "POST", "/v1/jobs/p/preempt").status_code == 202
    svc.step()
    assert svc.req("alice", "GET", "/v1/jobs/p").json()["state"] == "preempting"
    desired = svc.req("agent", "GET", "/v1/agent/desired", params={"node": "n1"}).json()["attempts"]
    assert {a["action"] for a in desired} == {"stop"} and {a["notice"]["reason"]["rule"] for a in desired} == {"manual"}
    assert svc.req("admin", "POST", "/v1/jobs/nope/preempt").status_code == 404
    digest = svc.loop.core.digest
    again = SchedulerLoop(parse_config(CFG), svc.store, recovery_grace=0, clock=svc.clock)
    again.recover()  # replays every pass and checks each digest
    assert again.core.digest == digest


def test_tokens_are_stored_and_logged_only_hashed(tmp_path, caplog, monkeypatch):
    import uvicorn

    caplog.set_level(logging.DEBUG)
    for name in ("uvicorn", "uvicorn.access", "uvicorn.error"):  # as in a fresh process, whatever
        logger = logging.getLogger(name)  # an earlier test's uvicorn logging config left behind
        monkeypatch.setattr(logger, "disabled", False)
        monkeypatch.setattr(logger, "propagate", True)
    db = tmp_path / "h.db"
    s = Svc(f"sqlite:///{db}")
    try:
        for name in s.tokens:
            s.req(name, "GET", "/v1/queues")
        s.req("alice", "GET", "/v1/jobs/b1")
        s.client.get("/v1/jobs", headers={"Authorization": "Bearer " + s.tokens["alice"] + "x"})
        # a real uvicorn with its access log on, as an operator might run it
        config = uvicorn.Config(s.app, host="127.0.0.1", port=0, access_log=True, log_config=None, log_level="debug")
        server = uvicorn.Server(config)
        t = threading.Thread(target=server.run, daemon=True)
        t.start()
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        r = httpx.get(f"http://127.0.0.1:{port}/v1/queues", headers=s.as_("admin"), timeout=5)
        assert r.status_code == 200
        server.should_exit = True
        t.join(5)
        assert any(rec.name == "uvicorn.access" for rec in caplog.records)
        rows = s.store.tokens()
        assert len(rows) == len(GRANTS) and all("hash" not in r for r in rows)
        hashes = {r["hash"] for r in (s.store.token(row["id"]) for row in rows)}
        assert hashes == {hash_token(t) for t in s.tokens.values()}
    finally:
        s.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("h.db"))
    logs = caplog.text
    for token in s.tokens.values():
        secret = token.split("_", 2)[2]  # mwt_<id>_<secret>; the secret itself may hold "_"
        assert len(secret) >= 40
        assert secret.encode() not in blob and secret not in logs
    assert hash_token(s.tokens["admin"]).encode() in blob


def test_an_open_server_keeps_to_loopback_and_says_so(tmp_path):
    from makeway.live.serve import Server

    cfg = parse_config(CFG)
    url = f"sqlite:///{tmp_path / 'open.db'}"
    with pytest.raises(MakewayError, match=r"^--host: 0\.0\.0\.0 .*no token is configured"):
        Server(cfg, url, host="0.0.0.0", port=0)
    srv = Server(cfg, url, host="127.0.0.1", port=0)
    try:
        assert srv.open and "open to local users only (127.0.0.1)" in srv.access_note
        with TestClient(srv.app) as c:  # open: everyone is the local admin; the local agents' secret works
            assert c.get("/v1/jobs").status_code == 200
            assert c.post("/v1/agent/register", headers={"Authorization": f"Bearer {srv.agent_token}"},
                          json={"node": "n1", "capacity": {"cpu": 1}}).status_code == 200
    finally:
        srv.close()  # the committer, the leader lock and the database
    with Store(url) as st:
        create_token(st, "admin")
    srv = Server(cfg, url, host="0.0.0.0", port=0)
    try:
        assert not srv.open and "every request needs" in srv.access_note
        with TestClient(srv.app) as c:
            assert c.get("/v1/jobs").status_code == 401
            assert c.post("/v1/agent/register", headers={"Authorization": f"Bearer {srv.agent_token}"},
                          json={"node": "n1", "capacity": {"cpu": 1}}).status_code == 200
    finally:
        srv.close()  # the committer, the leader lock and the database


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "makeway", *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_token_commands_through_the_cli(tmp_path):
    """Two real ``makeway`` processes (exit status and streams as a shell sees them), the rest in process.
    The serve host rule is the ``Server`` test above: its ``MakewayError`` is exit 2 like this one's."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CFG))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    r = _cli("token", "create", "--role", "root", "--db", db)
    assert r.returncode == 2 and r.stderr.startswith("error: --role: 'root' is not one of") and not r.stdout
    r = _cli("token", "create", "--role", "user", "--tenant", "team-a", "--name", "alice", "--config", str(cfg),
             "--db", db)
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    assert token.startswith("mwt_") and token not in r.stderr and "shown only now" in r.stderr
    from typer.testing import CliRunner

    from makeway.cli import app

    runner = CliRunner()  # the rest in process (a subprocess costs a second of imports)
    r = runner.invoke(app, ["token", "list", "--db", db, "-o", "json"])
    assert r.exit_code == 0 and token.split("_", 2)[2] not in r.stdout and '"alice"' in r.stdout
    r = runner.invoke(app, ["token", "revoke", "alice", "--db", db])
    assert r.exit_code == 0 and "revoked alice" in r.stdout
    assert runner.invoke(app, ["token", "revoke", "nobody", "--db", db]).exit_code == 2
    with Store(db) as st:
        assert st.tokens()[0]["revoked"] is not None
        assert [a["action"] for a in st.audit()] == ["token.create", "token.revoke"]
        assert st.audit()[0]["who"].startswith("cli:")


@pytest.mark.parametrize("role, tenant, name, field", [
    ("boss", None, None, "--role"), ("user", None, None, "--tenant"), ("admin", "team-a", None, "--tenant"),
    ("user", "a b", None, "--tenant"), ("user", "team-a", "no spaces", "--name"),
    ("user", "team-z", None, "--tenant: 'team-z' is not a tenant of the config")])
def test_bad_grants_name_the_option(role, tenant, name, field):
    with pytest.raises(MakewayError, match=f"^{field}"):
        check_grant(role, tenant, name, parse_config(CFG))


def test_a_token_name_is_taken_once(tmp_path):
    with Store(f"sqlite:///{tmp_path / 'n.db'}") as st:
        create_token(st, "admin", name="ops")
        with pytest.raises(MakewayError, match="^name: a token named 'ops' exists"):
            create_token(st, "user", "team-a", name="ops")
        assert [t["name"] for t in st.tokens()] == ["ops"]


@pytest.mark.parametrize("tenants, where", [
    ({"t": {"queues": ["zz"]}}, "tenants.t.queues.0: unknown queue 'zz'"),
    ({"t": {"queues": ["a"]}, "u": {"queues": ["a-dev"]}}, "tenants.u.queues.0: queue 'a-dev' overlaps"),
    ({"t": {"queues": ["a-dev"]}, "u": {"queues": ["root"]}}, "tenants.u.queues.0: queue 'root' overlaps"),
    ({"t": {"queues": []}}, "tenants.t.queues: List should have at least 1 item"),
    ({"t t": {"queues": ["a"]}}, "tenants.t t: not a tenant name"),
])
def test_tenant_config_errors_name_the_field(tenants, where):
    with pytest.raises(ConfigError, match=f"config: .*{where}"):
        parse_config({**CFG, "tenants": tenants})


def test_the_client_sends_the_token(monkeypatch):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"jobs": []})

    c = Client("http://127.0.0.1:1", token="mwt_t")
    c.http = httpx.Client(base_url=c.base, headers=c.http.headers, transport=httpx.MockTransport(handler))
    c.get("/v1/jobs")
    monkeypatch.setenv("MAKEWAY_TOKEN", "mwt_env")
    c = Client("http://127.0.0.1:1")
    c.http = httpx.Client(base_url=c.base, headers=c.http.headers, transport=httpx.MockTransport(handler))
    c.get("/v1/jobs")
    assert seen == ["Bearer mwt_t", "Bearer mwt_env"]



def test_a_cached_look_up_does_not_read_the_store(svc):
    auth = svc.app.state.auth
    header = svc.as_("alice")["Authorization"]
    assert auth.needs_store(header)
    assert auth.authenticate(header)[0].name == "alice"
    assert not auth.needs_store(header) and not auth.needs_store("Bearer not-a-token") and not auth.needs_store(None)
    svc.clock.t += 2
    assert auth.needs_store(header)


def test_the_web_ui_shows_a_user_only_what_the_api_would(svc):
    """The pages follow the same tenancy rule as the JSON API: bob's job is not on alice's job list,
    its page is a 404, and its preemptions are not in her feed; queue-level figures stay visible."""
    assert svc.req("alice", "POST", "/v1/jobs", json=job("a1", "a-dev")).status_code == 201
    assert svc.req("bob", "POST", "/v1/jobs", json=job("b1", "b-dev")).status_code == 201
    svc.step()
    page = svc.req("alice", "GET", "/ui/jobs")
    assert page.status_code == 200 and "a1" in page.text and "b1" not in page.text
    assert svc.req("alice", "GET", "/ui/jobs/b1").status_code == 404
    assert svc.req("admin", "GET", "/ui/jobs/b1").status_code == 200
    assert "b-dev" in svc.req("alice", "GET", "/ui/queues").text
    r = svc.req(None, "GET", "/ui/jobs", params={"state": "running"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login?next=%2Fui%2Fjobs%3Fstate%3Drunning"
    assert svc.req(None, "GET", "/v1/jobs").status_code == 401  # the API answers, it does not redirect
    assert svc.req(None, "POST", "/v1/jobs", json=job("anon", "a-dev")).status_code == 401


def login(svc, token: str, next_url: str = "/ui/jobs") -> httpx.Response:
    return svc.client.post("/ui/login", data={"token": token, "next": next_url}, follow_redirects=False)


def test_a_browser_logs_in_with_a_token_and_reads_only_what_its_token_may(svc):
    """The login form takes a token into an HttpOnly, SameSite=Strict cookie; the cookie opens reads
    (pages and JSON) with the token's own tenancy, never a write; bad logins are audited."""
    assert svc.req("alice", "POST", "/v1/jobs", json=job("a1", "a-dev")).status_code == 201
    assert svc.req("bob", "POST", "/v1/jobs", json=job("b1", "b-dev")).status_code == 201
    svc.step()
    assert "password" in svc.client.get("/ui/login").text
    r = login(svc, "mwt_not-a-token")
    assert r.status_code == 401 and "token:" in r.text and "set-cookie" not in r.headers
    assert login(svc, svc.tokens["agent"]).status_code == 401
    assert login(svc, "").status_code == 422
    r = login(svc, svc.tokens["alice"])
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs"
    cookie = r.headers["set-cookie"]
    assert "makeway_token=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    page = svc.client.get("/ui/jobs")  # the client keeps the cookie, as a browser does
    assert page.status_code == 200 and "a1" in page.text and "b1" not in page.text and "log out" in page.text
    assert [j["id"] for j in svc.client.get("/v1/jobs").json()["jobs"]] == ["a1"]
    assert svc.client.get("/ui/jobs/b1").status_code == 404
    # a cookie never writes: a forged cross-site form gets nothing done
    assert svc.client.post("/v1/jobs", json=job("a9", "a-dev")).status_code == 401
    assert svc.client.delete("/v1/jobs/a1").status_code == 401
    assert svc.client.patch("/v1/jobs/a1", json={"priority": -1}).status_code == 401
    # a login never sends the browser elsewhere
    for evil in ("https://evil.example/", "//evil.example/ui", "/\\evil.example"):
        assert login(svc, svc.tokens["alice"], evil).headers["location"] == "/ui/"
    r = svc.client.post("/ui/logout", follow_redirects=False)
    assert r.status_code == 303 and 'makeway_token=""' in r.headers["set-cookie"].replace("makeway_token=;", 'makeway_token="";')
    svc.client.cookies.clear()
    assert svc.client.get("/ui/jobs", follow_redirects=False).status_code == 303
    logins = [(a[0], a[3]) for a in svc.audit() if a[1] == "ui.login"]
    assert logins == [("anonymous", "unauthenticated"), ("anonymous", "forbidden"), ("alice", "ok"),
                      ("alice", "ok"), ("alice", "ok"), ("alice", "ok")]
