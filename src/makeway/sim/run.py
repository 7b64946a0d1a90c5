"""Config + trace -> results: the simulator as one library call, shared by the CLI and (later) the service.

``run`` checks everything that can be checked before any simulation work: the trace's first workload
is read (so an empty or unreadable trace fails at once), records are checked against the config
(queues, resources, duplicate ids) and config events against the queues as earlier events left them.
JSONL traces are read whole first, so all their records and events are checked before the run;
the real-trace formats stream. Problems are ``MakewayError`` lines naming the field; a Ctrl-C
becomes ``RunInterrupted``, which says how far the run got.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable, Optional

from makeway.config import ClusterConfig, build_state, load_config, trace_path
from makeway.registry import load_model
from makeway.errors import MakewayError
from makeway.sim.engine import SimOptions, Simulation, make_simulation
from makeway.sim.importers import ImportStats, detect_format, read_trace
from makeway.sim.importers._common import Reporter
from makeway.sim.metrics import Recorder
from makeway.sim.queue_map import QueueMap
from makeway.sim.trace import ConfigChange, check_changes, parse_record


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: ``where`` says how far it got (no results exist)."""

    def __init__(self, where: str):
        super().__init__(where)
        self.where = where


def _no_workloads(tpath: Optional[Path], stats: ImportStats) -> MakewayError:
    """Why a run has nothing to simulate, in one line (the first unreadable record's problem)."""
    if tpath is None:
        return MakewayError("no trace: the config names no 'trace' and no --trace was given "
                            "(--allow-empty runs the cluster without work)")
    if stats.skipped:
        first = f", first: {stats.warnings[0]}" if stats.warnings else ""
        noun = "unreadable record" if stats.skipped == 1 else "unreadable records"
        return MakewayError(f"{tpath}: no workload could be read ({stats.skipped} {noun} "
                            f"skipped{first}); --allow-empty runs anyway")
    return MakewayError(f"{tpath}: the trace holds no workload (--allow-empty runs anyway)")


def run(cfg: ClusterConfig, trace: Optional[Path] = None, trace_format: Optional[str] = None, *,
        strict: Optional[bool] = None, horizon: Optional[float] = None, allow_empty: bool = False,
        progress: Optional[Callable[[float, int], None]] = None,
        stats: Optional[ImportStats] = None, queue_map: Optional[QueueMap] = None,
        trace_options: Optional[dict] = None, skip_idle: bool = True, engine: str = "auto") -> Recorder:
    """Simulate ``trace`` on the cluster ``cfg`` describes, under its ``preemption.model``.

    ``strict``: an unreadable record stops the run (the default for makeway JSONL) or is skipped with
    a warning (the default for real traces, which are garbled in the wild). ``stats`` (given by the caller) collects the trace reader's warnings and counts; ``progress``
    is called with (simulated time, events) as the run goes. ``queue_map`` sends each workload to
    a queue of the config (``makeway.sim.queue_map``); ``trace_options`` go to the importer (e.g.
    ``{"processors": "requested"}`` for SWF); ``skip_idle=False`` pays for every heartbeat and tick
    of idle stretches (the engine's ``SimOptions.skip_idle``); ``engine="general"`` never takes the
    fast core (``makeway.sim.fast``; the results are the same). Returns the ``Recorder``: its
    ``summary()`` and ``results(meta)`` are what ``makeway simulate`` prints and writes.
    """
    tpath = trace
    fmt = (trace_format or detect_format(tpath)) if tpath is not None else None
    if strict is None:  # makeway's own traces are written by hand: a bad line is an error, not a lost job
        strict = fmt == "jsonl"
    stats = stats if stats is not None else ImportStats()
    changes: list[ConfigChange] = []
    seen_ids: set[str] = set()
    declared = set(cfg.resources)
    rep = Reporter(tpath or "", strict, stats)
    if queue_map is not None:
        queue_map.check(cfg.queues)

    def parsed():
        for rec in read_trace(tpath, fmt, strict=strict, stats=stats, **(trace_options or {})):
            where = rec.get("id", "?") if isinstance(rec, dict) else "?"
            if queue_map is not None and isinstance(rec, dict) and rec.get("event", "submit") == "submit":
                rec = queue_map.apply(rec)
            try:
                item = parse_record(rec)
            except MakewayError as exc:
                if fmt == "jsonl":
                    raise MakewayError(f"{tpath}: record {where}: {exc}") from None
                rep.bad(f"record {where}", str(exc))  # an importer's record outside makeway's limits
                continue
            if isinstance(item, ConfigChange):
                changes.append(item)
                continue
            yield item

    def workloads():
        if tpath is None:
            return
        made = _made_workloads(tpath, fmt, strict, stats, trace_options) if queue_map is None else None
        # a reader that makes checked ``Workload``s itself (SWF) needs no records parsed here
        yield from _checked(made if made is not None else parsed(), cfg, declared, seen_ids, rep, tpath)

    cols = _columns(tpath, fmt, cfg, strict, stats, trace_options) if queue_map is None else None
    feed = workloads() if cols is None else iter(cols)
    try:
        if cols is not None:  # a columnar trace (SWF): checked as a whole, handed over whole
            cols.start()
            items, first = None, (True if len(cols) else None)
        elif fmt is None or fmt == "jsonl":
            items: list | None = sorted(feed, key=lambda w: (w.submit, w.id))
            first = items[0] if items else None
            check_changes(cfg, changes, str(tpath))
        else:
            items, first = None, next(feed, None)
    except KeyboardInterrupt:
        raise RunInterrupted(f"while reading the trace ({stats.records:,} records read)") from None
    if first is None and not allow_empty:
        raise _no_workloads(tpath, stats)

    opts = SimOptions(horizon=horizon or cfg.simulation.horizon,
                      kill_at_requested_time=cfg.simulation.kill_at_requested_time,
                      heartbeat_period=cfg.simulation.heartbeat_period, progress=progress,
                      skip_idle=skip_idle, engine=engine)
    sim = make_simulation(build_state(cfg), load_model(cfg.preemption.model, cfg.preemption.settings), opts,
                          bool(changes))
    try:
        if not isinstance(sim, Simulation):  # the fast core: no config events (JSONL is read whole)
            if cols is not None:
                return sim.run(cols)
            return sim.run(items if items is not None else itertools.chain([first] if first is not None else [], feed))
        sim.add_changes(changes)
        if items is not None:
            sim.stream_workloads(items)
        else:
            rest = [first] if first is not None and cols is None else []
            sim.stream_workloads(_with_changes(itertools.chain(rest, feed), sim, cfg, changes, str(tpath)))
        return sim.run()
    except KeyboardInterrupt:
        done, submitted = sim.recorder.counts()
        raise RunInterrupted(f"at simulated t={sim.now:,.0f} s after {sim.events_processed:,} events "
                             f"({done:,} of {submitted:,} jobs finished)") from None


def _made_workloads(tpath: Path, fmt: Optional[str], strict: bool, stats: ImportStats, trace_options: Optional[dict]):
    """Workloads straight from the reader, where it makes them (SWF), else None (records, parsed here)."""
    if fmt != "swf":
        return None
    from makeway.sim.importers import swf

    try:
        return swf.workloads(tpath, strict=strict, stats=stats, **(trace_options or {}))
    except TypeError:
        return None  # a bad option: ``read_trace`` says which


def _columns(tpath: Optional[Path], fmt: Optional[str], cfg: ClusterConfig, strict: bool, stats: ImportStats,
             trace_options: Optional[dict]):
    """The trace as columns (``importers.swf_columns``) where the reader makes them and every per-workload
    check of ``_checked`` passes for the whole of it, else None."""
    if fmt != "swf" or tpath is None:
        return None
    from makeway.sim.importers import swf_columns

    try:
        return swf_columns.columns(tpath, cfg, strict=strict, stats=stats, **(trace_options or {}))
    except TypeError:
        return None  # a bad option: ``read_trace`` says which


def _checked(made, cfg: ClusterConfig, declared: set, seen_ids: set, rep: Reporter, tpath: Path):
    """Each workload checked against the config (queue, resources) and for a repeated id."""
    queues = cfg.queues
    for item in made:
        if item.queue not in queues:
            raise MakewayError(f"{tpath}: workload {item.id!r}: queue: unknown queue {item.queue!r} "
                               f"(queues: {', '.join(list(queues)[:8])})")
        for gi, group in enumerate(item.groups):
            unknown = next((r for r, v in group.resources.items() if v and r not in declared), None)
            if unknown is not None:
                raise MakewayError(f"{tpath}: workload {item.id!r}: tasks.{gi}.resources.{unknown}: unknown "
                                   f"resource (declared: {', '.join(cfg.resources)})")
        if item.id in seen_ids:  # the JSONL reader refuses these with line numbers; importers skip
            rep.bad(f"record {item.id}", f"id: workload {item.id!r} appears twice")
            continue
        seen_ids.add(item.id)
        yield item


def run_file(config: Path, trace: Optional[Path] = None, **kwargs) -> Recorder:
    """``run`` on a config file, with the trace it names (relative to the file) unless one is given."""
    cfg = load_config(Path(config))
    return run(cfg, trace if trace is not None else trace_path(cfg, Path(config)), **kwargs)


def _with_changes(items, sim, cfg, changes, where: str):
    """Pass config events met while streaming on to the simulator, checked, as they appear."""
    applied = len(changes)
    for wl in items:
        if len(changes) > applied:
            check_changes(cfg, changes, where)
            sim.add_changes(changes[applied:])
            applied = len(changes)
        yield wl


__all__ = ["RunInterrupted", "run", "run_file"]
