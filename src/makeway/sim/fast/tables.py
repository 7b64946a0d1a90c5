"""The results of a compiled run read from its arrays: waits, slowdowns, the queue table and the
workload rows, the same numbers (and bytes, once written) as ``Recorder`` computes from its dicts.

Why: after the compiled loop, reading the results one workload at a time (dict lookups per row,
one JSON encoding per row) cost more than the simulation. Elementwise arithmetic is done by numpy,
which rounds each operation as Python does; sums stay Python's ``sum`` over lists in the order the
reference adds them, since a pairwise sum would round differently.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import numpy as np

from makeway.sim.fast import layout as K
from makeway.sim.fast.compiled import CODES
from makeway.sim.metrics import percentile


def _slowdowns(sim: Any, rows: np.ndarray) -> list[float]:
    """Bounded slowdowns of the finished ones among ``rows`` (in that order), as ``Recorder``."""
    fin = sim.WF[rows, K.FIN]
    done = rows[~np.isnan(fin)]
    if not done.shape[0]:
        return []
    wall = sim.WF[done, K.FIN] - sim.WF[done, K.SUB]
    return np.maximum(1.0, wall / np.maximum(sim.dur[done], 10.0)).tolist()


def finished_rows(sim: Any) -> np.ndarray:
    return sim.FNL[: int(sim.IS[K.NFINISHED])].astype(np.int64)


def slowdowns(sim: Any) -> list[float]:
    return _slowdowns(sim, finished_rows(sim))


def waits(sim: Any, rows: np.ndarray | None = None) -> list[float]:
    """Sorted waits of the started ones (among ``rows``)."""
    nsub = int(sim.IS[K.NSUB])
    rows = np.arange(nsub) if rows is None else rows
    first = sim.WF[rows, K.FIRST]
    started = ~np.isnan(first)
    return np.sort(first[started] - sim.WF[rows[started], K.SUB]).tolist()


def unfinished(sim: Any) -> list[str]:
    nsub = int(sim.IS[K.NSUB])
    ids = sim.ids
    return [ids[w] for w in np.flatnonzero(np.isnan(sim.WF[:nsub, K.FIN])).tolist()]


def queue_table(rec: Any, sim: Any) -> dict[str, Any]:
    """``Recorder.queue_table`` of a compiled run."""
    state = rec.state
    nsub = int(sim.IS[K.NSUB])
    qcol = sim.WI[:nsub, K.Q].astype(np.int64)
    order = np.argsort(qcol, kind="stable")  # each queue's rows in submission order
    bounds = np.searchsorted(qcol[order], np.arange(len(sim.q_names) + 1))
    finished = ~np.isnan(sim.WF[:nsub, K.FIN])
    out = {}
    victims = rec.preempt_count
    for q in state.queues:
        i = sim.qix[q]
        rows = order[bounds[i]:bounds[i + 1]]
        spec = state.queues[q]
        if not rows.shape[0] and not spec.children and q not in rec.queue_preemptions:
            continue
        w = waits(sim, rows)
        slow = _slowdowns(sim, rows)
        ids = sim.ids
        out[q] = {"jobs": int(rows.shape[0]), "finished": int(finished[rows].sum()),
                  "wait_mean_s": sum(w) / len(w) if w else 0.0,
                  "wait_p50_s": percentile(w, 50), "wait_p95_s": percentile(w, 95),
                  "wait_p99_s": percentile(w, 99),
                  "bounded_slowdown_mean": sum(slow) / len(slow) if slow else 0.0,
                  "preemptions": rec.queue_preemptions.get(q, 0),
                  "victim_workloads": sum(1 for r in rows.tolist() if ids[r] in victims) if victims else 0,
                  "wasted_resource_seconds": dict(sorted(rec.queue_wasted.get(q, {}).items())),
                  "guaranteed": spec.guaranteed, "max": spec.max}
    return out


def _trail_texts(sim: Any, log: Any, lo: int, hi: int) -> dict[int, str]:
    """Row -> its pending-reason trail as JSON text (``[[t,"code",null],...]``) for rows ``lo:hi``,
    read from the log arrays in one go rather than a list of lists per row."""
    starts = log.starts
    a, b = int(starts[lo]), int(starts[hi])
    if a == b:
        return {}
    sel = log.order[a:b]
    ts = sim.TRT[sel]
    if np.isfinite(ts).all():
        tt = list(map(repr, ts.tolist()))
    else:
        tt = list(map(json.JSONEncoder(separators=(",", ":")).encode, ts.tolist()))
    items = [f"[{t},{_CODE_TEXT[c]},null]" for t, c in zip(tt, sim.TRC[sel].tolist())]
    at = (starts[lo:hi + 1] - a).tolist()
    return {lo + k: "[" + ",".join(items[at[k]:at[k + 1]]) + "]"
            for k in np.flatnonzero(starts[lo + 1:hi + 1] > starts[lo:hi]).tolist()}


_CODE_TEXT = [json.dumps(c) for c in CODES]
_BLOCK = 4096


def workload_json(rec: Any, sim: Any) -> Iterator[str]:
    """Each workload row as ``json.JSONEncoder(separators=(",", ":"), default=str)`` encodes
    ``Recorder.iter_workload_rows``' row, in submission order."""
    if rec.preempt_count or rec.restarts:
        encode = json.JSONEncoder(separators=(",", ":"), default=str).encode
        yield from map(encode, rec.iter_workload_rows())
        return
    nsub = int(sim.IS[K.NSUB])
    WF = sim.WF
    subs = WF[:nsub, K.SUB].tolist()
    firsts = WF[:nsub, K.FIRST].tolist()
    fins = WF[:nsub, K.FIN].tolist()
    reasons = rec.pending_reasons()
    log = rec.reasons
    has_log = log is not None and hasattr(log, "starts")
    trails: dict[int, str] = {}
    dumps = json.dumps
    qtext = {q: dumps(q) for q in sim.q_names}
    enc = json.JSONEncoder(separators=(",", ":"), default=str).encode
    ptext: dict[int, str] = {}
    prio = sim.prio
    qcol = sim.WI[:, K.Q]
    qt = [qtext[q] for q in sim.q_names]
    for w in range(nsub):
        k = w % _BLOCK
        if k == 0:
            hi = min(nsub, w + _BLOCK)
            if has_log:
                trails = _trail_texts(sim, log, w, hi)
            ids = sim.ids[w:hi]
            queues = [qt[q] for q in qcol[w:hi].tolist()]
        wid = ids[k]
        sub, fs, fin = subs[w], firsts[w], fins[w]
        p = prio[w]
        if type(p) is int:  # (a dict keyed by value would take True for 1)
            pt = ptext.get(p)
            if pt is None:
                pt = ptext[p] = enc(p)
        else:
            pt = enc(p)
        reason = reasons.get(wid)
        trail = trails.get(w)
        tail = "}" if trail is None else ',"reasons":' + trail + "}"
        idt = '"' + wid + '"' if wid.isascii() and wid.isalnum() else dumps(wid)  # nothing to escape
        yield (f'{{"id":{idt},"queue":{queues[k]},"priority":{pt},"submit":{sub!r},'
               f'"first_start":{"null" if fs != fs else repr(fs)},"finish":{"null" if fin != fin else repr(fin)},'
               f'"wait":{"null" if fs != fs else repr(fs - sub)},"preemptions":0,'
               f'"pending_reason":{"null" if reason is None else dumps(reason)},"restarts":[]{tail}')
