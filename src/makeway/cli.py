"""The makeway command line. Every user error is one line on stderr and exit status 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from makeway.errors import MakewayError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="makeway: a preemptive multi-tenant cluster scheduler and simulator.")


@app.callback()
def _root() -> None:
    """makeway: a preemptive multi-tenant cluster scheduler and simulator."""


def fail(message: str) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
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


def _load_trace(path: Path, fmt: str | None):
    from makeway.sim.trace import load_jsonl

    if fmt not in (None, "jsonl"):
        from makeway.sim.importers import read_trace  # real trace formats (SWF, Google, Philly, Alibaba)
        from makeway.sim.trace import load_records

        return load_records((f"{path}:{i}", rec) for i, rec in enumerate(read_trace(path, fmt), 1))
    return load_jsonl(path)


@app.command()
def simulate(
    config: Path = typer.Argument(..., help="cluster config (YAML)"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="trace file (default: the config's trace)"),
    trace_format: Optional[str] = typer.Option(None, "--trace-format", help="jsonl, swf, google2011, philly, alibaba"),
    out: Optional[Path] = typer.Option(None, "--out", help="write full results (JSON) here"),
    horizon: Optional[float] = typer.Option(None, "--horizon", help="stop at this simulated time (s)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing but errors"),
) -> None:
    """Replay a trace against a cluster config and print the summary."""
    import json

    from makeway.config import build_state, load_config, trace_path
    from makeway.core.policy import load_model
    from makeway.render import print_summary
    from makeway.sim.engine import SimOptions, simulate as run_sim

    cfg = load_config(config)
    tpath = trace or trace_path(cfg, config)
    workloads, changes = _load_trace(tpath, trace_format) if tpath is not None else ([], [])
    state = build_state(cfg)
    for wl in workloads:
        if wl.queue not in state.queues:
            raise fail(f"{tpath}: workload {wl.id!r}: queue: unknown queue {wl.queue!r}")
    model = load_model(cfg.preemption.model, cfg.preemption.settings)
    opts = SimOptions(horizon=horizon or cfg.simulation.horizon,
                      kill_at_requested_time=cfg.simulation.kill_at_requested_time,
                      heartbeat_period=cfg.simulation.heartbeat_period)
    rec = run_sim(state, model, workloads, changes, opts)
    summary = rec.summary()
    if not quiet:
        print_summary(summary, cfg.preemption.model, f"makeway simulate: {cfg.name}")
    if out is not None:
        meta = {"config": {"name": cfg.name, "model": cfg.preemption.model, "path": str(config)},
                "trace": str(tpath) if tpath else None}
        out.write_text(json.dumps(rec.results(meta), indent=1, default=str))
        if not quiet:
            typer.echo(f"results written to {out}")


IMPORTERS = ("kueue", "yunikorn", "ytsaurus", "symphony")


@app.command("import")
def import_config(
    kind: str = typer.Argument(..., help=f"native format: {', '.join(IMPORTERS)}"),
    files: List[Path] = typer.Argument(..., help="native config or manifest files"),
    output: Path = typer.Option(..., "-o", "--output", help="makeway config to write (YAML)"),
) -> None:
    """Convert a native scheduler config (Kueue manifests, YuniKorn queues.yaml, ...) into a makeway config."""
    import importlib

    import yaml

    from makeway.config import parse_config

    if kind not in IMPORTERS:
        raise fail(f"kind: unknown importer {kind!r} (known: {', '.join(IMPORTERS)})")
    for f in files:
        if not f.is_file():
            raise fail(f"{f}: no such file")
    module = importlib.import_module(f"makeway.adapters.{kind}")
    config, warnings = module.import_files(list(files))
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    parse_config(config, f"{kind} import of {', '.join(map(str, files))}")
    output.write_text(yaml.safe_dump(config, sort_keys=False))
    typer.echo(f"wrote {output}")


def main() -> None:
    try:
        app()
    except MakewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
