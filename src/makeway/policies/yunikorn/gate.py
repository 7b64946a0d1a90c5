"""Doomed preemption attempts, decided from the ask's queue path alone (issue 20).

Most attempts in a reclaim are made by asks whose own queue is over its guarantee (victims that
were requeued): ``Preemptor.check_queue_guarantees`` refuses them after the whole victim search.
The refusal is certain from the ask's path alone when the ask's own leaf has a guarantee and,
with the ask added, some type the ask requests is over it: the loop of that check only ever
removes victims from other leaves, so the ask queue's own remainder keeps that negative value at
every step, and its remaining guarantee (the own remainder merged with, or the minimum with, the
parent's) keeps it too. The first test of the check (the remainder before the ask) is computed
here exactly as the preemptor computes it, on snapshots of the path only.
"""

from __future__ import annotations

from typing import Sequence

from makeway.core.resources import Res, add
from makeway.policies.yunikorn.search import Snap
from makeway.policies.yunikorn.resources import fit_in_actual, is_empty, sub_only_existing

# one queue on the path, root first: (path, allocated, preempting, max, guaranteed)
PathQueue = tuple[str, Res, Res, "Res | None", "Res | None"]
# (remaining guarantee before the ask, guaranteed, allocated, preempting) of the ask's queue
Margin = tuple["Res | None", "Res | None", "Res | None", "Res | None"]


def guarantee_doomed(path: Sequence[PathQueue], ask: Res) -> bool:
    """True when ``check_queue_guarantees`` for an ask of ``ask`` in the last queue of ``path``
    answers False whatever the victims; False when it may pass (the full attempt decides)."""
    return doomed_by(path_margin(path), ask)


def path_margin(path: Sequence[PathQueue]) -> Margin:
    """What ``doomed_by`` reads of a path, the same for every ask of its last queue: the
    remaining guarantee before the ask, and the queue's guarantee, usage and preempting."""
    snap: Snap | None = None
    for name, allocated, preempting, mx, guaranteed in path:
        # leaf-ness plays no part in the remaining guarantee
        snap = Snap(name, snap, False, allocated, preempting, mx, guaranteed)
    assert snap is not None
    s: Snap | None = snap
    while s is not None:
        s.ask_queue = snap
        s = s.parent
    return snap.remaining_guaranteed(), snap.guaranteed, snap.allocated, snap.preempting


def doomed_by(margin: Margin, ask: Res) -> bool:
    """``guarantee_doomed`` from the path's ``path_margin``."""
    r0, guaranteed, allocated, preempting = margin
    if r0 is not None and fit_in_actual(r0, ask):
        return False
    if is_empty(guaranteed):
        return False
    used = sub_only_existing(add(allocated, ask), preempting)
    own = sub_only_existing(guaranteed, used) or {}
    return any(k in own and own[k] < 0 for k in ask)


__all__ = ["Margin", "doomed_by", "guarantee_doomed", "path_margin"]
