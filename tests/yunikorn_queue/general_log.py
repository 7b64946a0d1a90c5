"""A stand-in for the compiled YuniKorn loop (``pack.run``): the general engine runs the model, and
its decisions are written down in the loop's log format (``policies.yunikorn.fast.layout``).

What the recording (``sim.fast.yunikorn_record.LogRun``) reads of a compiled run can so be tested
before the loop exists, and against the model itself: every wake-up instant is a call
(``skip_wakes`` answers None, as the loop runs every wake), each ``schedule`` call gets its
number, its instant and what ``next_wakeup`` answers after it, and each reservation that timed
out at a call's start (``_drop_stale``) is logged before its decisions. Tasks are numbered as
``pack.Packed`` numbers them: each workload's in index order, the workloads in trace order.
"""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from makeway.core.decisions import Preempt, Start
from makeway.policies.yunikorn.fast import layout as L
from makeway.sim.engine import SimOptions, Simulation


def run(state: Any, model: Any, workloads: list, horizon: float = math.inf, window: float = math.inf,
        **_: Any) -> SimpleNamespace:
    """``pack.run``'s answer for this run, made by the general engine (``window`` is the no-progress
    watch's; a stopped run is reported as the loop would report it)."""
    state, model = copy.deepcopy(state), copy.deepcopy(model)  # the loop reads them, it changes neither
    wls = list(workloads)
    NT = np.array([wl.groups[0].count for wl in wls], np.int64)
    TOFF = np.zeros(len(wls) + 1, np.int64)
    np.cumsum(NT, out=TOFF[1:])
    TW = np.repeat(np.arange(len(wls), dtype=np.int64), NT)
    T_IX = np.arange(len(TW), dtype=np.int64) - TOFF[TW]
    first = {wl.id: int(TOFF[i]) for i, wl in enumerate(wls)}

    def task(tid: str) -> int:
        wl_id, _, i = tid.rsplit("/", 2)
        return first[wl_id] + int(i)
    node_names = list(state.nodes)
    nodes = {n: i for i, n in enumerate(node_names)}
    rows: list[tuple[int, int, int, int, int]] = []
    lt: list[float] = []
    ct: list[float] = []
    wk: list[float] = []
    resv: dict[str, str] = {}  # what the log says is reserved, checked against the model's

    schedule, drop_stale, next_wakeup = model.schedule, model._drop_stale, model.next_wakeup

    def log(kind: int, a: int, b: int, c: int, now: float) -> None:
        rows.append((kind, a, b, c, len(ct)))
        lt.append(now)

    def wrapped_drop_stale(state: Any, now_us: int, *args: Any, **kwargs: Any) -> None:
        before = dict(model.reservations)
        drop_stale(state, now_us, *args, **kwargs)
        for tid in before:
            if tid not in model.reservations:
                wl_id = tid.rsplit("/", 2)[0]
                if tid in state.pending.get(wl_id, ()):
                    log(L.L_UNRESERVE, task(tid), 0, 0, ct[-1])
                resv.pop(tid, None)

    def wrapped_schedule(state: Any, now: float) -> list:
        ct.append(now)
        decisions = schedule(state, now)
        for d in decisions:
            if isinstance(d, Start):
                log(L.L_START, task(d.task), nodes[d.node], 0, now)
                resv.pop(d.task, None)
            elif isinstance(d, Preempt):
                ask = d.reason.preemptor
                assert d.reason.rule == L.RULE, d.reason.rule
                node = d.reason.values["node"]
                log(L.L_PREEMPT, task(d.allocation), task(ask), nodes[node], now)
                resv.setdefault(ask, node)
            else:
                raise AssertionError(f"not in the log's class: {d!r}")
        wake = next_wakeup(state, now)
        wk.append(math.nan if wake is None else wake)
        pending = state.pending
        held = {t: n for t, n in model.reservations.items() if t in pending.get(t.rsplit("/", 2)[0], ())}
        mine = {t: n for t, n in resv.items() if t in pending.get(t.rsplit("/", 2)[0], ())}
        assert held == mine, (now, held, mine)
        return decisions

    model.schedule, model._drop_stale = wrapped_schedule, wrapped_drop_stale
    model.skip_wakes = lambda *args: None
    try:
        sim = Simulation(state, model, SimOptions(horizon=None if horizon == math.inf else horizon,
                                                  no_progress_window=window))
        sim.add_workloads(wls)
        rec = sim.run()
    finally:
        del model.schedule, model._drop_stale, model.skip_wakes
    n = len(rows)
    return SimpleNamespace(wls=wls, node_names=node_names, TW=TW, TOFF=TOFF, NT=NT, T_IX=T_IX,
                           LOG=np.array(rows, np.int64).reshape(n, L.NLOG_COLS),
                           LT=np.array(lt, np.float64), nlog=n, calls=len(ct), CT=np.array(ct, np.float64),
                           WK=np.array(wk, np.float64), stopped=rec.stopped_reason is not None
                           and rec.stopped_reason.startswith("no-progress"), recorder=rec)
