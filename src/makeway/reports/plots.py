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

import matplotlib.lines  # noqa: E402
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
        div, xlabel = time_axis(t)
        for i, (res, ys) in enumerate(sorted(series.items())):
            xs, vs = thin(t, ys)
            ax.step(_scaled(xs, div), [v * 100 for v in vs], where=WHERE, color=color(i), label=res)
        ax.set_xlabel(xlabel)
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
    div, xlabel = time_axis(ts["t"])
    ax.step(_scaled(xs, div), ys, where=WHERE, color=color(0))
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(xlabel)
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
    """Preemptions at (time, victim queue), coloured by the reason's rule; the allocations preempted at
    one instant from one queue by one rule are one marker, sized by and labelled with their count."""
    rows = sorted({e.get("queue") or "?" for e in preempts} | set(queues))
    fig, axes = _new(max(2.2, 0.9 + 0.3 * len(rows)))
    ax = axes[0][0]
    if not preempts:
        _empty(ax, "no preemptions")
        ax.set_title("Preemption timeline")
        return to_svg(fig, name)
    pos = {q: i for i, q in enumerate(rows)}
    groups: dict[tuple[str, float, str], int] = {}
    for e in preempts:
        key = ((e.get("reason") or {}).get("rule") or "?", float(e.get("time") or 0), e.get("queue") or "?")
        groups[key] = groups.get(key, 0) + 1
    div, xlabel = time_axis([k[1] for k in groups])
    by_rule: dict[str, list[tuple[float, str, int]]] = {}
    for (rule, t, q), n in sorted(groups.items()):
        by_rule.setdefault(rule, []).append((t, q, n))
    labelled = 0
    for i, (rule, pts) in enumerate(sorted(by_rule.items())):
        if len(pts) > MAX_SCATTER:
            pts = pts[::math.ceil(len(pts) / MAX_SCATTER)]
        total = sum(n for _, _, n in pts)
        ax.scatter([t / div for t, _, _ in pts], [pos[q] for _, q, _ in pts],
                   s=[14 + 10 * math.sqrt(n - 1) for _, _, n in pts], color=color(i), alpha=0.75,
                   label=f"{rule} ({total} in {len(pts)} instants)")
        for t, q, n in pts:
            if n > 1 and labelled < 200:
                ax.annotate(str(n), (t / div, pos[q]), textcoords="offset points", xytext=(0, 6),
                            ha="center", fontsize=6)
                labelled += 1
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(xlabel)
    ax.set_title("Preemption timeline (victim queue; a number: allocations at one instant)", fontsize=10)
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
    div, xlabel = time_axis([x for _, ts, _ in runs if ts and ts.get("t") for x in (ts["t"][0], ts["t"][-1])])
    for r_i, res in enumerate(resources):
        ax = axes[r_i][0]
        for i, (label, ts, mean) in enumerate(runs):
            ys = ((ts or {}).get("utilisation") or {}).get(res)
            if ys:
                xs, vs = thin(ts["t"], ys)
                ax.step(_scaled(xs, div), [v * 100 for v in vs], where=WHERE, color=color(i), label=label)
            elif res in mean:
                ax.axhline(mean[res] * 100, color=color(i), linestyle=":", label=f"{label} (mean)")
        ax.set_ylabel(f"{res} %", fontsize=8)
        ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[-1][0].set_xlabel(xlabel)
    fig.suptitle("Utilisation over time")
    return to_svg(fig, name)


# -- the mechanism: per queue, what the model decides by ---------------------------------------------

# Line styles of the per-queue panels, the same in every figure and named in one legend.
STYLES = {
    "usage": dict(color="#1f77b4", linestyle="-", linewidth=1.4),
    "pending": dict(color="#ff7f0e", linestyle="-", linewidth=0.9, alpha=0.8),
    "guarantee": dict(color="#222222", linestyle="--", linewidth=1.1),
    "max": dict(color="#d62728", linestyle=":", linewidth=1.3),
    "fair_share": dict(color="#2ca02c", linestyle="-.", linewidth=1.2),
    "deserved": dict(color="#9467bd", linestyle="-.", linewidth=1.2),
}
# What a queue's ``guaranteed`` is called by each model.
GUARANTEE_NAMES = {"kueue": "nominal quota", "ytsaurus": "strong guarantee", "yunikorn": "guaranteed",
                   "symphony": "guarantee (unused by the model)"}


def time_axis(t: Sequence[float]) -> tuple[float, str]:
    """(divisor, label) that put a run's span in minutes, hours or days rather than raw seconds."""
    span = (max(t) - min(t)) if len(t) else 0.0
    if span >= 3 * 86400:
        return 86400.0, "time (days)"
    if span >= 3 * 3600:
        return 3600.0, "time (hours)"
    if span >= 3 * 60:
        return 60.0, "time (minutes)"
    return 1.0, "time (s)"


def _scaled(ts: Sequence[float], div: float) -> list[float]:
    return [x / div for x in ts]


def _unit(resource: str) -> tuple[float, str]:
    return (2**30, f"{resource} (GiB)") if resource in BYTE_LIKE else (1.0, resource)


def _limit_steps(limits: list[list[Any]], index: int, resource: str, t_end: float) -> tuple[list[float], list[float]]:
    """A guarantee (``index`` 1) or max (2) of one resource as a step line over the run."""
    xs: list[float] = []
    ys: list[float] = []
    for i, entry in enumerate(limits):
        v = (entry[index] or {}).get(resource)
        end = limits[i + 1][0] if i + 1 < len(limits) else t_end
        y = float(v) if v is not None else math.nan
        xs += [float(entry[0]), float(end)]
        ys += [y, y]
    return xs, ys


def queue_mechanism(ts: dict[str, Any], capacity: dict[str, float], model: str | None,
                    name: str = "queue-mechanism") -> list[str]:
    """One figure per resource, one panel per queue, every panel on the same y scale (the resource's
    units, so queues compare at a glance): usage, pending demand, guarantee (Kueue's nominal quota),
    max, and the share the model schedules by where it is a resource amount (YTsaurus's fair share
    times the cluster, Symphony's deserved slots). One legend names every line style drawn."""
    queues = list(ts.get("queues") or {})[:MAX_QUEUE_PANELS]
    t = ts.get("t") or []
    if not queues or not t:
        return []
    div, xlabel = time_axis(t)
    t_end = float(t[-1])
    resources = sorted({r for q in queues for r in ((ts["queues"][q] or {}).get("usage") or {})})
    guarantee = GUARANTEE_NAMES.get(model or "", "guarantee")
    out = []
    for res in resources:
        scale, unit = _unit(res)
        cap = capacity.get(res)
        ncols = 2 if len(queues) > 1 else 1
        nrows = math.ceil(len(queues) / ncols)
        fig, axes = _new(0.6 + 2.0 * nrows, nrows, ncols, sharex=True)
        for ax_row in axes:
            for ax in ax_row:
                ax.sharey(axes[0][0])
        used: set[str] = set()
        for k, q in enumerate(queues):
            ax = axes[k // ncols][k % ncols]
            qts = ts["queues"][q] or {}
            for key, series in (("usage", (qts.get("usage") or {}).get(res)),
                                ("pending", (qts.get("pending") or {}).get(res))):
                if series and any(series):
                    xs, vs = thin(t, series)
                    ax.step(_scaled(xs, div), [v / scale for v in vs], where=WHERE, **STYLES[key])
                    used.add(key)
            limits = qts.get("limits") or []
            for key, index in (("guarantee", 1), ("max", 2)):
                xs, ys = _limit_steps(limits, index, res, t_end)
                if any(not math.isnan(y) for y in ys):
                    ax.plot(_scaled(xs, div), [y / scale for y in ys], **STYLES[key])
                    used.add(key)
            shares = qts.get("shares") or {}
            if shares.get("fair_share") and cap:
                xs, vs = thin(t, shares["fair_share"])
                ax.step(_scaled(xs, div), [math.nan if v is None else v * cap / scale for v in vs], where=WHERE,
                        **STYLES["fair_share"])
                used.add("fair_share")
            if shares.get("deserved_slots") and res == _slot_resource(qts):
                xs, vs = thin(t, shares["deserved_slots"])
                ax.step(_scaled(xs, div), [math.nan if v is None else v for v in vs], where=WHERE,
                        **STYLES["deserved"])
                used.add("deserved")
            ax.set_title(q, fontsize=9)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
        for k in range(len(queues), nrows * ncols):
            axes[k // ncols][k % ncols].set_visible(False)
        axes[0][0].set_ylim(bottom=0)
        if cap:
            axes[0][0].set_ylim(top=max(axes[0][0].get_ylim()[1], cap / scale * 1.02))
        labels = {"usage": "usage", "pending": "pending demand", "guarantee": guarantee, "max": "max",
                  "fair_share": "fair share (YTsaurus) x cluster", "deserved": "deserved slots (Symphony)"}
        handles = [matplotlib.lines.Line2D([], [], **STYLES[key]) for key in STYLES if key in used]
        fig.legend(handles, [labels[key] for key in STYLES if key in used], loc="outside upper center",
                   ncols=min(6, max(1, len(handles))), fontsize=8,
                   title=f"{res}: per queue over time (one scale for every queue)", title_fontsize=10)
        fig.supxlabel(xlabel, fontsize=8)
        fig.supylabel(unit + (f" (cluster: {fmt_cap(cap / scale)})" if cap else ""), fontsize=8)
        out.append(to_svg(fig, f"{name}-{res}"))
    return out


def fmt_cap(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.3g}"


def _slot_resource(qts: dict[str, Any]) -> str | None:
    """Symphony's slot resource is reported beside its shares only as text; the recorder keeps numbers,
    so a run's slot resource is inferred as the resource its allocated slots match."""
    shares = qts.get("shares") or {}
    alloc = shares.get("allocated_slots")
    if not alloc:
        return None
    for res, series in (qts.get("usage") or {}).items():
        if all(a is None or abs(float(a) - float(u)) < 1e-6 for a, u in zip(alloc, series)):
            return res
    return None


def _queue_lines(t: list, series: dict[str, list], ylabel: str, title: str, name: str, height: float) -> str:
    """One step line per queue over a shared time axis (a missing value is a gap)."""
    div, xlabel = time_axis(t)
    fig, axes = _new(height)
    ax = axes[0][0]
    for i, (q, s) in enumerate(list(series.items())[:MAX_QUEUE_PANELS]):
        xs, vs = thin(t, s)
        ax.step(_scaled(xs, div), [math.nan if v is None else v for v in vs], where=WHERE, color=color(i), label=q)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(title)
    return to_svg(fig, name)


def share_lines(ts: dict[str, Any], key: str, title: str, ylabel: str, name: str) -> str | None:
    """One line per queue of a share the model reports (e.g. Kueue's DRS), or None when none does."""
    t = ts.get("t") or []
    series = {q: ((qts or {}).get("shares") or {}).get(key) for q, qts in (ts.get("queues") or {}).items()}
    series = {q: s for q, s in series.items() if s and any(v is not None for v in s)}
    if not series or not t:
        return None
    return _queue_lines(t, series, ylabel, title, name, 2.8)


def pending_counts(ts: dict[str, Any], name: str = "pending-counts") -> str | None:
    """Pending tasks per queue over time (the queue length a user would see)."""
    t = ts.get("t") or []
    series = {q: (qts or {}).get("pending_tasks") for q, qts in (ts.get("queues") or {}).items()}
    series = {q: s for q, s in series.items() if s}
    if not series or not t:
        return None
    return _queue_lines(t, series, "pending tasks", "Pending tasks per queue", name, 2.6)


def preemption_matrix(matrix: dict[tuple[str, str], int], name: str = "preemption-matrix") -> str:
    """Preemptor queue (rows) x victim queue (columns): how many allocations each took from each."""
    rows = sorted({p for p, _ in matrix})
    cols = sorted({v for _, v in matrix})
    fig, axes = _new(max(1.8, 0.9 + 0.45 * len(rows)))
    ax = axes[0][0]
    if not matrix:
        _empty(ax, "no preemptions")
        ax.set_title("Who preempted whom")
        return to_svg(fig, name)
    grid = [[matrix.get((p, v), 0) for v in cols] for p in rows]
    top = max(max(r) for r in grid) or 1
    ax.imshow(grid, cmap="Oranges", vmin=0, vmax=top, aspect="auto")
    for i, r in enumerate(grid):
        for j, n in enumerate(r):
            ax.text(j, i, f"{n:,}", ha="center", va="center", fontsize=8,
                    color="white" if n > top * 0.6 else "#222")
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel("victim queue")
    ax.set_ylabel("preemptor queue")
    ax.set_title("Who preempted whom (allocations preempted)")
    return to_svg(fig, name)
