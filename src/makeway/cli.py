"""The makeway command line. Every user error is one line on stderr and exit status 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from makeway import blas

blas.one_thread()  # before anything imports numpy

import typer  # noqa: E402

from makeway.errors import MakewayError  # noqa: E402

_HELP = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings=_HELP,
                  help="makeway: a preemptive multi-tenant cluster scheduler and simulator.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"makeway {version('makeway')}")
        except PackageNotFoundError:
            typer.echo("makeway (not installed)")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                            help="print the version and exit")) -> None:
    """makeway: a preemptive multi-tenant cluster scheduler and simulator."""


def fail(message: str) -> "typer.Exit":
    typer.echo(error_line(MakewayError(message)), err=True)
    return typer.Exit(2)


@app.command()
def conformance(paths: List[Path] = typer.Argument(..., help="case files or folders (recursive)")) -> None:
    """Run the anchors' conformance cases; one line per failing case, then 'N passed, M failed'."""
    from makeway.conformance.runner import run

    for p in paths:
        if not p.exists():
            raise fail(f"{p}: no such file or directory")
    outcomes = run(paths)
    failed = [o for o in outcomes if not o.result.ok]
    for o in failed:
        r = o.result
        msg = f" ({r.message})" if r.message else ""
        typer.echo(f"FAIL {o.case_id}: expected {r.expected!r}, got {r.got!r}{msg}")
    typer.echo(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
    raise typer.Exit(1 if failed else 0)


def check_output(path: Optional[Path], option: str) -> None:
    """Fail before any work when ``path`` cannot be written, so a long run's results are never lost.

    Every command that writes a file calls this first. Writability is tried, not guessed from the
    mode bits (root ignores them, read-only mounts do not): an existing file is opened for append
    (its contents untouched), a new one is created and removed again.
    """
    if path is None or str(path) == "-":
        return
    try:
        path.stat()
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        raise fail(f"{option}: {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if path.is_dir():
        raise fail(f"{option}: {path} is a directory; give a file name")
    parent = path.parent
    if not parent.exists():
        raise fail(f"{option}: {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise fail(f"{option}: {path}: {parent} is not a directory")
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        raise fail(f"{option}: {path}: cannot write: {exc.strerror or exc}") from None
    if not existed:
        path.unlink(missing_ok=True)


def check_horizon(horizon: Optional[float]) -> None:
    from makeway.config import MAX_TIME

    if horizon is not None and not (0 < horizon <= MAX_TIME):  # also refuses nan
        raise fail(f"--horizon: {horizon} is not a time in seconds in (0, {MAX_TIME:g}]")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _warn_stats(stats, strict: bool) -> None:
    """Import problems go to stderr: the first few lines, then the count."""
    for w in stats.warnings[:10]:
        typer.echo(f"warning: {w}", err=True)
    if stats.warning_count > 10:
        typer.echo(f"warning: ... {stats.warning_count - 10} more", err=True)
    if stats.skipped:
        typer.echo(f"warning: {_count(stats.skipped, 'unreadable record')} skipped "
                   "(use --strict to stop at the first)", err=True)
    for what, n in stats.notes.items():
        typer.echo(f"note: {n:,} {what}", err=True)


def _warn_unplaceable(rec) -> None:
    """Workloads bigger than every node would otherwise hide among the unfinished ones."""
    if not rec.unplaceable:
        return
    from makeway.core.resources import format_quantity

    wl_id, res, asked, largest = rec.first_unplaceable
    has = f"largest node has {format_quantity(largest)}" if largest else f"no node has {res}"
    typer.echo(f"warning: {_count(rec.unplaceable, 'workload')} can never start: a task asks for more than "
               f"any node has (first: {wl_id} asks {res} {format_quantity(asked)}, {has})", err=True)


class _Progress:
    """A rich progress line with simulated time and events/s; silent when quiet or not a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._last = 0.0
        self._progress = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                      transient=True)
            self._progress.start()
            self._task = self._progress.add_task("simulating", total=None)
        return self

    def __call__(self, sim_time: float, events: int) -> None:
        import time

        if self._progress is None:
            return
        wall = time.monotonic()
        if wall - self._last < 0.2:
            return
        if not self._last:
            self._t0, self._last = wall, wall
            return
        rate = events / max(wall - self._t0, 1e-6)
        self._last = wall
        self._progress.update(self._task, description=f"simulated t={sim_time:,.0f} s  {events:,} events  {rate:,.0f} events/s")

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()


def _config_for(config: Optional[Path], trace: Optional[Path], trace_format: Optional[str], quiet: bool,
                scale: Optional[float] = None, save: Optional[Path] = None, layout: Optional[str] = None):
    """The config file, or, without one, the cluster the trace itself describes; scaled by
    ``--scale-cluster`` and written to ``--save-cluster`` when asked."""
    from makeway.config import load_config, parse_config

    if scale is not None:
        from makeway.sim.scale import check_factor

        check_factor(scale)
    if config is not None:
        cfg = load_config(config)
        if scale is None and save is None:
            return cfg
        data, source, built = cfg.model_dump(), str(config), False
        if cfg.trace is not None and save is not None:
            from makeway.config import trace_path

            data["trace"] = str(trace_path(cfg, config).resolve())
    else:
        if trace is None:
            raise fail("give a CONFIG, or a --trace that describes its own cluster")
        from makeway.sim.importers import cluster_from_trace

        data = cluster_from_trace(trace, trace_format, **({"layout": layout} if layout else {}))
        if data is None:
            raise fail(f"{trace}: this trace does not describe its cluster; give a CONFIG")
        data["trace"] = str(trace.resolve())
        source, built = f"cluster built from {trace}", True
    if scale is not None:
        from makeway.sim.scale import scale_cluster

        data = scale_cluster(data, scale, quotas=built)
        source += f" scaled by {scale:g}"
    cfg = parse_config(data, source)
    if save is not None:
        import yaml

        save.write_text(yaml.safe_dump(cfg.model_dump(exclude_defaults=True), sort_keys=False))
    if not quiet and (built or save is not None):
        from makeway.sim.scale import describe

        where = f"written to {save}" if save is not None else "--save-cluster FILE writes it as a config"
        typer.echo(f"# {source}: {describe(cfg.model_dump())}; {where}")
    return cfg


def _study_options(trace: Optional[Path], trace_format: Optional[str], queue_map: Optional[str],
                   swf_processors: Optional[str], swf_layout: Optional[str] = None):
    """(queue map, importer options) from the options every trace-replaying command shares."""
    qmap = None
    if queue_map is not None:
        from makeway.sim.queue_map import load

        qmap = load(queue_map)
    options: dict = {}
    for flag, key, value, allowed in (("--swf-processors", "processors", swf_processors, "PROCESSORS"),
                                      ("--swf-layout", "layout", swf_layout, "LAYOUTS")):
        if value is None:
            continue
        from makeway.sim.importers import swf

        choices = getattr(swf, allowed)
        if value not in choices:
            raise fail(f"{flag}: {value!r} is not one of {', '.join(choices)}")
        if trace is not None:
            from makeway.sim.importers import detect_format

            fmt = trace_format or detect_format(trace)
            if fmt != "swf":
                raise fail(f"{flag}: only for SWF traces ({trace} is {fmt})")
        options[key] = value
    return qmap, options


_QUEUE_MAP_HELP = ("trace queue/user/VC -> config queue: a YAML file ({by, map, rules, default}) or inline "
                   "'PATTERN=QUEUE,...' globs, '*=QUEUE' the default (docs/studies.md)")
_SCALE_HELP = "scale the node count of every node kind by F > 0 (rounded half up, at least 1 per kind)"
_SAVE_HELP = "write the cluster this run uses (built from the trace, scaled) as a config YAML"
_SWF_HELP = "SWF processors: requested (field 8, default) or allocated (field 5) first"
_LAYOUT_HELP = ("SWF machine: pool (one node of every processor, a job one task; default) or nodes (one node "
                "per processor as AccaSim models it, a job a gang of one-cpu tasks)")
_ENGINE_HELP = "auto (the struct-of-arrays core where it applies) or general (always the reference engine)"


@app.command()
def simulate(
    config: Optional[Path] = typer.Argument(None, help="cluster config (YAML); optional when the trace describes its cluster"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="trace file (default: the config's trace)"),
    trace_format: Optional[str] = typer.Option(None, "--trace-format", help="jsonl, swf, google2011, philly, alibaba (default: detected)"),
    model: Optional[str] = typer.Option(None, "--model", help="override the config's preemption model"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write full results (JSON) here"),
    horizon: Optional[float] = typer.Option(None, "--horizon", help="stop at this simulated time (s)"),
    strict: Optional[bool] = typer.Option(None, "--strict/--lenient", help="an unreadable trace record is an error (default for makeway JSONL) or skipped with a warning (default for real traces)"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="run even when no workload could be read"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing but errors"),
    queue_map: Optional[str] = typer.Option(None, "--queue-map", help=_QUEUE_MAP_HELP),
    scale_cluster: Optional[float] = typer.Option(None, "--scale-cluster", metavar="F", help=_SCALE_HELP),
    save_cluster: Optional[Path] = typer.Option(None, "--save-cluster", help=_SAVE_HELP),
    swf_processors: Optional[str] = typer.Option(None, "--swf-processors", help=_SWF_HELP),
    swf_layout: Optional[str] = typer.Option(None, "--swf-layout", help=_LAYOUT_HELP),
    engine: str = typer.Option("auto", "--engine", help=_ENGINE_HELP),
) -> None:
    """Replay a trace against a cluster config and print the summary."""
    from makeway.config import trace_path

    check_output(out, "--out")
    check_output(save_cluster, "--save-cluster")
    check_horizon(horizon)
    if engine not in ("auto", "general"):
        raise fail(f"--engine: {engine!r} is not one of auto, general")
    qmap, topts = _study_options(trace, trace_format, queue_map, swf_processors, swf_layout)
    cfg = _config_for(config, trace, trace_format, quiet, scale_cluster, save_cluster, swf_layout)
    if model is not None:
        cfg = cfg.model_copy(update={"preemption": cfg.preemption.model_copy(update={"model": model})})
        from makeway.config import parse_config

        cfg = parse_config(cfg.model_dump(), "--model")
    tpath = trace or (trace_path(cfg, config) if config is not None else None)
    if (swf_processors is not None or swf_layout is not None) and trace is None:
        _study_options(tpath, trace_format, None, swf_processors, swf_layout)
    rec = run_simulation(cfg, tpath, trace_format, strict=strict, horizon=horizon, progress=not quiet,
                         allow_empty=allow_empty, queue_map=qmap, trace_options=topts, engine=engine)
    summary = rec.summary()
    if not quiet:
        from makeway.render import print_summary

        print_summary(summary, cfg.preemption.model, f"makeway simulate: {cfg.name}")
    if out is not None:
        meta = {"config": {"name": cfg.name, "model": cfg.preemption.model, "path": str(config) if config else None},
                "trace": str(tpath) if tpath else None}
        from makeway.sim.results_io import write_results

        write_results(rec, meta, out)
        if not quiet:
            typer.echo(f"results written to {out}")


def run_simulation(cfg, tpath: Optional[Path], trace_format: Optional[str], *, strict: Optional[bool] = None,
                   horizon: Optional[float] = None, progress: bool = False, allow_empty: bool = False,
                   queue_map=None, trace_options: Optional[dict] = None, engine: str = "auto"):
    """``makeway.sim.run.run`` with a progress line, warnings on stderr and Ctrl-C said in one line."""
    from makeway.sim.importers import ImportStats
    from makeway.sim.run import RunInterrupted, run

    stats = ImportStats()
    try:
        with _Progress(progress) as bar:
            rec = run(cfg, tpath, trace_format, strict=strict, horizon=horizon, allow_empty=allow_empty,
                      progress=bar if bar.enabled else None, stats=stats, queue_map=queue_map,
                      trace_options=trace_options, engine=engine)
    except RunInterrupted as exc:
        typer.echo(f"interrupted {exc.where}; no results were written", err=True)
        raise typer.Exit(130) from None
    _warn_stats(stats, strict)
    _warn_unplaceable(rec)
    return rec


trace_app = typer.Typer(no_args_is_help=True, context_settings=_HELP, help="Work with trace files.")
app.add_typer(trace_app, name="trace")


@trace_app.command("convert")
def trace_convert(
    source: Path = typer.Argument(..., help="trace in any supported format"),
    dest: Path = typer.Argument(..., help="makeway JSONL trace to write ('-' for stdout)"),
    trace_format: Optional[str] = typer.Option(None, "--trace-format", help="source format (default: detected)"),
    strict: bool = typer.Option(False, "--strict", help="an unreadable record is an error"),
    limit: Optional[int] = typer.Option(None, "--limit", help="stop after this many records"),
) -> None:
    """Convert a real trace (SWF, Google 2011, Philly, Alibaba) into makeway JSONL, streaming."""
    import json

    from makeway.sim.importers import ImportStats, read_trace

    check_output(dest, "OUT")
    stats = ImportStats()
    out = sys.stdout if str(dest) == "-" else dest.open("w")
    n = 0
    try:
        for rec in read_trace(source, trace_format, strict=strict, stats=stats):
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
            n += 1
            if limit is not None and n >= limit:
                break
    finally:
        if out is not sys.stdout:
            out.close()
    _warn_stats(stats, strict)
    if out is not sys.stdout:
        typer.echo(f"wrote {n} records to {dest}")


def _read_results(path: Path) -> dict:
    import json

    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise fail(f"{path}: no such file") from None
    except ValueError as exc:
        raise fail(f"{path}: not a results file (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("makeway.results/"):
        raise fail(f"{path}: not a makeway results file (no 'schema': 'makeway.results/1')")
    return data


@app.command()
def report(
    results: Path = typer.Argument(..., help="results JSON written by 'makeway simulate --out'"),
    output: Path = typer.Option(Path("report.html"), "-o", "--output", help="HTML file to write"),
) -> None:
    """Write one self-contained HTML report with plots (utilisation, queues, waits, preemptions, waste)."""
    from makeway.reports.html import render_report

    check_output(output, "--output")
    output.write_text(render_report(_read_results(results)))
    typer.echo(f"wrote {output}")


@app.command()
def explain(
    args: List[str] = typer.Argument(..., help="RESULTS WORKLOAD (a results file), or JOB (a live job, with --server)"),
    server: Optional[str] = typer.Option(None, "--server", help="live server URL (default: $MAKEWAY_SERVER)"),
    output: str = typer.Option("table", "--output", "-o", help="table or json (live jobs)"),
    token: Optional[str] = typer.Option(None, "--token", help="bearer token for --server (default: $MAKEWAY_TOKEN)",
                                        show_default=False),
) -> None:
    """Tell the story of one workload: why it waited, who preempted it and why, what was lost.

    From a results file written by 'makeway simulate --out' (RESULTS WORKLOAD), or from the live
    journal of a server (JOB with --server or $MAKEWAY_SERVER)."""
    import os

    if len(args) == 2:
        from makeway.reports.explain import explain as story

        typer.echo(story(_read_results(Path(args[0])), args[1]))
        return
    if len(args) == 1 and (server or os.environ.get("MAKEWAY_SERVER")):
        from makeway.cli_live import explain_live

        explain_live(args[0], server, output, token)
        return
    raise fail("explain: give RESULTS WORKLOAD, or JOB with --server/MAKEWAY_SERVER")


@app.command()
def pending(
    results: Path = typer.Argument(..., help="results JSON written by 'makeway simulate --out'"),
    queue: Optional[str] = typer.Option(None, "--queue", help="only this queue's workloads"),
    at: Optional[str] = typer.Option(None, "--at", help="simulated time: seconds, or 90m, 2h, 1.5d (default: the end of the run)"),
    output: str = typer.Option("table", "--output", "-o", help="table or json"),
) -> None:
    """List what was pending at a time and why (squeue-like), from the reasons the run recorded."""
    import json

    from makeway.reports import derive as d
    from makeway.reports.waiting import REASONS, parse_time, pending_at

    if output not in ("table", "json"):
        raise fail(f"--output: {output!r} is not table or json")
    try:
        when = parse_time(at, "--at") if at is not None else None
        view = pending_at(_read_results(results), when, queue)
    except MakewayError as exc:
        raise fail(str(exc)) from None
    if output == "json":
        typer.echo(json.dumps(view, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    rows = view["pending"]
    table = Table(title=f"pending at {d.fmt_time(view['at'])}" + (f" in queue {queue}" if queue else "")
                  + f": {len(rows)}", title_justify="left", box=None)
    for col in ("WORKLOAD", "QUEUE", "PRIO", "SUBMIT", "WAITED", "REASON", "SINCE", "BLOCKING"):
        table.add_column(col, justify="right" if col in ("PRIO", "WAITED") else "left", no_wrap=col == "WORKLOAD")
    def short(s: float | None) -> str:
        if s is None:
            return "-"
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if abs(s) >= size:
                return f"{s / size:.1f}{unit}"
        return f"{s:.0f}s"

    for r in rows:
        table.add_row(str(r["id"]) + (" (evicted)" if r["restart"] else ""), str(r["queue"]), str(r["priority"]),
                      f"{r['submit']:.0f}", short(r["waited"]), r["reason"] or "-",
                      "-" if r["reason_since"] is None else f"{r['reason_since']:.0f}", r["blocking"] or "")
    console = Console(width=max(100, Console().width))
    console.print(table)
    for code, n in view["by_reason"].items():
        console.print(f"  {n:>6}  {code}: {REASONS.get(code, 'no reason recorded at that time')}", highlight=False)


@app.command()
def compare(
    configs: Optional[List[Path]] = typer.Argument(None, help="cluster configs (none: the cluster --trace describes)"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="trace replayed under every config (default: each config's own)"),
    trace_format: Optional[str] = typer.Option(None, "--trace-format"),
    models: Optional[List[str]] = typer.Option(None, "--model", help="run each config under these models (repeatable, or comma-separated)"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="also write a side-by-side HTML report"),
    strict: Optional[bool] = typer.Option(None, "--strict/--lenient", help="unreadable trace records: an error (default for makeway JSONL) or skipped with a warning"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="run even when no workload could be read"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    horizon: Optional[float] = typer.Option(None, "--horizon", help="stop every run at this simulated time (s)"),
    queue_map: Optional[str] = typer.Option(None, "--queue-map", help=_QUEUE_MAP_HELP),
    scale_cluster: Optional[float] = typer.Option(None, "--scale-cluster", metavar="F", help=_SCALE_HELP),
    save_cluster: Optional[Path] = typer.Option(None, "--save-cluster", help=_SAVE_HELP + " (the first config's)"),
    swf_processors: Optional[str] = typer.Option(None, "--swf-processors", help=_SWF_HELP),
    swf_layout: Optional[str] = typer.Option(None, "--swf-layout", help=_LAYOUT_HELP),
) -> None:
    """Run the same trace under several configs or models and show the outcomes side by side."""
    from rich.console import Console
    from rich.table import Table

    from makeway.config import parse_config, trace_path
    from makeway.reports.compare import compare_rows, render_compare

    check_output(output, "--output")
    check_output(save_cluster, "--save-cluster")
    check_horizon(horizon)
    models = [m.strip() for arg in (models or []) for m in arg.split(",") if m.strip()] or None
    qmap, topts = _study_options(trace, trace_format, queue_map, swf_processors, swf_layout)
    configs = list(configs or [])
    if not configs and trace is None:
        raise fail("compare: give cluster configs, or --trace with a trace that describes its cluster")
    planned = []
    for i, cpath in enumerate(configs or [None]):  # every config and model is checked before the first run
        cfg = _config_for(cpath, trace, trace_format, quiet, scale_cluster, save_cluster if i == 0 else None,
                          swf_layout)
        for m in (models or [cfg.preemption.model]):
            data = cfg.model_dump()
            data["preemption"]["model"] = m
            planned.append((cpath, m, parse_config(data, str(cpath or trace))))
    if len(planned) < 2:
        raise fail("compare needs at least two runs: give several configs or several --model")
    runs, labels = [], []
    for cpath, m, run_cfg in planned:
        tpath = trace or (trace_path(run_cfg, cpath) if cpath is not None else None)
        if (swf_processors is not None or swf_layout is not None) and trace is None:
            _study_options(tpath, trace_format, None, swf_processors, swf_layout)
        rec = run_simulation(run_cfg, tpath, trace_format, progress=not quiet, allow_empty=allow_empty, strict=strict,
                             horizon=horizon, queue_map=qmap, trace_options=topts)
        label = f"{run_cfg.name}/{m}" if len(configs) > 1 else m
        runs.append(rec.results({"config": {"name": run_cfg.name, "model": m, "path": str(cpath) if cpath else None},
                                 "trace": str(tpath) if tpath else None}))
        labels.append(label)
    rows = compare_rows(runs, labels)
    table = Table(title="makeway compare", title_justify="left")
    table.add_column(rows[0][0], style="bold")
    for lbl in rows[0][1]:
        table.add_column(lbl, justify="right")
    for name, values in rows[1:]:
        table.add_row(name, *values)
    console = Console()
    console.print(table)
    from makeway.reports.compare import preemption_digest

    for label, run in zip(labels, runs):
        lines = preemption_digest(run)
        console.print(f"[bold]{label}[/bold]: " + ("who made way for whom, and why" if lines else "no preemptions"),
                      highlight=False)
        for line in lines:
            console.print("  " + line, highlight=False, markup=False, soft_wrap=True)
    if output is not None:
        output.write_text(render_compare(runs, labels))
        typer.echo(f"wrote {output}")


@app.command()
def bench(
    quick: bool = typer.Option(False, "--quick", help="smaller scenarios (whole set well under 2 minutes)"),
    only: Optional[List[str]] = typer.Option(None, "--only", help="run only these scenarios (repeatable)"),
    out: Path = typer.Option(Path("bench-results.json"), "--out", help="where to write the figures"),
    growth: bool = typer.Option(False, "--growth", help="also run each scalable scenario at 1/4 and full size "
                                "(1/16 and 1/4 with --quick) and report the exponent k of cost ~ n^k"),
    repeat: int = typer.Option(1, "--repeat", min=1, help="run each scenario this many times and report its best "
                               "run, every run's value beside it (with --growth also each size, the exponent taken "
                               "between the smallest costs)"),
) -> None:
    """Run the named benchmark scenarios; print a table of figures and write bench-results.json."""
    import json
    import time

    from rich.console import Console
    from rich.table import Table

    from makeway.benchmarks import SCENARIOS, best_of, met, selected

    check_output(out, "--out")
    names = selected(only)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise fail(f"--only: unknown scenario {unknown[0]!r} (known: {', '.join(SCENARIOS)})")
    from makeway.machine_ref import reference

    figures: list[dict] = []
    console = Console(stderr=True)
    before = reference()
    for name in names:
        t0 = time.perf_counter()
        with console.status(f"bench {name}..."):
            got = best_of([SCENARIOS[name](quick) for _ in range(repeat)])
        for f in got:
            f.setdefault("scenario", name)
        figures.extend(got)
        console.log(f"{name}: {time.perf_counter() - t0:.1f} s")
    if growth:
        from makeway import growth as grow

        for name in grow.for_bench(names, bool(only)):
            t0 = time.perf_counter()
            with console.status(f"growth {name}..."):
                figures.append({**grow.growth(name, quick, repeat), "scenario": name})
            console.log(f"growth {name}: {time.perf_counter() - t0:.1f} s")
    after = reference()
    figures.append({"metric": "machine_reference_s", "value": round(min(before, after), 4), "unit": "s",
                    "target": None, "before": round(before, 4), "after": round(after, 4),
                    "note": "makeway.machine_ref: fixed Python work timed before and after the scenarios; "
                            "divide a CPU figure by it to compare machines or hours"})
    table = Table(title=f"makeway bench{' --quick' if quick else ''}", title_justify="left")
    for col in ("metric", "value", "unit", "target", "met"):
        table.add_column(col, justify="right" if col in ("value", "target") else "left")
    for f in figures:
        target, ok = f.get("target"), met(f)
        table.add_row(f["metric"], f"{f['value']:,.4g}", f["unit"], "-" if target is None else f"{target:,}",
                      "" if ok is None else ("yes" if ok else "no"))
    Console().print(table)
    out.write_text(json.dumps(figures, indent=1))
    typer.echo(f"wrote {out}")


@app.command()
def sweep(
    grid: Path = typer.Argument(..., help="GRID.yaml: configs x traces x models x settings"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory: cells/, table.csv, report.html (default: GRID's name + '.sweep' beside it)"),
    executor: str = typer.Option("process", "--executor", help="process (local pool), ray or dask"),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="parallel cells on this machine (default: CPU count)"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray or Dask cluster to run on (default: a local one)"),
    max_cells: Optional[int] = typer.Option(None, "--max-cells", help="run at most this many unfinished cells, then stop"),
    no_report: bool = typer.Option(False, "--no-report", help="write the table only, not report.html"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing but errors"),
) -> None:
    """Run a grid of what-ifs; finished cells are kept (content-addressed) and skipped on a rerun."""
    from makeway.sweep.cli import sweep_command

    sweep_command(grid, out, executor, jobs, address, max_cells, not no_report, quiet)


@app.command("import")
def import_config(
    kind: str = typer.Argument(..., help="native format: kueue, yunikorn, ytsaurus, symphony (the models with an importer)"),
    files: List[Path] = typer.Argument(..., help="native config or manifest files"),
    output: Path = typer.Option(..., "-o", "--output", help="makeway config to write (YAML)"),
) -> None:
    """Convert a native scheduler config (Kueue manifests, YuniKorn queues.yaml, ...) into a makeway config."""
    import yaml

    from makeway.config import parse_config
    from makeway.registry import importers, resolve

    known = importers()
    if kind not in known:
        raise fail(f"kind: unknown importer {kind!r} (known: {', '.join(known)})")
    check_output(output, "--output")
    for f in files:
        if not f.is_file():
            raise fail(f"{f}: no such file")
    config, warnings = resolve(known[kind])(list(files))
    parse_config(config, f"{kind} import of {', '.join(map(str, files))}")
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    output.write_text(yaml.safe_dump(config, sort_keys=False))
    typer.echo(f"wrote {output}")


@app.command()
def agent(
    server: Optional[str] = typer.Option(None, "--server", envvar="MAKEWAY_SERVER",
                                         help="server URL, or URL1,URL2 for a leader and its standbys "
                                              "(env MAKEWAY_SERVER)"),
    node: Optional[str] = typer.Option(None, "--node", help="node name (default: this machine's host name)"),
    capacity: Optional[str] = typer.Option(None, "--capacity", help="e.g. cpu=4,memory=8Gi (default: this machine's)"),
    labels: Optional[str] = typer.Option(None, "--labels", help="k=v,... offered to the scheduler"),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="attempt directories and reports "
                                           "(default: ~/.local/state/makeway/agent-NODE)"),
) -> None:
    """Run this machine's tasks for a makeway server: register, heartbeat, start and stop attempts."""
    import logging
    import os
    import signal
    import socket

    from makeway.live.agent import Agent, machine_capacity, parse_capacity, parse_pairs
    from makeway.live.client import parse_servers

    if not server:
        raise fail("--server: required (or set MAKEWAY_SERVER)")
    servers = parse_servers(server)
    node = node or socket.gethostname()
    cap = parse_capacity(capacity) if capacity else machine_capacity()
    if not cap:
        raise fail("--capacity: no resources given")
    if workdir is None:
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        workdir = state / "makeway" / f"agent-{node}"
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"--workdir: cannot create {workdir}: {exc.strerror}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    worker = Agent(servers, node, cap, parse_pairs(labels, "--labels"), workdir)

    def _interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    typer.echo(f"makeway agent: node {node} -> {', '.join(servers)} (workdir {workdir})", err=True)
    worker.run()


import makeway.cli_live  # noqa: E402,F401  (registers serve, submit, jobs, queues, nodes, cancel)


def error_line(exc: Exception) -> str:
    """The one stderr line for a user error (a message quoting a file's text may hold newlines)."""
    return "error: " + " ".join(str(exc).split())


def main() -> None:
    from makeway.core.resources import QuantityError
    from makeway.core.state import StateError

    try:
        app()
    except MakewayError as exc:
        typer.echo(error_line(exc), err=True)
        sys.exit(2)
    except (QuantityError, StateError) as exc:
        # validation at load time should make these unreachable (the fuzz test runs without this net)
        typer.echo(error_line(exc), err=True)
        sys.exit(2)

