"""The compiled Kueue loop's pending lists kept as runs (``policies.kueue.fast.queues``): entries
in a row with one twin code (key and waiting mark) and one parked kind. A call reads, parks and
releases a queue by the run, so its cost is the queue's runs, not its entries (issue 20).

Each operation is checked against the list it codes, entry by entry: the runs must expand to
that list and stay joined (no two neighbours alike), whatever the order of inserts, removals,
parks and releases. The loop's drawn tests against the model (``test_fast_loop``) check the
whole; this pins down each piece."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from makeway.policies.kueue.fast.layout import NODE, QUOTA  # noqa: E402
from makeway.policies.kueue.fast.queues import (runs_insert, runs_join, runs_park, runs_release,  # noqa: E402
                                                runs_remove)

LO, C = 2, 1  # the queue's slice starts past another queue's, which must stay untouched


class Runs:
    """One queue's runs in the shared arrays, beside the list of (code, kind) they code."""

    def __init__(self, size: int = 64):
        self.RC = np.full(LO + size, -7, np.int64)
        self.RK = np.full(LO + size, -7, np.int64)
        self.RM = np.full(LO + size, -7, np.int64)
        self.RN = np.zeros(3, np.int64)
        self.RN[0] = self.RN[2] = 99
        self.entries: list[tuple[int, int]] = []

    def args(self):
        return self.RC, self.RK, self.RM, self.RN, LO, C

    def coded(self) -> list[tuple[int, int]]:
        out = []
        for r in range(LO, LO + int(self.RN[C])):
            out += [(int(self.RK[r]), int(self.RM[r]))] * int(self.RC[r])
        return out

    def runs(self) -> list[tuple[int, int, int]]:
        return [(int(self.RC[r]), int(self.RK[r]), int(self.RM[r])) for r in range(LO, LO + int(self.RN[C]))]

    def insert(self, p: int, code: int, mark: int) -> None:
        runs_insert(*self.args(), p, code, mark)
        self.entries.insert(p, (code, mark))

    def remove(self, p: int) -> int:
        mark = runs_remove(*self.args(), p)
        assert mark == self.entries.pop(p)[1]
        return mark

    def park(self, r: int, o1: int, o2: int, kind: int) -> None:
        s = sum(int(self.RC[LO + k]) for k in range(r))
        runs_park(*self.args(), r, o1, o2, kind)
        runs_join(*self.args())
        for p in range(s + o1, s + o2):
            self.entries[p] = (self.entries[p][0], kind)

    def release(self, rel: bool) -> None:
        runs_release(*self.args(), rel)
        self.entries = [(k, 0 if rel or m == NODE else m) for k, m in self.entries]

    def check(self) -> None:
        assert self.coded() == self.entries
        runs = self.runs()
        assert all(n > 0 for n, _, _ in runs)
        assert all(a[1:] != b[1:] for a, b in zip(runs, runs[1:])), runs
        assert self.RN[0] == self.RN[2] == 99 and (self.RC[:LO] == -7).all()
        assert len(runs) <= len(self.entries)


@pytest.mark.parametrize("codes, inserts, want", [
    ([], [], []),
    ([4], [0], [(1, 4, 0)]),
    ([4, 4, 4], [0, 0, 1], [(3, 4, 0)]),
    ([4, 4, 6], [0, 1, 1], [(1, 4, 0), (1, 6, 0), (1, 4, 0)]),  # landing inside a run splits it
    ([4, 6, 4], [0, 1, 1], [(2, 4, 0), (1, 6, 0)]),  # landing at a run's start joins the one before
    ([4, 5], [0, 1], [(1, 4, 0), (1, 5, 0)]),  # the waiting mark is part of the code
])
def test_inserts_grow_split_or_start_runs(codes, inserts, want):
    q = Runs()
    for code, p in zip(codes, inserts):
        q.insert(p, code, 0)
        q.check()
    assert q.runs() == want


def test_a_parked_run_takes_no_unparked_twin_and_a_removal_joins_what_it_parted():
    q = Runs()
    for p in range(4):
        q.insert(p, 4, 0)
    q.park(0, 1, 3, QUOTA)
    assert q.runs() == [(1, 4, 0), (2, 4, QUOTA), (1, 4, 0)]
    q.insert(2, 4, 0)  # a requeued twin inside the parked span is not parked
    assert q.runs() == [(1, 4, 0), (1, 4, QUOTA), (1, 4, 0), (1, 4, QUOTA), (1, 4, 0)]
    q.check()
    assert q.remove(2) == 0
    assert q.runs() == [(1, 4, 0), (2, 4, QUOTA), (1, 4, 0)]
    q.check()


def test_a_release_of_room_unparks_only_what_waited_for_room():
    q = Runs()
    for p in range(6):
        q.insert(p, 4, 0)
    q.park(0, 0, 2, QUOTA)
    q.park(1, 0, 2, NODE)
    q.check()
    q.release(False)
    assert q.runs() == [(2, 4, QUOTA), (4, 4, 0)]
    q.release(True)
    assert q.runs() == [(6, 4, 0)]
    q.check()


@st.composite
def _ops(draw):
    return draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10_000), st.integers(0, 10_000),
                                   st.integers(0, 3)), max_size=60))


@settings(max_examples=300, deadline=None)
@given(_ops())
def test_runs_code_their_list_whatever_the_operations(ops):
    q = Runs()
    for op, a, b, code in ops:
        n = len(q.entries)
        if op <= 1 and n < 60:
            q.insert(a % (n + 1), 4 + code, (0, 0, QUOTA, NODE)[b % 4])
        elif op == 2 and n:
            q.remove(a % n)
        elif op == 3:
            free = [r for r, (_, _, m) in enumerate(q.runs()) if m == 0]
            if free:
                r = free[a % len(free)]
                cnt = q.runs()[r][0]
                o1 = b % cnt
                q.park(r, o1, o1 + 1 + (a // 7) % (cnt - o1), (QUOTA, NODE)[code % 2])
        else:
            q.release(bool(b % 2))
        q.check()
