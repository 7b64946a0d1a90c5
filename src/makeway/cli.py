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


def main() -> None:
    try:
        app()
    except MakewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
