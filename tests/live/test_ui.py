"""The web UI: every page renders without JavaScript and shows the API's figures; the jobs filters
work; htmx gets only the live part; the event stream reports committed passes; and, in a real
browser (Debian's chromium through Playwright), a preemption caused through the API shows up live.
"""

from __future__ import annotations

import html
import os
import re
import threading
import time
from pathlib import Path

import pytest

from tests.live.scenario import reclaim, run_preemption, service, start_batch

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM = "/usr/bin/chromium"


def text(r) -> str:
    assert r.status_code == 200, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    return html.unescape(r.text)


def bars(page: str) -> dict[tuple[str, str], dict[str, str]]:
    """(queue, resource) -> the bar's data-* figures."""
    out = {}
    for m in re.finditer(r'<div class="bar" data-queue="([^"]+)" data-resource="([^"]+)"([^>]*)>', page):
        out[(m[1], m[2])] = dict(re.findall(r'data-(\w+)="([^"]*)"', m[3]))
    return out


def job_rows(page: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)"', page)


def test_pages_render_without_javascript_with_the_apis_figures(tmp_path):
    with service(tmp_path) as (client, loop, store, clock):
        start_batch(client, loop, clock)
        q = text(client.get("/ui/queues"))
        b = bars(q)
        # batch runs 2 cpu on a guarantee of 1: it borrows prod's idle 1; one scale (0-2) for all
        assert b[("batch", "cpu")] == {"usage": "2", "guaranteed": "1", "max": "2", "borrowed": "1", "lent": "0"}
        assert b[("prod", "cpu")]["usage"] == "0" and b[("prod", "cpu")]["lent"] == "1"
        assert "cpu: 0 – 2" in q

        reclaim(client, loop, clock)
        api_queues = {x["name"]: x for x in client.get("/v1/queues").json()["queues"]}
        q = text(client.get("/ui/queues"))
        b = bars(q)
        for name, x in api_queues.items():
            assert b[(name, "cpu")]["usage"] == str(x["usage"].get("cpu", 0))
        assert b[("batch", "cpu")]["borrowed"] == "0" and b[("prod", "cpu")]["usage"] == "1"
        # the usage bar's width is its share of the one scale (2 cpu)
        assert re.search(r'data-queue="prod" data-resource="cpu".*?<span class="u" style="width: 50.00%"', q, re.S)
        nav = re.findall(r'<a href="(/ui/[a-z]+)"', q)
        assert {"/ui/queues", "/ui/jobs", "/ui/preemptions", "/ui/nodes"} <= set(nav)  # plain links

        jobs = text(client.get("/ui/jobs"))
        assert job_rows(jobs) == [j["id"] for j in client.get("/v1/jobs").json()["jobs"]] == ["b1", "p1", "late"]
        assert '<form class="filters" method="get" action="/ui/jobs">' in jobs
        b1_row = re.search(r'<tr data-job="b1".*?</tr>', jobs, re.S)[0]
        assert ">pending<" in b1_row and ">quota<" in b1_row and ">1<" in b1_row  # reason code, position
        assert "kueue/InCohortReclamation by p1" in b1_row
        assert job_rows(text(client.get("/ui/jobs", params={"queue": "prod"}))) == ["p1"]
        assert job_rows(text(client.get("/ui/jobs", params={"state": "pending"}))) == ["b1", "late"]
        assert job_rows(text(client.get("/ui/jobs", params={"user": "ann"}))) == ["b1"]
        assert job_rows(text(client.get("/ui/jobs", params={"queue": "batch", "state": "running"}))) == []
        assert "no jobs match" in text(client.get("/ui/jobs", params={"user": "nobody"}))

        page = text(client.get("/ui/jobs/b1"))
        assert "Preempted" in page and "InCohortReclamation" in page
        assert '<a href="/ui/jobs/p1" class="preemptor">p1</a> (queue prod)' in page
        assert "preemptorPriority" in page and "victimPriority" in page
        assert "work lost: 6 s of holding its resources (6 cpu·s)" in page  # each task: 1 cpu from t=1 to its exit at t=7
        assert "Pending</b>: <code" in page and "quota" in page
        assert "not served by this server's local agent" in page  # no local agent here: say where logs are
        events = re.search(r'<table class="events">.*?</table>', page, re.S)[0]
        kinds = re.findall(r'<tr><td class="n">[^<]*</td><td>(\w+)</td>', events)
        assert kinds == ["submitted", "started", "started", "preempted", "preempted", "exited", "exited"]

        feed = text(client.get("/ui/preemptions"))
        assert re.search(r'<tr data-rule="kueue/InCohortReclamation"><td>kueue/InCohortReclamation</td>'
                         r'<td class="n">2</td>', feed)
        assert '<td class="n" data-cell="prod|batch">2</td>' in feed
        assert len(re.findall(r'<tr data-victim="b1" data-rule="InCohortReclamation">', feed)) == 2
        assert "preemptorClusterQueue=prod" in feed

        nodes = text(client.get("/ui/nodes"))
        assert re.search(r'<tr data-node="n1" class="ns-ready">', nodes)
        assert 'data-used="1" data-capacity="2"' in nodes

        assert client.get("/ui/jobs/nope").status_code == 404
        assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
        for path in ("/ui/static/htmx.min.js", "/ui/static/live.js", "/ui/static/ui.css"):
            assert client.get(path).status_code == 200, path


def test_htmx_requests_get_only_the_live_part(tmp_path):
    with service(tmp_path) as (client, loop, store, clock):
        run_preemption(client, loop, clock)
        for path in ("/ui/queues", "/ui/jobs?state=pending", "/ui/jobs/b1", "/ui/preemptions", "/ui/nodes"):
            part = client.get(path, headers={"HX-Request": "true"}).text
            assert part.lstrip().startswith('<div id="live"') and "<html" not in part, path
            assert f'hx-get="{path}"' in part  # it refreshes itself with the same filters


def test_event_stream_reports_each_committed_pass(tmp_path):
    with service(tmp_path) as (client, loop, store, clock):
        feed = client.app.state.feed

        def later():
            deadline = time.monotonic() + 10
            while not feed.subscribers and time.monotonic() < deadline:
                time.sleep(0.01)
            start_batch(client, loop, clock)

        t = threading.Thread(target=later)
        t.start()
        r = client.get("/v1/events", params={"limit": 2})
        t.join()
    assert r.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in r.text.split("\n\n") if f.strip()]
    assert frames[0].startswith("retry: 2000\nevent: hello")
    passes = [f for f in frames if "event: pass" in f]
    assert len(passes) == 2 and frames[-1].startswith("event: bye")
    first, second = passes
    assert re.search(r'^id: \d+$', first, re.M)
    assert '"nodes":["n1"]' in first  # the registration pass
    assert '"jobs":["b1"]' in second and '"starts":2' in second and '"queues":["batch"]' in second


# -- in a real browser ------------------------------------------------------------------------------

def _browser_or_skip() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("MAKEWAY_REQUIRE_BROWSER"):
            pytest.fail(f"MAKEWAY_REQUIRE_BROWSER is set but {CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium to run the browser test")
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")


def demo_job(jid: str, queue: str, seconds: float, tmp: Path, **kw) -> dict:
    import sys

    return {"id": jid, "queue": queue, "tasks": [{"count": kw.pop("count", 1), "resources": {"cpu": 1}}],
            "command": [sys.executable, "-m", "makeway.live.demo_task", "--seconds", str(seconds),
                        "--checkpoint", str(tmp / "ck")], **kw}


def test_browser_sees_a_preemption_live(tmp_path):
    """A real server and agent: batch fills the node, urgent work in prod makes Kueue reclaim; the open
    queues page changes without a reload, the feed and the victim's page tell the story."""
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    from tests.live.harness import LIVE, Served, dump, kill_leftovers, wait_for

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    s = Served(LIVE / "kueue" / "cluster.yaml", f"sqlite:///{tmp_path / 'ui.db'}", tmp_path, recovery_grace=0.5)
    try:
        s.start()
        s.ready()
        assert s.post("/v1/jobs", demo_job("batch-1", "batch", 60, tmp_path, count=2, grace=3)).status_code == 201
        wait_for(lambda: s.job("batch-1")["state"] == "running", 30, "batch-1 to run")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(s.url + "/")
                assert page.url.endswith("/ui/")
                batch_bar = '.bar[data-queue="batch"][data-resource="cpu"]'
                prod_bar = '.bar[data-queue="prod"][data-resource="cpu"]'
                page.wait_for_selector(batch_bar + '[data-usage="2"]', timeout=15000)
                assert page.get_attribute(prod_bar, "data-usage") == "0"
                assert page.get_attribute(prod_bar, "data-lent") == "1"
                page.wait_for_selector("#live-status.connected", timeout=15000)  # subscribed to /v1/events
                page.evaluate("window.__marker = 'no reload'")

                r = s.post("/v1/jobs", demo_job("urgent-1", "prod", 30, tmp_path, priority=10))
                assert r.status_code == 201
                # the bars move as passes commit: prod gets its guarantee back, batch stops borrowing
                page.wait_for_selector(prod_bar + '[data-usage="1"]', timeout=30000)
                assert page.get_attribute(batch_bar, "data-borrowed") == "0"
                assert page.evaluate("window.__marker") == "no reload"
                assert page.locator('#q-prod .running').inner_text() == "1"
                page.screenshot(path=str(ARTIFACTS / "queues.png"), full_page=True)

                page.click('nav a[href="/ui/preemptions"]')
                row = page.locator('tr[data-victim="batch-1"]').first
                assert row.locator("td.rule").inner_text() == "InCohortReclamation"
                assert "preemptorPriority=10" in row.locator("td.values").inner_text()
                assert "urgent-1" in row.inner_text()
                assert page.locator('td[data-cell="prod|batch"]').inner_text() == "2"
                page.screenshot(path=str(ARTIFACTS / "preemptions.png"), full_page=True)

                row.locator('a[href="/ui/jobs/batch-1"]').click()
                page.wait_for_url("**/ui/jobs/batch-1")
                why = page.locator(".why.preempted").first.inner_text()
                assert "Preempted" in why and "urgent-1" in why and "InCohortReclamation" in why
                assert "preemptorPriority" in why and "work lost:" in why
                # the victim's own last words, from the local agent's log (the page refreshes itself)
                page.wait_for_function("(document.querySelector('pre.log') || {}).textContent"
                                       "?.includes('checkpoint written')", timeout=20000)
                page.screenshot(path=str(ARTIFACTS / "job.png"), full_page=True)

                page.goto(s.url + "/ui/jobs?queue=batch")
                assert page.locator("tr[data-job]").count() == 1
                page.screenshot(path=str(ARTIFACTS / "jobs.png"), full_page=True)
                page.goto(s.url + "/ui/nodes")
                assert page.locator('tr[data-node="local"] td.state').inner_text() == "ready"
                page.screenshot(path=str(ARTIFACTS / "nodes.png"), full_page=True)
                page.goto(s.url + "/ui/queues")
                page.wait_for_selector("#live-status.connected", timeout=15000)
                # a stopping server ends the open event stream itself (a "bye", not a dropped connection)
                assert s.stop() == 0, s.log.read_text()[-3000:]
                page.wait_for_function("document.body.dataset.stream === 'closed'", timeout=10000)
            finally:
                browser.close()
    except AssertionError:
        raise AssertionError(dump(s)) from None
    finally:
        s.stop()
        kill_leftovers(str(tmp_path))


def test_browser_logs_in_with_a_token(tmp_path):
    """Once tokens exist a browser is sent to the login form; the token it types opens the pages and
    their live stream (the cookie rides on the EventSource too), and logging out closes them again."""
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    from makeway.live.auth import create_token
    from makeway.live.store import Store
    from tests.live.harness import LIVE, Served, dump, kill_leftovers

    db = f"sqlite:///{tmp_path / 'login.db'}"
    store = Store(db)
    token = create_token(store, "admin", None, "ops")[0]
    store.close()
    s = Served(LIVE / "kueue" / "cluster.yaml", db, tmp_path, recovery_grace=0.5, local_agent=False)
    try:
        s.start()
        s.ready()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(s.url + "/ui/nodes")
                assert "/ui/login?next=" in page.url
                page.fill('input[name="token"]', "mwt_wrong")
                page.click('form.login button')
                assert "token:" in page.locator(".error").inner_text()
                page.fill('input[name="token"]', token)
                page.click('form.login button')
                page.wait_for_url("**/ui/nodes")
                page.wait_for_selector("#live-status.connected", timeout=15000)
                page.screenshot(path=str(ARTIFACTS / "login-then-nodes.png"), full_page=True)
                page.click("form.logout button")
                page.wait_for_url("**/ui/login")
                page.goto(s.url + "/ui/queues")
                assert "/ui/login?next=" in page.url
            finally:
                browser.close()
    except AssertionError:
        raise AssertionError(dump(s)) from None
    finally:
        s.stop()
        kill_leftovers(str(tmp_path))
