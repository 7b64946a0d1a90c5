"""The read side of the service: jobs, their stories, queues, nodes and the preemption feed, as plain
data taken from the scheduler loop's core under its lock.

The JSON API and the web UI both call these, so a page never shows a figure the API would not give.
``accepted`` is the API's map of jobs journaled but not yet applied by a pass (id -> spec): they are
shown as pending with reason ``accepted`` until the core knows them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Optional

from makeway.core.pending import explain_pending
from makeway.live.core import TERMINAL


class NotFound(LookupError):
    """No such job, queue, attempt or log; ``field`` names what was looked up."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def all_pending(core: Any) -> dict[str, Any]:
    """Every pending workload's reason code and queue position, as the model sees them now."""
    return explain_pending(core.state, core.model, core.now)


def job_node(attempts: list[dict[str, Any]]) -> Optional[str]:
    live = sorted({a["node"] for a in attempts if a["state"] != "exited"})
    return ",".join(live) or None


def pending_info(core: Any, jid: str) -> dict[str, Any]:
    info = all_pending(core).get(jid)
    if info is None:
        return {"code": "waiting", "message": "waiting", "position": None}
    return {"code": info.code, "message": info.message, "position": info.position, "queue": info.queue,
            "blocking": info.blocking, "values": info.values}


Visible = Optional[Callable[[str, Optional[str]], bool]]
"""Whether a job of (queue, user) is shown to whoever asks: the API's tenancy rule; None shows all."""


def _shown(visible: Visible, queue: str, user: Optional[str]) -> bool:
    return visible is None or visible(queue, user)


def job_view(loop: Any, jid: str, accepted: dict[str, dict[str, Any]],
             tenant_of: Optional[Callable[[str], str]] = None) -> dict[str, Any]:
    with loop.lock:
        job = loop.core.jobs.get(jid)
        if job is not None:
            accepted.pop(jid, None)
            v = job.view()
            v["attempts"] = [loop.core.attempts[a].view() for a in job.attempts]
            v["node"] = job_node(v["attempts"])
            if job.state not in TERMINAL and jid in loop.core.state.pending:
                v["pending"] = pending_info(loop.core, jid)
            return v
    spec = accepted.get(jid)
    if spec is None:
        raise NotFound("job", f"job: no job {jid!r}")
    tenant = tenant_of(spec["queue"]) if tenant_of is not None else "default"
    return {"id": jid, "queue": spec["queue"], "tenant": tenant, "state": "pending", "submitted": None,
            "ended": None, "message": "accepted; not yet seen by the scheduler", "spec": spec, "reason": None,
            "attempts": [], "node": None, "pending": {"code": "accepted", "message": "accepted", "position": None}}


def list_jobs(loop: Any, accepted: dict[str, dict[str, Any]], state: Optional[str] = None,
              queue: Optional[str] = None, limit: int = 1000, user: Optional[str] = None,
              visible: Visible = None, tenant_of: Optional[Callable[[str], str]] = None) -> dict[str, Any]:
    out = []
    with loop.lock:
        core = loop.core
        reasons = None
        for job in core.jobs.values():
            if (state and job.state != state) or (queue and job.queue != queue) \
                    or (user and job.spec.get("user") != user) or not _shown(visible, job.queue, job.spec.get("user")):
                continue
            v = {"id": job.id, "queue": job.queue, "state": job.state, "submitted": job.submitted,
                 "ended": job.ended, "priority": job.spec.get("priority", 0), "tenant": job.tenant,
                 "user": job.spec.get("user")}
            atts = [core.attempts[a] for a in job.live]
            v["node"] = ",".join(sorted({a.node for a in atts})) or None
            code = position = None
            if job.state not in TERMINAL and job.id in core.state.pending:
                if reasons is None:
                    reasons = all_pending(core)
                r = reasons.get(job.id)
                code = r.code if r is not None else "waiting"
                position = r.position if r is not None else None
            elif job.preemptions and job.state in ("pending", "preempting"):
                code = "preempted"
            v["reason_code"] = code
            v["position"] = position
            v["reason"] = job.preemptions[-1] if job.preemptions else None
            out.append(v)
            if len(out) >= limit:
                break
        for jid, spec in list(accepted.items()):
            if jid in core.jobs:
                accepted.pop(jid, None)
            elif (not state or state == "pending") and (not queue or spec["queue"] == queue) \
                    and (not user or spec.get("user") == user) and _shown(visible, spec["queue"], spec.get("user")):
                out.append({"id": jid, "queue": spec["queue"], "state": "pending", "submitted": None,
                            "ended": None, "priority": spec.get("priority", 0), "user": spec.get("user"),
                            "tenant": tenant_of(spec["queue"]) if tenant_of is not None else "default",
                            "node": None, "reason_code": "accepted", "position": None, "reason": None})
    return {"jobs": out, "now": loop.service_now()}


def explain(loop: Any, jid: str, accepted: dict[str, dict[str, Any]]) -> dict[str, Any]:
    v = job_view(loop, jid, accepted)
    story = []
    with loop.lock:
        for a in v["attempts"]:
            story.append(f"attempt {a['attempt_no']} of {a['task']} on {a['node']}: {a['state']}"
                         + (f", exit {a['exit_code']}" if a["exit_code"] is not None else "")
                         + (f", signal {a['signal']}" if a["signal"] is not None else ""))
        job = loop.core.jobs.get(jid)
        preemptions = list(job.preemptions) if job else []
        for c in (job.changes if job else []):
            story.append(f"t={c['time']:.3f} priority {c['from']} -> {c['to']} by {c['by']}"
                         + ("" if c["applied"] else f": not applied, {c['why']}"))
    for p in preemptions:
        story.append(f"t={p['time']:.3f} task {p['task']} preempted on {p['node']} by {p.get('preemptor')} "
                     f"({p['model']} rule {p['rule']}): {p.get('detail', '')}")
    return {"id": jid, "state": v["state"], "queue": v["queue"], "pending": v.get("pending"),
            "reason": v["reason"], "preemptions": preemptions, "attempts": v["attempts"],
            "message": v.get("message", ""), "story": story}


def job_events(loop: Any, jid: str, accepted: dict[str, dict[str, Any]]) -> dict[str, Any]:
    v = job_view(loop, jid, accepted)
    events: list[dict[str, Any]] = [{"time": v["submitted"], "event": "submitted"}]
    for a in v["attempts"]:
        events.append({"time": a["started"], "event": "started", "attempt": a["attempt"], "node": a["node"]})
        if a["ended"] is not None:
            events.append({"time": a["ended"], "event": "exited", "attempt": a["attempt"],
                           "exit_code": a["exit_code"], "signal": a["signal"]})
    with loop.lock:
        job = loop.core.jobs.get(jid)
        for p in (job.preemptions if job else []):
            events.append({"time": p["time"], "event": "preempted", "attempt": p["attempt"], "reason": p})
        for c in (job.changes if job else []):
            events.append({"time": c["time"], "event": "reprioritised" if c["applied"] else "reprioritise-refused",
                           **{k: c[k] for k in ("from", "to", "by", "why") if k in c}})
    if v["ended"] is not None:
        events.append({"time": v["ended"], "event": v["state"]})
    events.sort(key=lambda e: (e["time"] is None, e["time"] or 0.0))
    return {"id": jid, "events": events}


def job_log(loop: Any, jid: str, accepted: dict[str, dict[str, Any]], log_dirs: Optional[dict[str, Path]],
            task: Optional[str] = None, attempt: Optional[int] = None, stream: str = "stdout") -> str:
    """The text of one attempt's stdout or stderr (the latest attempt matching ``task``/``attempt``),
    readable only for nodes served by this server's local agent."""
    v = job_view(loop, jid, accepted)
    atts = [a for a in v["attempts"] if (task is None or a["task"] == task)
            and (attempt is None or a["attempt_no"] == attempt)]
    if not atts:
        raise NotFound("attempt", f"attempt: job {jid!r} has no such attempt")
    a = atts[-1]
    base = (log_dirs or {}).get(a["node"])
    if base is None:
        raise NotFound("logs", f"logs: node {a['node']} is not served by this server's local agent; "
                               f"read them on the node")
    path = base / "attempts" / a["attempt"].replace("/", "_").replace("#", "_") / f"{stream}.log"
    try:
        return path.read_text(errors="replace")
    except OSError:
        raise NotFound("logs", f"logs: no {stream} for attempt {a['attempt']} yet") from None


def queues(loop: Any, model: str) -> dict[str, Any]:
    with loop.lock:
        core = loop.core
        st = core.state
        pending_count: dict[str, int] = {}
        for wid in st.pending:
            pending_count[st.workloads[wid].queue] = pending_count.get(st.workloads[wid].queue, 0) + 1
        shares = core.model.queue_shares(st, core.now)
        out = []
        for name, q in st.queues.items():
            out.append({"name": name, "parent": q.parent, "guaranteed": q.guaranteed, "max": q.max,
                        "weight": q.weight, "usage": dict(st.queue_usage[name]), "share": shares.get(name),
                        "pending": sum(pending_count.get(d, 0) for d in st.descendants(name)),
                        "running": len(st.queue_allocs[name]), "children": list(q.children)})
    return {"queues": out, "model": model}


def queue_board(loop: Any, model: str) -> dict[str, Any]:
    """The queue tree for a person to read at a glance: ``queues`` in tree order with each queue's
    depth, borrowed and lent amounts, and one scale per resource shared by every queue's bars
    (the largest of the registered capacity and every guaranteed, max and usage figure).

    Borrowed is usage above the queue's own guarantee (a root borrows from no one). Lent is the
    part of a queue's idle guarantee that its siblings' borrowing takes: the siblings' borrowing is
    shared out over their idle guarantees in proportion, never more than each one's idle part."""
    data = queues(loop, model)
    with loop.lock:
        core = loop.core
        resources = list(core.cfg.resources)
        capacity: dict[str, float] = {}
        for name, reg in core.registered.items():
            if reg:
                for r, v in core.state.nodes[name].capacity.items():
                    capacity[r] = capacity.get(r, 0) + v
    rows = data["queues"]
    by_name = {q["name"]: q for q in rows}
    for q in rows:
        g, u = q["guaranteed"] or {}, q["usage"]
        q["borrowed"] = {r: max(0, u.get(r, 0) - g.get(r, 0)) if q["parent"] else 0 for r in resources}
        q["idle"] = {r: max(0, g.get(r, 0) - u.get(r, 0)) for r in resources}
        q["lent"] = dict.fromkeys(resources, 0)
    for parent in {q["parent"] for q in rows if q["parent"]}:
        sib = [q for q in rows if q["parent"] == parent]
        for r in resources:
            took = sum(q["borrowed"][r] for q in sib)
            idle = sum(q["idle"][r] for q in sib)
            if took and idle:
                for q in sib:
                    q["lent"][r] = q["idle"][r] * min(1.0, took / idle)
    ordered: list[dict[str, Any]] = []

    def walk(name: str, depth: int) -> None:
        q = by_name[name]
        q["depth"] = depth
        ordered.append(q)
        for child in q["children"]:
            if child in by_name:
                walk(child, depth + 1)

    for q in rows:
        if q["parent"] is None or q["parent"] not in by_name:
            walk(q["name"], 0)
    scale = {}
    for r in resources:
        figures = [capacity.get(r, 0)]
        for q in rows:
            figures += [(q[k] or {}).get(r, 0) for k in ("guaranteed", "max", "usage")]
        scale[r] = max(f for f in figures if math.isfinite(f)) or 1
    return {"queues": ordered, "model": model, "resources": resources, "scale": scale, "capacity": capacity}


def queue_pending(loop: Any, name: str, visible: Visible = None) -> dict[str, Any]:
    with loop.lock:
        core = loop.core
        if name not in core.state.queues:
            raise NotFound("queue", f"queue: no queue {name!r}")
        reasons = all_pending(core)
        leaves = set(core.state.descendants(name))
        rows = [{"job": wid, "queue": r.queue, "position": r.position, "code": r.code, "message": r.message}
                for wid, r in reasons.items() if r.queue in leaves
                and _shown(visible, r.queue, core.state.workloads[wid].user)]
    rows.sort(key=lambda r: (r["queue"], r["position"] or 0, r["job"]))
    return {"queue": name, "pending": rows}


def node_state(core: Any, name: str) -> str:
    """ready, suspect (its agent went quiet), cordoned, lost (past its lease, or gone), or
    unregistered (a configured node no agent has offered yet)."""
    if not core.registered.get(name, False):
        return "lost" if core.node_version.get(name, 0) else "unregistered"
    if name in core.cordoned:
        return "cordoned"
    if name in core.silent:
        return "suspect"
    return "ready"


def nodes(loop: Any) -> dict[str, Any]:
    """Each node as the core sees it, with its state and the seconds since its agent last spoke
    (on this server's clock; None before it ever did)."""
    wall = loop.clock()
    with loop.lock:
        out = []
        for n in loop.core.state.nodes:
            v = loop.core.node_view(n)
            v["state"] = node_state(loop.core, n)
            seen = loop.last_seen.get(n)
            v["heartbeat_age"] = None if seen is None else max(0.0, wall - seen)
            out.append(v)
        return {"nodes": out}


def preemptor_job(core: Any, who: Optional[str]) -> Optional[str]:
    """The job a preemptor names: a job id, or one of its task ids."""
    if not who:
        return None
    if who in core.jobs:
        return who
    head = who.split("/", 1)[0]
    return head if head in core.jobs else None


def work_lost(core: Any, attempt_id: str, now: float) -> tuple[float, dict[str, float]]:
    """Seconds an attempt held its resources before it was stopped, and those seconds times each
    resource (the simulator's wasted work: from assignment to the end, or to ``now`` while it stops)."""
    a = core.attempts.get(attempt_id)
    if a is None:
        return 0.0, {}
    end = a.ended if a.ended is not None else now
    secs = max(0.0, end - a.assigned)
    res = core.state.task_resources(a.task) if a.job in core.state.workloads else {}
    return secs, {k: v * secs for k, v in res.items()}


def preemptions(loop: Any, limit: int = 100, visible: Visible = None) -> dict[str, Any]:
    out = []
    with loop.lock:
        core = loop.core
        for job in core.jobs.values():
            if not _shown(visible, job.queue, job.spec.get("user")):
                continue
            for p in job.preemptions:
                pj = preemptor_job(core, p.get("preemptor"))
                out.append({"victim": job.id, **p, "queue": job.queue, "preemptor_job": pj,
                            "preemptor_queue": core.jobs[pj].queue if pj else None})
    out.sort(key=lambda p: (p["time"], p["task"]))
    return {"preemptions": out[-limit:]}


__all__ = ["NotFound", "all_pending", "explain", "job_events", "job_log", "job_node", "job_view", "list_jobs",
           "node_state", "nodes", "pending_info", "preemptions", "preemptor_job", "queue_board", "queue_pending",
           "queues", "work_lost"]
