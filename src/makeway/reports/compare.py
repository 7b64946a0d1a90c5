"""Side-by-side comparison of several runs (same trace under different models or settings).

``compare_rows`` gives plain (metric, [value per run]) rows so the CLI can print a rich table;
``render_compare`` gives one self-contained HTML page with the same table and overlaid figures.
A metric missing from a run shows as ``-`` rather than hiding the row, so gaps stay visible.
"""

from __future__ import annotations

from typing import Any, Callable

from makeway.errors import MakewayError
from makeway.reports import derive as d

Getter = Callable[[dict[str, Any]], str]


def _s(key: str, fmt: Callable[[Any], str]) -> Getter:
    def get(r: dict[str, Any]) -> str:
        v = d.summary(r).get(key)
        return "-" if v is None else fmt(v)
    return get


def _pct(v: Any) -> str:
    return f"{float(v):.1%}"


def _jobs(r: dict[str, Any]) -> str:
    s = d.summary(r)
    if "jobs_submitted" not in s:
        return "-"
    return f"{s.get('jobs_finished', 0)} of {s['jobs_submitted']}"


def _never_started(r: dict[str, Any]) -> str:
    rows = d.workloads(r)
    return str(sum(1 for w in rows if w.get("first_start") is None)) if rows else "-"


BASE_ROWS: list[tuple[str, Getter]] = [
    ("model", lambda r: str((r.get("config") or {}).get("model") or "-")),
    ("jobs finished", _jobs),
    # waits below count started work only: a run that strands work must not look fast
    ("never started", _never_started),
    ("makespan", _s("makespan_s", d.fmt_seconds)),
    ("wait mean", _s("wait_mean_s", d.fmt_seconds)),
    ("wait p50", _s("wait_p50_s", d.fmt_seconds)),
    ("wait p95", _s("wait_p95_s", d.fmt_seconds)),
    ("wait p99", _s("wait_p99_s", d.fmt_seconds)),
    ("bounded slowdown (mean)", _s("bounded_slowdown_mean", lambda v: f"{float(v):.3g}")),
    ("Jain fairness (mean)", _s("jain_mean", lambda v: f"{float(v):.3f}")),
    ("preemptions", _s("preemptions", str)),
    ("preempted workloads", _s("preempted_workloads", str)),
    ("finished during grace", _s("finished_during_grace", str)),
    ("GPU hours wasted", _s("gpu_hours_wasted", lambda v: f"{float(v):,.2f}")),
    ("killed at requested time", _s("killed_at_requested_time", str)),
]


# Rows that get a delta row under them: (row name, how to read the number, how to show the difference).
def _seconds_delta(v: float) -> str:
    return ("+" if v > 0 else "-" if v < 0 else "") + d.fmt_seconds(abs(v))


def _count_delta(v: float) -> str:
    return f"{v:+,.0f}" if v else "0"


def _summary_number(key: str) -> Callable[[dict[str, Any]], float | None]:
    def get(r: dict[str, Any]) -> float | None:
        v = d.summary(r).get(key)
        return None if v is None else float(v)
    return get


def _never_started_n(r: dict[str, Any]) -> float | None:
    rows = d.workloads(r)
    return float(sum(1 for w in rows if w.get("first_start") is None)) if rows else None


DELTAS: dict[str, tuple[Callable[[dict[str, Any]], float | None], Callable[[float], str]]] = {
    "never started": (_never_started_n, _count_delta),
    "wait mean": (_summary_number("wait_mean_s"), _seconds_delta),
    "wait p95": (_summary_number("wait_p95_s"), _seconds_delta),
    "preemptions": (_summary_number("preemptions"), _count_delta),
    "preempted workloads": (_summary_number("preempted_workloads"), _count_delta),
    "GPU hours wasted": (_summary_number("gpu_hours_wasted"), lambda v: f"{v:+,.2f}"),
}


def _delta_row(name: str, results: list[dict[str, Any]], labels: list[str]) -> tuple[str, list[str]] | None:
    """``name`` against the first run, for every other run (absolute values stay in their own row)."""
    get, fmt = DELTAS[name]
    values = [get(r) for r in results]
    base = values[0]
    if base is None or len(results) < 2:
        return None
    return (f"  {name} vs {labels[0]}", ["-"] + [fmt(v - base) if v is not None else "-" for v in values[1:]])


def _check(results: list[dict[str, Any]], labels: list[str]) -> None:
    if not results:
        raise MakewayError("compare: no results given")
    if len(labels) != len(results):
        raise MakewayError(f"compare: {len(results)} results but {len(labels)} labels")


def compare_rows(results: list[dict[str, Any]], labels: list[str]) -> list[tuple[str, list[str]]]:
    """(metric, one formatted value per run) rows, in a fixed order; per-resource and per-queue rows
    cover the union of resources and queues over all runs."""
    _check(results, labels)
    rows: list[tuple[str, list[str]]] = [("run", list(labels))]
    for name, get in BASE_ROWS:
        rows.append((name, [get(r) for r in results]))
        delta = _delta_row(name, results, labels) if name in DELTAS else None
        if delta is not None:
            rows.append(delta)
    utils = [d.summary(r).get("utilisation") or {} for r in results]
    for res in sorted({k for u in utils for k in u}):
        rows.append((f"utilisation {res}", [_pct(u[res]) if res in u else "-" for u in utils]))
    wasted = [d.summary(r).get("wasted_resource_seconds") for r in results]
    for res in sorted({k for w in wasted for k in (w or {})}):
        rows.append((f"wasted {res} x s", [d.fmt_amount(res, (w or {}).get(res, 0)) if w is not None else "-"
                                            for w in wasted]))
    stats = [d.queue_stats(r) for r in results]
    queues = sorted({q for s in stats for q in s})
    for q in queues:
        rows.append((f"queue {q} wait p95", [d.fmt_seconds(s[q].get("wait_p95_s")) if q in s else "-"
                                             for s in stats]))
    for q in queues:
        counts = [s[q].get("preemptions") if q in s else None for s in stats]
        rows.append((f"queue {q} preemptions (victim)", ["-" if c is None else str(c) for c in counts]))
        if len(results) > 1 and counts[0] is not None:
            rows.append((f"  queue {q} preemptions vs {labels[0]}",
                         ["-"] + ["-" if c is None else _count_delta(float(c) - float(counts[0])) for c in counts[1:]]))
    matrix = [d.preemption_matrix(r) for r in results]
    for key in sorted({k for m in matrix for k in m}):
        rows.append((f"preemptions {key[0]} -> {key[1]}", [str(m.get(key, 0)) for m in matrix]))
    # Drop rows that no run has, so old results files do not fill the table with dashes.
    return [(name, vals) for name, vals in rows if any(v != "-" for v in vals)]


def render_compare(results: list[dict[str, Any]], labels: list[str]) -> str:
    """One HTML page: the comparison table (a column per run) and overlaid wait CDFs and utilisation."""
    from makeway.reports import html as h  # matplotlib only when a page is drawn
    from makeway.reports import plots

    _check(results, labels)
    title = "makeway comparison: " + " vs ".join(labels)
    rows = compare_rows(results, labels)
    header, body_rows = rows[0], rows[1:]
    body = [f"<h1>{h.escape(title)}</h1>",
            '<p class="meta">' + " &middot; ".join(
                h.escape(f"{lab}: {(r.get('config') or {}).get('path') or '-'}") for lab, r in zip(labels, results))
            + "</p>",
            "<h2>Metrics</h2>",
            h.table(["metric"] + header[1], [[name] + vals for name, vals in body_rows],
                    numeric=tuple(range(1, len(labels) + 1)))]
    waits = {lab: d.all_waits(r) for lab, r in zip(labels, results)}
    body += ["<h2>Wait time</h2>", h.figure(plots.wait_cdf(waits, "Wait time CDF per run", "cmp-wait"))]
    runs = [(lab, d.timeseries(r), d.summary(r).get("utilisation") or {}) for lab, r in zip(labels, results)]
    body += ["<h2>Utilisation</h2>", h.figure(plots.overlay_utilisation(runs))]
    preempts = {lab: [float(e.get("time") or 0) for e in d.events_of(r, "preempt")] for lab, r in zip(labels, results)}
    if any(preempts.values()):
        body += ["<h2>Preemptions over time</h2>",
                 h.figure(plots.wait_cdf(preempts, "Cumulative preemptions over time", "cmp-preempt",
                                         xlabel="time (s)", ylabel="fraction of the run's preemptions",
                                         log=False))]
    return h.page(title, body)


def preemption_digest(results: dict[str, Any], limit: int = 6) -> list[str]:
    """Who made way for whom in one run, one line per (instant, rule, preemptor, victim workload):
    a reader sees what each model did and why without opening the results file."""
    groups: dict[tuple, dict[str, Any]] = {}
    for e in d.events_of(results, "preempt"):
        reason = e.get("reason") or {}
        preemptor = str(reason.get("preemptor") or "-").split("/")[0]
        key = (float(e.get("time") or 0), f"{reason.get('model', '?')}/{reason.get('rule', '?')}", preemptor,
               str(e.get("workload")))
        g = groups.setdefault(key, {"tasks": 0, "detail": reason.get("detail") or "", "queue": e.get("queue")})
        g["tasks"] += 1
    lines = []
    for (t, rule, preemptor, victim), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1:])):
        tasks = "1 task" if g["tasks"] == 1 else f"{g['tasks']} tasks"
        why = f": {g['detail']}" if g["detail"] else ""
        lines.append(f"{d.fmt_time(t)}  {rule}  {preemptor} <- {victim} ({g['queue']}, {tasks}){why}")
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more (makeway explain RESULTS WORKLOAD tells each story)"]
    return lines
