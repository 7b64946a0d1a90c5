"""Pure read-side helpers over a results dict (schema ``makeway.results/1``).

Reports must render whatever a results file holds: older files lack the per-queue block and the time
series, so everything here derives what it can from the always-present ``workloads`` and ``events``
and prefers the simulator's own numbers when they exist.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

Results = dict[str, Any]

_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20))
_BYTE_LIKE = ("memory", "storage", "ephemeral-storage")


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile, the same definition the simulator uses (0 for no values)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def fmt_seconds(s: Any) -> str:
    if s is None:
        return "-"
    s = float(s)
    if abs(s) >= 86400:
        return f"{s:,.0f} s ({s / 86400:.1f} d)"
    if abs(s) >= 3600:
        return f"{s:,.0f} s ({s / 3600:.1f} h)"
    return f"{s:,.1f} s"


def fmt_time(t: Any) -> str:
    """A point on the simulated clock, short enough for a timeline column."""
    if t is None:
        return "-"
    t = float(t)
    return f"t={t:,.0f}s" if t.is_integer() else f"t={t:,.1f}s"


def fmt_amount(resource: str, v: Any) -> str:
    """A resource amount: binary suffixes for byte-like resources so memory stays readable."""
    if v is None:
        return "-"
    v = float(v)
    if resource in _BYTE_LIKE or abs(v) >= 2**40:
        for suffix, factor in _BINARY:
            if abs(v) >= factor:
                return f"{v / factor:.3g}{suffix}"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.4g}"


def fmt_vector(vec: Any, unit: str = "") -> str:
    if not vec:
        return "-"
    return ", ".join(f"{k} {fmt_amount(k, v)}{unit}" for k, v in sorted(vec.items()))


def fmt_value(v: Any) -> str:
    """Any JSON value from a Reason's ``values`` in one short line."""
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def summary(results: Results) -> dict[str, Any]:
    return results.get("summary") or {}


def workloads(results: Results) -> list[dict[str, Any]]:
    return list(results.get("workloads") or [])


def events(results: Results) -> list[dict[str, Any]]:
    return list(results.get("events") or [])


def events_of(results: Results, *kinds: str) -> list[dict[str, Any]]:
    return [e for e in events(results) if e.get("kind") in kinds]


def queue_names(results: Results) -> list[str]:
    """Every queue the results mention, in a stable order (the per-queue block's order first)."""
    names: list[str] = list((results.get("queues") or {}).keys())
    seen = set(names)
    extra = set()
    for w in workloads(results):
        if w.get("queue") is not None:
            extra.add(w["queue"])
    for e in events(results):
        if e.get("kind") in ("preempt", "evicted") and e.get("queue") is not None:
            extra.add(e["queue"])
    names.extend(sorted(q for q in extra if q not in seen))
    return names


def eviction_losses(results: Results) -> list[dict[str, Any]]:
    """Each eviction with the resources it held, joined to the preempt event of the same allocation.

    ``evicted`` events carry the lost seconds but not the resources, so the latest earlier
    ``preempt`` of the same allocation supplies them.
    """
    held: dict[str, dict[str, Any]] = {}
    out = []
    for e in events(results):
        kind = e.get("kind")
        if kind == "preempt":
            held[e.get("allocation")] = e
        elif kind == "evicted":
            p = held.pop(e.get("allocation"), None) or {}
            res = e.get("resources") or p.get("resources") or {}
            lost = float(e.get("lost_seconds") or 0.0)
            out.append({"time": e.get("time"), "allocation": e.get("allocation"), "workload": e.get("workload"),
                        "queue": e.get("queue") or p.get("queue"), "lost_seconds": lost, "resources": res,
                        "wasted": {k: v * lost for k, v in res.items()}, "preempt": p or None})
    return out


def _waits(rows: Iterable[dict[str, Any]]) -> list[float]:
    return sorted(float(w["wait"]) for w in rows if w.get("wait") is not None)


def waits_by_queue(results: Results) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for w in workloads(results):
        if w.get("wait") is not None:
            out.setdefault(w.get("queue") or "?", []).append(float(w["wait"]))
    return {q: sorted(v) for q, v in sorted(out.items())}


def all_waits(results: Results) -> list[float]:
    return _waits(workloads(results))


def queue_stats(results: Results) -> dict[str, dict[str, Any]]:
    """Per-queue figures: the simulator's ``queues`` block where present, derived values otherwise."""
    given = results.get("queues") or {}
    rows = workloads(results)
    wasted: dict[str, dict[str, float]] = {}
    for loss in eviction_losses(results):
        acc = wasted.setdefault(loss["queue"] or "?", {})
        for k, v in loss["wasted"].items():
            acc[k] = acc.get(k, 0.0) + v
    preempts: dict[str, int] = {}
    for e in events_of(results, "preempt"):
        preempts[e.get("queue") or "?"] = preempts.get(e.get("queue") or "?", 0) + 1
    by_queue: dict[str, list[dict[str, Any]]] = {}
    for w in rows:
        by_queue.setdefault(w.get("queue"), []).append(w)
    out: dict[str, dict[str, Any]] = {}
    for q in queue_names(results):
        mine = by_queue.get(q, [])
        waits = _waits(mine)
        derived = {
            "jobs": len(mine),
            "finished": sum(1 for w in mine if w.get("finish") is not None),
            "wait_mean_s": sum(waits) / len(waits) if waits else None,
            "wait_p50_s": percentile(waits, 50) if waits else None,
            "wait_p95_s": percentile(waits, 95) if waits else None,
            "wait_p99_s": percentile(waits, 99) if waits else None,
            "preemptions": preempts.get(q, 0),
            "victim_workloads": sum(1 for w in mine if w.get("preemptions")),
            "wasted_resource_seconds": dict(sorted(wasted.get(q, {}).items())),
            "guaranteed": None,
            "max": None,
        }
        g = given.get(q) or {}
        out[q] = {**derived, **{k: v for k, v in g.items() if v is not None or k in ("guaranteed", "max")}}
    return out


def timeseries(results: Results) -> dict[str, Any] | None:
    ts = results.get("timeseries")
    if not ts or not ts.get("t"):
        return None
    return ts


def decisions(results: Results, last: int | None = None) -> list[dict[str, Any]]:
    """The events that carry a decision or a reason (preempt, note, config), oldest first."""
    out = events_of(results, "preempt", "note", "config")
    return out[-last:] if last else out


def describe_decision(e: dict[str, Any]) -> tuple[str, str, str]:
    """(what, rule, why) of one decision event, for tables and the explain story."""
    kind = e.get("kind")
    if kind == "preempt":
        r = e.get("reason") or {}
        what = f"preempt {e.get('allocation')} ({e.get('workload')}, queue {e.get('queue')}, node {e.get('node')})"
        why = r.get("detail") or ""
        if r.get("preemptor"):
            why = f"for {r['preemptor']}" + (f": {why}" if why else "")
        vals = r.get("values") or {}
        if vals:
            why += (" " if why else "") + "[" + ", ".join(f"{k}={fmt_value(v)}" for k, v in vals.items()) + "]"
        return what, f"{r.get('model', '?')}/{r.get('rule', '?')}", why
    if kind == "note":
        vals = e.get("values") or {}
        why = e.get("message") or ""
        if vals:
            why += (" " if why else "") + "[" + ", ".join(f"{k}={fmt_value(v)}" for k, v in vals.items()) + "]"
        return f"note {e.get('note')} on {e.get('subject')}", str(e.get("note") or "note"), why
    if kind == "config":
        ch = e.get("changes") or {}
        return (f"config change of queue {e.get('queue')}", "config",
                ", ".join(f"{k} -> {fmt_value(v)}" for k, v in ch.items()))
    return str(kind), "", ""


def _pct(v: Any) -> str:
    return "-" if v is None else f"{float(v):.1%}"


def summary_rows(results: Results) -> list[tuple[str, str]]:
    """The headline metrics as (label, text); fields absent from the results are left out."""
    s = summary(results)
    cfg = results.get("config") or {}
    rows: list[tuple[str, str]] = [("model", str(cfg.get("model") or "-"))]
    if "jobs_submitted" in s:
        text = f"{s.get('jobs_finished', 0)} of {s['jobs_submitted']}"
        if s.get("jobs_unfinished"):
            text += f" ({s['jobs_unfinished']} unfinished)"
        rows.append(("jobs finished", text))
    if "makespan_s" in s:
        rows.append(("makespan", fmt_seconds(s["makespan_s"])))
    for key, label in (("wait_mean_s", "wait mean"), ("wait_p50_s", "wait p50"), ("wait_p95_s", "wait p95"),
                       ("wait_p99_s", "wait p99")):
        if key in s:
            rows.append((label, fmt_seconds(s[key])))
    if s.get("bounded_slowdown_mean") is not None:
        rows.append(("bounded slowdown (mean)", f"{float(s['bounded_slowdown_mean']):.3g}"))
    if s.get("jain_mean") is not None:
        rows.append(("Jain fairness (mean)", f"{float(s['jain_mean']):.3f}"))
    if "utilisation" in s:
        rows.append(("utilisation", ", ".join(f"{k} {_pct(v)}" for k, v in sorted(s["utilisation"].items()))
                     or "-"))
    if "preemptions" in s:
        n = s["preemptions"]
        rows.append(("preemptions", f"{n} allocations of {s.get('preempted_workloads', '?')} workloads" if n else "0"))
    if "finished_during_grace" in s:
        rows.append(("finished during grace", str(s["finished_during_grace"])))
    if "wasted_resource_seconds" in s:
        rows.append(("wasted work", fmt_vector(s["wasted_resource_seconds"], " x s")
                     if s["wasted_resource_seconds"] else "none"))
    if s.get("gpu_hours_wasted") is not None:
        rows.append(("GPU hours wasted", f"{float(s['gpu_hours_wasted']):,.2f}"))
    if s.get("killed_at_requested_time"):
        rows.append(("killed at requested time", str(s["killed_at_requested_time"])))
    return rows


def capacity(results: Results) -> dict[str, float]:
    """Cluster capacity per resource: the results' own ``capacity`` if present, else estimated from the
    time series (a tracked queue's usage over the utilisation fraction; exact when the root is tracked)."""
    given = results.get("capacity") or summary(results).get("capacity")
    if given:
        return {k: float(v) for k, v in given.items()}
    ts = timeseries(results)
    if not ts:
        return {}
    out: dict[str, float] = {}
    for res, util in (ts.get("utilisation") or {}).items():
        best = 0.0
        for q in (ts.get("queues") or {}).values():
            ys = ((q or {}).get("usage") or {}).get(res) or []
            for u, y in zip(util, ys):
                if u and u > 0 and y:
                    best = max(best, float(y) / float(u))
        if best > 0:
            out[res] = best
    return out


def workload_of(ident: Any, known: dict[str, Any]) -> str | None:
    """The workload a preemptor id names: a workload id itself, or a task id ``workload/group/index``."""
    if not ident:
        return None
    ident = str(ident)
    if ident in known:
        return ident
    head = ident.rsplit("/", 2)[0]
    return head if head in known else None


def preemption_matrix(results: Results) -> dict[tuple[str, str], int]:
    """(preemptor queue, victim queue) -> allocations preempted; ``(none)`` when a preemption names
    no preemptor (a model reclaiming for a queue, not for one workload)."""
    queue_of = {str(w.get("id")): w.get("queue") for w in workloads(results)}
    out: dict[tuple[str, str], int] = {}
    for e in events_of(results, "preempt"):
        p = workload_of((e.get("reason") or {}).get("preemptor"), queue_of)
        key = (str(queue_of.get(p) or "(none)") if p else "(none)", str(e.get("queue") or "?"))
        out[key] = out.get(key, 0) + 1
    return out


def with_limits(ts: dict[str, Any], stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The time series with each queue's ``limits`` steps; results recorded before the recorder kept
    them get one step of the final guarantee and max from the per-queue block."""
    queues = ts.get("queues") or {}
    if all("limits" in (q or {}) for q in queues.values()):
        return ts
    t0 = float((ts.get("t") or [0.0])[0])
    filled = {q: {**(qts or {}), "limits": (qts or {}).get("limits")
                  or [[t0, (stats.get(q) or {}).get("guaranteed") or {}, (stats.get(q) or {}).get("max") or {}]]}
              for q, qts in queues.items()}
    return {**ts, "queues": filled}


def run_end(results: Results) -> float:
    """The last instant the results know of (a finish, a submission or an event)."""
    end = 0.0
    for w in workloads(results):
        for k in ("finish", "first_start", "submit"):
            if w.get(k) is not None:
                end = max(end, float(w[k]))
    for e in events(results):
        if e.get("time") is not None:
            end = max(end, float(e["time"]))
    ts = timeseries(results)
    if ts:
        end = max(end, float(ts["t"][-1]))
    return end
