"""One self-contained HTML report of a simulation run.

Everything is inline (CSS and SVG figures) so the file can be mailed or attached to a ticket and
still open offline; no timestamps are written, so the same results give the same bytes and reports
can be diffed or checked into a repository.
"""

from __future__ import annotations

from html import escape
from typing import Any, Iterable, Sequence

from makeway.reports import derive as d
from makeway.reports import plots

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:.9em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.fig svg{max-width:100%;height:auto}.fig{margin:.5em 0}
.muted{color:#777}code{font-size:.95em}
"""


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    """An HTML table; every cell is escaped, columns listed in ``numeric`` are right-aligned."""
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in headers) + "</tr>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{escape(str(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def figure(svg: str) -> str:
    return f'<div class="fig">{svg}</div>'


def page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def _num(v: Any, fmt: str = "{:,.1f}") -> str:
    return "-" if v is None else fmt.format(float(v))


def queue_rows(stats: dict[str, dict[str, Any]]) -> list[list[str]]:
    rows = []
    for q, s in stats.items():
        rows.append([q, str(s.get("jobs", "-")), str(s.get("finished", "-")), _num(s.get("wait_mean_s")),
                     _num(s.get("wait_p50_s")), _num(s.get("wait_p95_s")), _num(s.get("wait_p99_s")),
                     _num(s.get("bounded_slowdown_mean"), "{:.3g}"), str(s.get("preemptions", "-")),
                     str(s.get("victim_workloads", "-")),
                     d.fmt_vector(s.get("wasted_resource_seconds"), " x s"),
                     d.fmt_vector(s.get("guaranteed")), d.fmt_vector(s.get("max"))])
    return rows


QUEUE_HEADERS = ("queue", "jobs", "finished", "wait mean (s)", "p50", "p95", "p99", "bounded slowdown",
                 "preemptions", "victim workloads", "wasted", "guaranteed", "max")


def render_report(results: dict[str, Any], last_decisions: int = 50) -> str:
    """The full report of one results dict (schema ``makeway.results/1``) as one HTML string."""
    cfg = results.get("config") or {}
    title = f"makeway report: {cfg.get('name') or 'simulation'}"
    stats = d.queue_stats(results)
    ts = d.timeseries(results)
    s = d.summary(results)
    body = [f"<h1>{escape(title)}</h1>",
            '<p class="meta">' + " &middot; ".join(escape(x) for x in (
                f"model {cfg.get('model') or '-'}", f"config {cfg.get('path') or '-'}",
                f"trace {results.get('trace') or '-'}", f"schema {results.get('schema') or '-'}")) + "</p>"]

    body += ["<h2>Summary</h2>", table(("metric", "value"), d.summary_rows(results))]

    body += ["<h2>Utilisation</h2>", figure(plots.utilisation(ts, s.get("utilisation")))]
    if ts and ts.get("jain"):
        body.append(figure(plots.jain(ts)))

    body.append("<h2>Queues: what the model decides by</h2>")
    if ts and ts.get("queues"):
        body += [figure(svg) for svg in plots.queue_mechanism(d.with_limits(ts, stats), d.capacity(results),
                                                                cfg.get("model"))]
        drs = plots.share_lines(ts, "drs", "Kueue fair sharing: dominant resource share per queue",
                                "DRS (Kueue's weighted share)", "drs")
        pending = plots.pending_counts(ts)
        body += [figure(svg) for svg in (drs, pending) if svg]
        if any((q or {}).get("share") for q in ts["queues"].values()):
            body.append(figure(plots.shares(ts)))
    else:
        body.append('<p class="muted">No per-queue time series in these results.</p>')

    body += ["<h2>Wait time</h2>", figure(plots.wait_cdf(d.waits_by_queue(results), "Wait time CDF per queue"))]

    preempts = d.events_of(results, "preempt")
    body += ["<h2>Preemptions</h2>", figure(plots.preemption_timeline(preempts, list(stats))),
             figure(plots.preemption_matrix(d.preemption_matrix(results)))]
    if preempts:
        rules: dict[str, int] = {}
        for e in preempts:
            key = f"{(e.get('reason') or {}).get('model', '?')}/{(e.get('reason') or {}).get('rule', '?')}"
            rules[key] = rules.get(key, 0) + 1
        body.append(table(("rule", "preemptions"), sorted(rules.items()), numeric=(1,)))
    body += ["<h2>Wasted work</h2>", figure(plots.wasted_bars(stats))]

    body += ["<h2>Per-queue figures</h2>",
             table(QUEUE_HEADERS, queue_rows(stats), numeric=tuple(range(1, 10)))]

    conv = results.get("quota_convergence") or []
    if conv:
        body += ["<h2>Quota convergence</h2>",
                 table(("queue", "change at", "converged at", "seconds"),
                       [(c.get("queue"), d.fmt_time(c.get("time")),
                         d.fmt_time(c.get("converged_at")) if c.get("converged_at") is not None else "never",
                         _num(c.get("seconds"))) for c in conv], numeric=(3,))]

    decs = d.decisions(results, last_decisions)
    total = len(d.decisions(results))
    body.append(f"<h2>Last {len(decs)} of {total} decisions</h2>")
    if decs:
        rows = []
        for e in decs:
            what, rule, why = d.describe_decision(e)
            rows.append((d.fmt_time(e.get("time")), what, rule, why))
        body.append(table(("time", "decision", "rule", "reason"), rows))
    else:
        body.append('<p class="muted">No preemptions, notes or config changes were recorded.</p>')
    return page(title, body)
