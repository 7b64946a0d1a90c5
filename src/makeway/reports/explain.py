"""The story of one workload, told from a results dict.

``makeway explain`` answers "why did my job wait / get killed?" without rerunning anything: every
preemption carries a Reason (model, rule, preemptor, values), so the story is a merge of the events
that name the workload, the notes about it, and the config changes to its queue while it waited.
A workload evicted and started again has its restarts in its row (``restarts``); files written before
that field existed still explain, without the restart lines.
"""

from __future__ import annotations

import difflib
from typing import Any

from makeway.errors import MakewayError
from makeway.reports import derive as d
from makeway.reports import waiting

MAX_REASON_LINES = 40


# What each ``pending_reason`` code (makeway.sim.pending) means, for a reader of one workload's story.
PENDING_REASONS = {
    "unplaceable": "a task asks for more than any node has, so it can never start",
    "queue-max": "what it still has to start exceeds its queue's (or an ancestor's) max on its own",
    "horizon": "the run was cut by --horizon",
    "no-progress": "the simulator stopped: the model could make no further progress",
    "waiting": "resources or quota were held by other work",
}


def pending_line(w: dict[str, Any]) -> str | None:
    """One line saying why an unfinished workload was still pending, when the results say."""
    code = w.get("pending_reason")
    if not code or w.get("finish") is not None:
        return None
    return f"  pending at the end: {code} ({PENDING_REASONS.get(code, 'no description')})"


def find_workload(results: dict[str, Any], workload_id: str) -> dict[str, Any]:
    """The workload row, or a MakewayError that names close matches and a few known ids."""
    rows = d.workloads(results)
    for w in rows:
        if w.get("id") == workload_id:
            return w
    ids = [str(w.get("id")) for w in rows]
    if not ids:
        raise MakewayError(f"unknown workload {workload_id!r}: the results list no workloads")
    close = difflib.get_close_matches(workload_id, ids, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    shown = ", ".join(ids[:8]) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")
    raise MakewayError(f"unknown workload {workload_id!r}{hint} (known ids: {shown})")


def _names(e: dict[str, Any], workload_id: str) -> bool:
    """True when a note is about the workload: its subject, or a value naming it."""
    if e.get("subject") == workload_id:
        return True
    vals = e.get("values") or {}
    for v in vals.values():
        if v == workload_id or (isinstance(v, (list, tuple)) and workload_id in v):
            return True
    subj = str(e.get("subject") or "")
    return subj.startswith(workload_id + "/")


def _is_or_task_of(ident: Any, workload_id: str) -> bool:
    """A preemptor names the workload itself (Kueue) or one of its tasks ``id/group/index`` (YuniKorn)."""
    return ident == workload_id or (isinstance(ident, str) and ident.rsplit("/", 2)[0] == workload_id
                                    and ident.count("/") >= 2)


def _values(vals: dict[str, Any]) -> str:
    return ", ".join(f"{k}={d.fmt_value(v)}" for k, v in vals.items())


def _lines_for_preempt(e: dict[str, Any]) -> list[str]:
    r = e.get("reason") or {}
    head = (f"preempted: allocation {e.get('allocation')} on node {e.get('node')} "
            f"(started {d.fmt_time(e.get('start'))}, holding {d.fmt_vector(e.get('resources'))})")
    out = [head,
           f"  by {r.get('preemptor') or 'an unnamed trigger'}, rule {r.get('model', '?')}/{r.get('rule', '?')}"]
    if r.get("detail"):
        out.append(f"  why: {r['detail']}")
    if r.get("values"):
        out.append(f"  values compared: {_values(r['values'])}")
    if e.get("grace"):
        out.append(f"  grace period {d.fmt_seconds(e['grace'])}")
    return out


def _freed_at(results: dict[str, Any], workload_id: str, t: float) -> list[str]:
    """Other workloads that finished exactly at ``t``: the usual reason a waiting workload could start then."""
    return sorted(str(x.get("id")) for x in d.workloads(results)
                  if x.get("finish") is not None and x.get("id") != workload_id and float(x["finish"]) == t)


def _some(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _lines_for_restarts(results: dict[str, Any], workload_id: str, t: float,
                        starts: list[dict[str, Any]], made_way_at: set[str]) -> list[str]:
    """Restarts at one instant: where each task went, how long it waited since its eviction, and why it
    could start then (capacity freed by a finish, or victims it preempted itself), as for a first start."""
    out = []
    for r in starts:
        ev = r.get("evicted_at")
        waited = (f" (waited {d.fmt_seconds(t - float(ev))} since its eviction at {d.fmt_time(ev)})"
                  if ev is not None else "")
        out.append(f"restarted: allocation {r.get('allocation')} on node {r.get('node')}{waited}")
    freed = _freed_at(results, workload_id, t)
    if freed:
        out.append(f"  it restarted when {_some(freed)} finished and freed capacity")
    if made_way_at:
        out.append(f"  it restarted after preempting {_some(sorted(made_way_at))}")
    return out


def explain(results: dict[str, Any], workload_id: str) -> str:
    """A plain-text timeline of one workload: submission, waits, preemptions (with who and why),
    work lost, config changes to its queue while it waited, and its finish."""
    w = find_workload(results, workload_id)
    queue = w.get("queue")
    submit, first, finish = w.get("submit"), w.get("first_start"), w.get("finish")
    losses = {(x["allocation"], x["time"]): x for x in d.eviction_losses(results)}
    end_of_wait = finish if finish is not None else float("inf")

    timeline: list[tuple[float, int, list[str]]] = []
    if submit is not None:
        timeline.append((float(submit), 0, [f"submitted to queue {queue} with priority {w.get('priority')}"]))
    if first is not None:
        timeline.append((float(first), 2, [f"first started (waited {d.fmt_seconds(w.get('wait'))})"]))
    restarts = w.get("restarts")
    by_time: dict[float, list[dict[str, Any]]] = {}
    for r in restarts or []:
        by_time.setdefault(float(r.get("time") or 0.0), []).append(r)
    restarted = {(r.get("allocation"), t) for t, rs in by_time.items() for r in rs}
    made_way: dict[str, list[dict[str, Any]]] = {}
    made_way_at: dict[float, set[str]] = {}
    lost_total: dict[str, float] = {}
    lost_seconds = 0.0
    logged_starts = False
    stopped: tuple[float, bool, Any] | None = None
    for e in d.events(results):
        t = float(e.get("time") or 0.0)
        kind = e.get("kind")
        if kind == "preempt" and e.get("workload") == workload_id:
            timeline.append((t, 1, _lines_for_preempt(e)))
        elif kind == "preempt" and _is_or_task_of((e.get("reason") or {}).get("preemptor"), workload_id):
            made_way.setdefault(e.get("workload") or "?", []).append(e)
            made_way_at.setdefault(t, set()).add(e.get("workload") or "?")
        elif kind == "evicted" and e.get("workload") == workload_id:
            loss = losses.get((e.get("allocation"), e.get("time")))
            wasted = loss["wasted"] if loss else {}
            lost_seconds += float(e.get("lost_seconds") or 0.0)
            for k, v in wasted.items():
                lost_total[k] = lost_total.get(k, 0.0) + v
            timeline.append((t, 1, [f"evicted: allocation {e.get('allocation')} lost "
                                    f"{d.fmt_seconds(e.get('lost_seconds'))} of work"
                                    + (f" ({d.fmt_vector(wasted, ' x s')})" if wasted else "")]))
        elif kind == "note" and _names(e, workload_id):
            msg = e.get("message") or ""
            line = f"note {e.get('note')}: {msg}" + (f" [{_values(e['values'])}]" if e.get("values") else "")
            timeline.append((t, 1, [line]))
        elif kind == "config" and e.get("queue") == queue and submit is not None and float(submit) <= t <= end_of_wait:
            ch = e.get("changes") or {}
            timeline.append((t, 1, [f"queue {queue} config changed: "
                                    + ", ".join(f"{k} -> {d.fmt_value(v)}" for k, v in ch.items())]))
        elif kind == "stopped" and finish is None:
            caught = workload_id in (e.get("workloads") or ())
            head = "simulation stopped: " if caught else "simulation stopped early (this workload not involved): "
            timeline.append((t, 4, [head + str(e.get("message") or e.get("reason"))]))
            stopped = (t, caught, e.get("reason"))
        elif kind in ("start", "finish") and e.get("workload") == workload_id \
                and (e.get("allocation"), t) not in restarted:
            logged_starts |= kind == "start"
            timeline.append((t, 1, [f"{kind} of allocation {e.get('allocation')}"
                                    + (f" on node {e['node']}" if e.get("node") else "")]))
    for t, rs in by_time.items():
        timeline.append((t, 2, _lines_for_restarts(results, workload_id, t, rs, made_way_at.get(t, set()))))
    reasons = waiting.trail(w)
    for t, code, blocking in reasons[:MAX_REASON_LINES]:
        timeline.append((t, 1, [f"waiting: {waiting.describe(code, blocking)}"]))
    if len(reasons) > MAX_REASON_LINES:
        timeline.append((reasons[MAX_REASON_LINES][0], 1,
                         [f"... {len(reasons) - MAX_REASON_LINES} more changes of reason"]))
    if finish is not None:
        timeline.append((float(finish), 3, ["finished"]))

    out = [f"workload {workload_id}: queue {queue}, priority {w.get('priority')}"]
    for t, _, lines in sorted(timeline, key=lambda x: (x[0], x[1])):
        out.append(f"  {d.fmt_time(t):>12}  {lines[0]}")
        out.extend(f"  {'':>12}  {line}" for line in lines[1:])

    out.append("summary:")
    if first is None:
        out.append("  never started" + (" (still pending when the simulation ended)" if finish is None else ""))
    elif w.get("wait"):
        out.append(f"  waited {d.fmt_seconds(w.get('wait'))} from submission to first start")
        freed = _freed_at(results, workload_id, float(first))
        if freed:
            out.append(f"  it started when {_some(freed)} finished and freed capacity")
    else:
        out.append("  started as soon as it was submitted")
    out.extend(_why_lines(results, w, made_way))
    mine = [e for e in d.events_of(results, "preempt") if e.get("workload") == workload_id]
    n = max(int(w.get("preemptions") or 0), len(mine))
    if n:
        by = sorted({(e.get("reason") or {}).get("preemptor") or "?" for e in mine}) or ["(not in the event log)"]
        out.append(f"  preempted {n} time(s) by {', '.join(by)}")
    if by_time:
        waits = [t - float(r["evicted_at"]) for t, rs in by_time.items() for r in rs
                 if r.get("evicted_at") is not None]
        n_starts = sum(len(rs) for rs in by_time.values())
        out.append(f"  restarted {n_starts} time(s) after eviction, last at {d.fmt_time(max(by_time))}"
                   + (f"; waited {d.fmt_seconds(sum(waits))} in all between eviction and restart" if waits else ""))
    elif restarts is None and lost_seconds and not logged_starts:
        out.append("  restart times are not in these results (written before workloads carried `restarts`)")
    if lost_seconds:
        out.append(f"  work lost: {d.fmt_seconds(lost_seconds)} of allocation time"
                   + (f" = {d.fmt_vector(lost_total, ' x s')}" if lost_total else ""))
    for victim, evs in sorted(made_way.items()):
        rules = sorted({f"{(e.get('reason') or {}).get('model', '?')}/{(e.get('reason') or {}).get('rule', '?')}"
                        for e in evs})
        out.append(f"  made way by preempting {len(evs)} allocation(s) of {victim} ({', '.join(rules)})")
    if finish is not None:
        ran = float(finish) - float(first) if first is not None else None
        since_restart = (f", {d.fmt_seconds(float(finish) - max(by_time))} after its last restart"
                         if by_time and ran is not None else "")
        out.append(f"  finished at {d.fmt_time(finish)}" + (f", {d.fmt_seconds(ran)} after first start"
                                                           if ran is not None else "") + since_restart)
    elif first is not None:
        out.append("  did not finish before the simulation ended")
    if stopped is not None:
        t, caught, code = stopped
        out.append(f"  the simulator stopped the run at {d.fmt_time(t)} ({code})"
                   + ("; this workload was caught in the cycle it detected" if caught else ""))
    reason = pending_line(w)
    if reason:
        out.append(reason)
    return "\n".join(out) + "\n"


def _why_lines(results: dict[str, Any], w: dict[str, Any], made_way: dict[str, list[dict[str, Any]]]) -> list[str]:
    """What blocked it (time under each recorded reason), who overtook it, and for a YuniKorn
    preemptor, that its wait was the preemption delay and then its victims' leaving."""
    out = []
    spent = waiting.time_by_reason(results, w)
    spent = [x for x in spent if x[2] > 0]
    if spent and any(code != "unrecorded" for code, _, _ in spent):
        parts = [f"{code}" + (f" at queue {blocking}" if blocking else "") + f" {d.fmt_seconds(secs)}"
                 for code, blocking, secs in spent]
        out.append("  what blocked it (time under each reason recorded while it waited): " + "; ".join(parts))
        top = next((c for c, _, _ in spent if c != "unrecorded"), None)
        if top:
            out.append(f"  mostly: {waiting.describe(top)}")
    elif w.get("wait"):
        out.append("  no reasons recorded (results written before reasons were kept, or it waited between "
                   "two looks of the simulator)")
    everyone, mine = waiting.overtaken_by(results, w)
    if w.get("wait") or w.get("first_start") is None:
        out.append(f"  overtaken by {len(everyone)} later-submitted workload(s) that started before it"
                   f" ({len(mine)} of its own queue {w.get('queue')})"
                   + (f": {_some(everyone)}" if everyone else ""))
    model = (results.get("config") or {}).get("model")
    if made_way and model == "yunikorn" and w.get("submit") is not None:
        evs = [e for es in made_way.values() for e in es]
        first = min(float(e.get("time") or 0.0) for e in evs)
        victims = {e.get("allocation") for e in evs}
        left = [float(e.get("time") or 0.0) for e in d.events_of(results, "evicted") if e.get("allocation") in victims]
        out.append(f"  a preemptor: it preempted {len(victims)} allocation(s) of {_some(sorted(made_way))}; the first "
                   f"preemption for it came {d.fmt_seconds(first - float(w['submit']))} after its submission: "
                   "YuniKorn holds preemption back for the queue's preemption.delay (30 s by default) after "
                   "an ask is created, so that much of its wait was the preemption delay")
        if left and w.get("first_start") is not None:
            out.append(f"  its victims had left by {d.fmt_time(max(left))} "
                       f"({d.fmt_seconds(max(left) - first)} of grace after the preemption); "
                       f"it started at {d.fmt_time(w['first_start'])}")
    return out
