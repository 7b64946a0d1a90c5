"""Terminal rendering of simulation summaries (rich tables)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from makeway.core.resources import format_quantity


def _fmt_seconds(s: float) -> str:
    if s >= 86400:
        return f"{s:,.0f} s ({s / 86400:.1f} d)"
    if s >= 3600:
        return f"{s:,.0f} s ({s / 3600:.1f} h)"
    return f"{s:,.1f} s"


def summary_rows(summary: dict[str, Any], model: str) -> list[tuple[str, str]]:
    rows = [
        ("model", model),
        ("jobs finished", f"{summary['jobs_finished']} of {summary['jobs_submitted']}"
                          + (f" ({summary['jobs_unfinished']} unfinished)" if summary["jobs_unfinished"] else "")),
        ("makespan", _fmt_seconds(summary["makespan_s"])),
        ("wait mean / p50 / p95", " / ".join(_fmt_seconds(summary[k]) for k in ("wait_mean_s", "wait_p50_s", "wait_p95_s"))),
        ("utilisation", ", ".join(f"{k} {v:.1%}" for k, v in summary["utilisation"].items()) or "-"),
    ]
    n = summary["preemptions"]
    if n == 0:
        why = " (this model never preempts)" if model in ("none", "fifo", "fifo-strict", "easy-backfill") else ""
        rows.append(("preemptions", f"0{why}"))
    else:
        rows.append(("preemptions", f"{n} allocations of {summary['preempted_workloads']} workloads"))
        for rule, count in (summary.get("preemptions_by_rule") or {}).items():
            rows.append(("  by rule", f"{rule}: {count}"))
    wasted = summary["wasted_resource_seconds"]
    rows.append(("wasted work", ", ".join(f"{k} {format_quantity(round(v, 3))} x s" for k, v in wasted.items()) or "none"))
    if summary.get("killed_at_requested_time"):
        rows.append(("killed at requested time", str(summary["killed_at_requested_time"])))
    if summary.get("starvation_s"):
        rows.append(("starvation time", _fmt_seconds(summary["starvation_s"])))
    for kind, count in (summary.get("notes") or {}).items():
        rows.append(("events reported", f"{kind}: {count}"))
    if summary.get("stopped"):
        rows.append(("stopped early", str(summary["stopped"])))
    return rows


def print_summary(summary: dict[str, Any], model: str, title: str, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("value")
    for k, v in summary_rows(summary, model):
        table.add_row(k, v)
    console.print(table)
