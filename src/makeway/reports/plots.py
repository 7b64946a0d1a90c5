"""Matplotlib figures rendered to inline SVG strings.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, Agg-free vector output),
at fixed sizes, with the SVG hash salt fixed per figure and no date metadata, so the same results
always give byte-identical SVG. Long series are thinned to a bounded number of points so a report of
a million-job trace stays small enough to open in a browser.
"""

from __future__ import annotations

import io
import math
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg", force=False)

from matplotlib.figure import Figure  # noqa: E402

# A sample at t[i] is the level in force just before t[i] (the recorder samples before applying a
# change), so steps are drawn ending at each sample.
WHERE = "pre"
MAX_POINTS = 1500
BYTE_LIKE = ("memory", "storage", "ephemeral-storage")
MAX_SCATTER = 4000
MAX_QUEUE_PANELS = 12
WIDTH = 8.0
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def to_svg(fig: Figure, name: str) -> str:
    """SVG text without the XML prolog, ready to inline into HTML."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"makeway-{name}", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=None)
    text = buf.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def _new(height: float, nrows: int = 1, ncols: int = 1, sharex: bool = False) -> tuple[Figure, Any]:
    fig = Figure(figsize=(WIDTH, height), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=sharex, squeeze=False)
    return fig, axes


def thin(xs: Sequence[float], ys: Sequence[float], limit: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """Every k-th point (always keeping the last), so long series keep their shape at bounded size."""
    n = min(len(xs), len(ys))
    if n <= limit:
        return list(xs[:n]), list(ys[:n])
    step = math.ceil(n / limit)
    idx = list(range(0, n, step))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    return [xs[i] for i in idx], [ys[i] for i in idx]


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#777")
    ax.set_xticks([])
    ax.set_yticks([])


def cdf_points(sorted_values: Sequence[float]) -> tuple[list[float], list[float]]:
    n = len(sorted_values)
    return thin(list(sorted_values), [(i + 1) / n for i in range(n)])


def wait_cdf(series: dict[str, Sequence[float]], title: str = "Wait time CDF", name: str = "wait-cdf",
             xlabel: str = "wait (s)", ylabel: str = "fraction of workloads", log: bool = True) -> str:
    """One empirical CDF line per series (queue or run); for waits a symlog x axis keeps 0 visible
    while spreading the long tail."""
    if len(series) > MAX_QUEUE_PANELS:
        keep = sorted(series, key=lambda k: (-len(series[k]), k))[:MAX_QUEUE_PANELS]
        series = {k: series[k] for k in series if k in keep}
        title += f" ({MAX_QUEUE_PANELS} largest)"
    fig, axes = _new(3.4)
    ax = axes[0][0]
    drawn = 0
    for i, (label, values) in enumerate(series.items()):
        if not values:
            continue
        xs, ys = cdf_points(sorted(values))
        ax.step([0.0] + xs, [0.0] + ys, where="post", color=color(i), label=f"{label} (n={len(values)})")
        drawn += 1
    if not drawn:
        _empty(ax, "no workload started")
    else:
        top = max(max(v) for v in series.values() if v)
        if log and top > 100:
            ax.set_xscale("symlog", linthresh=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title)
    return to_svg(fig, name)


def utilisation(ts: dict[str, Any] | None, mean: dict[str, float] | None = None, name: str = "util") -> str:
    """Utilisation per resource over time; without a time series, bars of the mean utilisation."""
    fig, axes = _new(3.0)
    ax = axes[0][0]
    series = (ts or {}).get("utilisation") or {}
    if ts and series:
        t = ts["t"]
        for i, (res, ys) in enumerate(sorted(series.items())):
            xs, vs = thin(t, ys)
            ax.step(xs, [v * 100 for v in vs], where=WHERE, color=color(i), label=res)
        ax.set_xlabel("time (s)")
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title("Utilisation over time")
    elif mean:
        names = sorted(mean)
        ax.bar(names, [mean[k] * 100 for k in names], color=[color(i) for i in range(len(names))])
        ax.set_title("Mean utilisation (no time series in results)")
    else:
        _empty(ax, "no utilisation data")
        ax.set_title("Utilisation")
        return to_svg(fig, name)
    ax.set_ylabel("% of capacity")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    return to_svg(fig, name)


def jain(ts: dict[str, Any], name: str = "jain") -> str:
    fig, axes = _new(2.4)
    ax = axes[0][0]
    xs, ys = thin(ts["t"], ts["jain"])
    ax.step(xs, ys, where=WHERE, color=color(0))
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Jain index")
    ax.set_title("Fairness over time (Jain's index of queue shares)")
    ax.grid(True, alpha=0.3)
    return to_svg(fig, name)


def queue_usage(ts: dict[str, Any], stats: dict[str, dict[str, Any]], capacity: dict[str, float],
                name: str = "queue-usage") -> str:
    """Per queue, each resource's usage as a share of the cluster (solid) against the queue's guarantee
    (dashed) and max (dotted) in the same unit, plus its fair share (black dashed) when recorded."""
    queues = list(ts.get("queues") or {})[:MAX_QUEUE_PANELS]
    if not queues:
        fig, axes = _new(2.0)
        _empty(axes[0][0], "no per-queue time series in results")
        return to_svg(fig, name)
    ncols = 2 if len(queues) > 1 else 1
    nrows = math.ceil(len(queues) / ncols)
    fig, axes = _new(2.3 * nrows, nrows, ncols, sharex=True)
    t = ts["t"]
    for k, q in enumerate(queues):
        ax = axes[k // ncols][k % ncols]
        qts = ts["queues"][q] or {}
        st = stats.get(q) or {}
        guaranteed, qmax = st.get("guaranteed") or {}, st.get("max") or {}
        drawn = False
        for i, (res, ys) in enumerate(sorted((qts.get("usage") or {}).items())):
            cap = capacity.get(res)
            if not cap:
                continue
            xs, vs = thin(t, ys)
            ax.step(xs, [v / cap for v in vs], where=WHERE, color=color(i), label=res)
            if guaranteed.get(res):
                ax.axhline(float(guaranteed[res]) / cap, color=color(i), linestyle="--", linewidth=1)
            if qmax.get(res) is not None:
                ax.axhline(float(qmax[res]) / cap, color=color(i), linestyle=":", linewidth=1)
            drawn = True
        if not drawn and qts.get("share"):
            xs, vs = thin(t, qts["share"])
            ax.step(xs, vs, where=WHERE, color=color(0), label="dominant share")
            drawn = True
        if qts.get("fair_share"):
            xs, vs = thin(t, qts["fair_share"])
            ax.step(xs, vs, where=WHERE, color="#222", linestyle="--", linewidth=1, label="fair share")
            drawn = True
        if not drawn:
            _empty(ax, "no usage recorded")
        ax.set_title(q, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    for k in range(len(queues), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.supylabel("share of cluster", fontsize=8)
    fig.suptitle("Queue usage (solid) vs guarantee (dashed), max (dotted), fair share (black dashed)",
                 fontsize=10)
    return to_svg(fig, name)


def shares(ts: dict[str, Any], name: str = "shares") -> str:
    """Dominant share (solid) against fair share (dashed) for every queue on one axis."""
    fig, axes = _new(3.2)
    ax = axes[0][0]
    t = ts["t"]
    drawn = 0
    for i, (q, qts) in enumerate(list((ts.get("queues") or {}).items())[:MAX_QUEUE_PANELS]):
        qts = qts or {}
        if qts.get("share"):
            xs, vs = thin(t, qts["share"])
            ax.step(xs, vs, where=WHERE, color=color(i), label=q)
            drawn += 1
        if qts.get("fair_share"):
            xs, vs = thin(t, qts["fair_share"])
            ax.step(xs, vs, where=WHERE, color=color(i), linestyle="--", linewidth=1)
    if not drawn:
        _empty(ax, "no share series in results")
    else:
        ax.set_xlabel("time (s)")
        ax.set_ylabel("dominant share of cluster")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    ax.set_title("Dominant share (solid) vs fair share (dashed)")
    return to_svg(fig, name)


def preemption_timeline(preempts: list[dict[str, Any]], queues: list[str], name: str = "preemptions") -> str:
    """Each preempt event as a dot at (time, victim queue), coloured by the reason's rule."""
    rows = sorted({e.get("queue") or "?" for e in preempts} | set(queues))
    fig, axes = _new(max(2.2, 0.9 + 0.3 * len(rows)))
    ax = axes[0][0]
    if not preempts:
        _empty(ax, "no preemptions")
        ax.set_title("Preemption timeline")
        return to_svg(fig, name)
    if len(preempts) > MAX_SCATTER:
        step = math.ceil(len(preempts) / MAX_SCATTER)
        preempts = preempts[::step]
    pos = {q: i for i, q in enumerate(rows)}
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for e in preempts:
        rule = (e.get("reason") or {}).get("rule") or "?"
        by_rule.setdefault(rule, []).append(e)
    for i, (rule, evs) in enumerate(sorted(by_rule.items())):
        ax.scatter([float(e.get("time") or 0) for e in evs], [pos[e.get("queue") or "?"] for e in evs],
                   s=14, color=color(i), label=f"{rule} ({len(evs)})", alpha=0.8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("time (s)")
    ax.set_title("Preemption timeline (victim queue, by rule)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return to_svg(fig, name)


def wasted_bars(stats: dict[str, dict[str, Any]], name: str = "wasted") -> str:
    """Wasted resource-seconds per queue, one panel per resource (units differ between resources)."""
    resources = sorted({r for s in stats.values() for r in (s.get("wasted_resource_seconds") or {})})
    queues = [q for q in stats if any((stats[q].get("wasted_resource_seconds") or {}).values())]
    if not resources or not queues:
        fig, axes = _new(1.6)
        _empty(axes[0][0], "no work was lost to preemption")
        axes[0][0].set_title("Wasted work per queue")
        return to_svg(fig, name)
    fig, axes = _new(max(1.8, 0.8 + 0.35 * len(queues)), 1, len(resources))
    for i, res in enumerate(resources):
        ax = axes[0][i]
        scale, unit = (2**30, f"{res} (GiB) x s") if res in BYTE_LIKE else (1, f"{res} x s")
        vals = [float((stats[q].get("wasted_resource_seconds") or {}).get(res, 0)) / scale for q in queues]
        ax.barh(range(len(queues)), vals, color=color(i))
        ax.set_yticks(range(len(queues)), queues if i == 0 else [""] * len(queues), fontsize=8)
        ax.invert_yaxis()
        ax.set_title(unit, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle("Wasted work per queue")
    return to_svg(fig, name)


def overlay_utilisation(runs: list[tuple[str, dict[str, Any] | None, dict[str, float]]],
                        name: str = "cmp-util") -> str:
    """Utilisation of each resource over time with one line per run; mean bars for runs without series."""
    resources = sorted({r for _, ts, mean in runs for r in (((ts or {}).get("utilisation") or {}) or mean)})
    if not resources:
        fig, axes = _new(1.6)
        _empty(axes[0][0], "no utilisation data")
        return to_svg(fig, name)
    has_series = any(ts and ts.get("utilisation") for _, ts, _ in runs)
    if not has_series:
        fig, axes = _new(3.0)
        ax = axes[0][0]
        width = 0.8 / max(1, len(runs))
        for i, (label, _, mean) in enumerate(runs):
            ax.bar([j + i * width for j in range(len(resources))], [mean.get(r, 0) * 100 for r in resources],
                   width=width, color=color(i), label=label)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(resources))], resources)
        ax.set_ylabel("% of capacity")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=7)
        ax.set_title("Mean utilisation")
        return to_svg(fig, name)
    fig, axes = _new(2.2 * len(resources), len(resources), 1, sharex=True)
    for r_i, res in enumerate(resources):
        ax = axes[r_i][0]
        for i, (label, ts, mean) in enumerate(runs):
            ys = ((ts or {}).get("utilisation") or {}).get(res)
            if ys:
                xs, vs = thin(ts["t"], ys)
                ax.step(xs, [v * 100 for v in vs], where=WHERE, color=color(i), label=label)
            elif res in mean:
                ax.axhline(mean[res] * 100, color=color(i), linestyle=":", label=f"{label} (mean)")
        ax.set_ylabel(f"{res} %", fontsize=8)
        ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[-1][0].set_xlabel("time (s)")
    fig.suptitle("Utilisation over time")
    return to_svg(fig, name)
