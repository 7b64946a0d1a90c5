"""Flavor assignment as the simulator model asks for it: the Kueue flavor assigner
(``flavorassign.assign``) on a workload's per-pod-set totals, reduced to what the model reads (mode,
flavor per pod set and resource, quota usage, the flavor-resources that need preemption, borrowing).

Resources no queue covers are not quota-managed (only nodes limit them) and are left out. The
simulator runs the assigner without the preemption oracle: a flavor that needs preemption counts
as "preempt" even when target selection would find nobody there (the whole-cycle runs,
``cycle.nominate``, use the oracle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from makeway.policies.kueue.flavorassign import FIT, NOFIT, PREEMPT, Fungibility, PodSetRequest, assign
from makeway.policies.kueue.quota import FR, QNode

__all__ = ["FIT", "NOFIT", "PREEMPT", "Assignment", "assign_flavors"]


@dataclass(slots=True)
class Assignment:
    mode: str = FIT
    flavors: list[dict[str, str]] = field(default_factory=list)  # per pod set: resource -> flavor
    usage: dict[FR, int] = field(default_factory=dict)
    frs_need: set[FR] = field(default_factory=set)
    borrows: bool = False
    borrowing: int = 0  # height of the cohort subtree the request borrows from (0: within nominal)
    reason: str = ""
    request_key: tuple | None = None  # (usage, frs_need) sorted, made once: a preemptor memo's key

    def preemptor_key(self) -> tuple:
        if self.request_key is None:
            self.request_key = (tuple(sorted(self.usage.items())), tuple(sorted(self.frs_need)))
        return self.request_key


def assign_flavors(cq: QNode, pod_sets: Sequence[Mapping[str, int]], covered: set[str], fair: bool,
                   fungibility: Mapping[str, str] | None = None,
                   excluded: Mapping[str, str] | None = None) -> Assignment:
    """``pod_sets``: total request per resource of each pod set, in Kueue units (count x per pod);
    ``excluded``: flavors the workload's pods cannot use (untolerated taints), flavor -> why."""
    requests = [PodSetRequest(str(i), 1, {r: v for r, v in ps.items() if v > 0 and r in covered}, None,
                              excluded or {})
                for i, ps in enumerate(pod_sets)]
    a = assign(cq, requests, fair, Fungibility.of(fungibility))
    mode = a.mode
    out = Assignment(mode=mode, flavors=[dict(ps.flavors) for ps in a.pod_sets],
                     usage={fr: v for fr, v in a.usage.items() if v > 0}, borrows=a.borrowing > 0,
                     borrowing=a.borrowing)
    if mode == NOFIT:
        out.reason = a.message() or a.no_fit_reason
        out.flavors = []
        return out
    out.frs_need = a.frs_need if mode == PREEMPT else set()
    return out
