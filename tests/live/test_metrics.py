"""``/metrics`` parses with prometheus-client's own text parser, and after a scenario with a
preemption its figures are the JSON API's: jobs by state and queue, queue usage/guaranteed/max,
preemptions by model/rule/queue, pending demand, nodes by state, wasted work, pass and commit counts."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from tests.live.scenario import run_preemption, service


def scrape(client) -> dict[str, dict[tuple, float]]:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def series(m: dict, name: str, *keys: str) -> dict[tuple, float]:
    """``name``'s samples keyed by the values of ``keys`` (zero-valued ones dropped)."""
    return {tuple(dict(k)[x] for x in keys): v for k, v in m.get(name, {}).items() if v}


def test_metrics_match_the_api_after_a_preemption(tmp_path):
    with service(tmp_path) as (client, loop, store, clock):
        run_preemption(client, loop, clock)
        clock.at(9.5)  # the agent last spoke at t=7
        m = scrape(client)
        jobs = client.get("/v1/jobs").json()["jobs"]
        queues = client.get("/v1/queues").json()["queues"]
        feed = client.get("/v1/preemptions", params={"limit": 10000}).json()["preemptions"]
        nodes = client.get("/v1/nodes").json()["nodes"]
        stats = client.get("/v1/stats").json()

    assert series(m, "makeway_jobs", "state", "queue") == Counter((j["state"], j["queue"]) for j in jobs)
    assert ("pending", "batch") in series(m, "makeway_jobs", "state", "queue")  # b1 requeued, late accepted
    for key, field in (("makeway_queue_usage", "usage"), ("makeway_queue_guaranteed", "guaranteed"),
                       ("makeway_queue_max", "max")):
        want = {(q["name"], r): v for q in queues for r, v in (q[field] or {}).items() if v}
        assert series(m, key, "queue", "resource") == want, key
    assert series(m, "makeway_queue_running_tasks", "queue") == {(q["name"],): q["running"] for q in queues
                                                                 if q["running"]}

    assert len(feed) == 2
    by_rule = Counter((p["model"], p["rule"], p["queue"]) for p in feed)
    assert series(m, "makeway_preemptions_total", "model", "rule", "queue") == by_rule
    assert by_rule == {("kueue", "InCohortReclamation", "batch"): 2}
    # both b1 tasks held 1 cpu from t=1 to their confirmed exit at t=7
    assert series(m, "makeway_wasted_resource_seconds_total", "queue", "resource") == {("batch", "cpu"): 12.0}
    # b1 (2 tasks) waits again; `late` is only journaled, not yet in the scheduler's state
    assert series(m, "makeway_pending_demand", "queue", "resource") == {("batch", "cpu"): 2.0}

    assert series(m, "makeway_nodes", "state") == Counter((n["state"],) for n in nodes) == {("ready",): 1}
    assert series(m, "makeway_node_heartbeat_age_seconds", "node") == {("n1",): 2.5} \
        == {(n["name"],): n["heartbeat_age"] for n in nodes}
    assert m["makeway_leader"][()] == 1.0
    assert m["makeway_passes_total"][()] == stats["passes"]
    assert m["makeway_applied_seq"][()] == stats["applied_seq"]
    assert m["makeway_pass_duration_seconds_count"][()] == stats["passes"] == stats["pass_ms"]["n"]
    # every input in this sequential run went through the group committer alone: one batch each
    assert m["makeway_commit_latency_seconds_count"][()] == store.max_seq()


def test_each_app_has_its_own_registry(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with service(tmp_path / "a") as (ca, la, _, clock_a), service(tmp_path / "b") as (cb, lb, _, _):
        run_preemption(ca, la, clock_a)
        a, b = scrape(ca), scrape(cb)
    assert a["makeway_passes_total"][()] >= 4 and b["makeway_passes_total"][()] == 0
    assert a["makeway_pass_duration_seconds_count"][()] >= 4 and b["makeway_pass_duration_seconds_count"][()] == 0
    assert series(b, "makeway_jobs", "state", "queue") == {}
