"""What skipped quiet calls would have moved in the YTsaurus model, without replaying them.

Two things change over a quiet stretch (``YTsaurusModel.skip_periodic``): the time of the last fair
share update and each node's preemptive backoff. Both are chains over the skipped instants (the next
link is the first instant at or past the previous one plus a period) and both are found from the
rows in closed form (``makeway.core.periodic``), in the same float arithmetic as the unskipped calls.
"""

from __future__ import annotations

import math

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.heartbeat import Backoff
from makeway.core.periodic import Row, Skipped, advance

_FIRST_WINDOW = 8      # update periods replayed at the end of a stretch, grown fourfold until they agree


def _chain(s: float, period: float, instants: list[float]) -> float:
    """The last refresh over sorted ``instants`` after one at ``s``: ``schedule`` refreshes at the
    first instant ``now >= snap.time + update_period - EPS``."""
    thr = s + period - EPS
    for x in instants:
        if x >= thr:
            s = x
            thr = s + period - EPS
    return s


def last_update(since: float, period: float, skipped: Skipped) -> float:
    """The time of the last fair share refresh over a skipped stretch, the last one before it at ``since``.

    Consecutive refreshes are at most ``period`` plus one tick apart (ticks run all through the
    stretch), so the refresh chain has a link among the instants of any window that long. Replaying
    the end of the stretch from every instant of such a window gives the answer when all those
    chains end on the same refresh (they merge within a few ticks unless heartbeats and ticks
    keep landing within EPS of each other); otherwise a longer window, at worst the whole stretch.
    """
    ticks = skipped.ticks
    if ticks:
        reach = period + max(r.period for r in ticks) + 1e-6
        width = _FIRST_WINDOW * max(period, reach)
        while skipped.end - width > skipped.now + reach:
            lo = skipped.end - width
            instants = skipped.instants(lo)
            ends = {_chain(c, period, instants) for c in instants if c < lo + reach}
            if len(ends) == 1:
                return ends.pop()
            width *= 4
    return _chain(since, period, skipped.instants())


def _stride(beat: float, backoff: float, horizon: float) -> int | None:
    """Every how many heartbeats (``beat`` apart) the backoff lets one run, when that holds for
    every heartbeat up to ``horizon`` despite rounding; None when rounding could decide."""
    if beat == backoff:
        return 2  # the next heartbeat lands exactly on last + backoff (the same float sum): not past it
    ulp = math.ulp(abs(horizon) + beat + backoff)
    k = math.floor(backoff / beat) + 1
    margin = 4 * (k + 1) * ulp
    if k * beat > backoff + margin and (k - 1) * beat < backoff - margin:
        return k
    return None


def catch_up_backoff(backoff: Backoff, node: str, row: Row) -> None:
    """``Backoff.should_run`` over a node's skipped heartbeats: the last time it ran is all that stays."""
    if not row.count:
        return
    period, last = backoff.period, backoff.last
    prior = last.get(node)
    first = 0 if prior is None else advance(row.start, row.period, prior + period, True, row.count)[0]
    if first >= row.count:
        return
    k = _stride(row.period, period, row.last if row.last is not None else row.start)
    if k is not None:
        last[node] = row.nth(first + k * ((row.count - 1 - first) // k))
        return
    t = prior
    for h in row.times():
        if t is None or h > t + period:
            t = h
    if t is not None:
        last[node] = t
