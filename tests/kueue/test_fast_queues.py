"""The compiled Kueue loop's twin runs (``policies.kueue.fast.queues.runs``): where the run of
entries with one key and waiting mark ends, for every entry of an unparked list. The twin scan
takes a run at a step, so a run that ran on past a change of key or mark would park a head
that must be evaluated (the loop's drawn tests against the model catch that whole; this pins it
down)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from makeway.policies.kueue.fast import layout as L  # noqa: E402
from makeway.policies.kueue.fast.queues import runs  # noqa: E402


def _ends(keys, waits, lo):
    """``runs`` over a list at offset ``lo`` whose ``j``-th entry has ``keys[j]`` and ``waits[j]``
    (the list's order is not the workloads' numbering); the ends relative to ``lo``, and what
    ``runs`` left outside the list's slice."""
    W = len(keys)
    WI = np.zeros((max(1, W), L.NWI), np.int64)
    order = np.arange(W)[::-1]
    WI[order, L.W_KEY] = keys
    WI[order, L.W_WAIT] = waits
    PL = np.full(lo + W + 2, -1, np.int64)
    PL[lo:lo + W] = order
    PK = np.zeros_like(PL)
    RE = np.full_like(PL, -7)
    runs(WI, PL, PK, RE, lo, W)
    return (RE[lo:lo + W] - lo).tolist(), RE[:lo].tolist() + RE[lo + W:].tolist()


@pytest.mark.parametrize("keys, waits, want", [
    ([], [], []),
    ([3], [0], [1]),
    ([1, 1, 1], [0, 0, 0], [3, 3, 3]),
    ([1, 1, 2, 2, 1], [0, 0, 0, 0, 0], [2, 2, 4, 4, 5]),  # a key met again later: a run of its own
    ([5, 5, 5, 5], [0, 1, 1, 0], [1, 3, 3, 4]),  # the waiting mark splits a key's run
    ([1, 2, 3], [0, 0, 0], [1, 2, 3]),
])
@pytest.mark.parametrize("lo", [0, 3])
def test_each_entry_knows_where_its_run_ends(keys, waits, want, lo):
    got, outside = _ends(keys, waits, lo)
    assert got == want
    assert outside == [-7] * len(outside)
