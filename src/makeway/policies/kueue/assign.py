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

from makeway.policies.kueue.flavorassign import (_G_TO_MODE, FIT, G_FIT, G_NOFIT, NOFIT, PREEMPT, Fungibility,
                                                  PodSetRequest, assign, fits_resource_quota, is_preferred)
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
    if ONE_FLAVOR and len(pod_sets) == 1:
        one = _one_flavor(cq, pod_sets[0], covered, fair, fungibility, excluded)
        if one is not None:
            return one
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


ONE_FLAVOR = True  # tests turn it off to compare with the general assigner


def _one_flavor(cq: QNode, pod_set: Mapping[str, int], covered: set[str], fair: bool,
                fungibility: Mapping[str, str] | None, excluded: Mapping[str, str] | None) -> Assignment | None:
    """``assign_flavors`` of one pod set whose resources all fall in one resource group with a
    single flavor, the pod set's pods not excluded from it; None otherwise. With one flavor the
    general scan reduces to: every resource's quota test, the least preferred mode kept, and the
    flavor assigned unless some resource cannot fit at all (the same texts, in the same order)."""
    requests = {r: v for r, v in pod_set.items() if v > 0 and r in covered}
    group: int | None = None
    for resources, _ in cq.groups:
        if "pods" in resources:
            requests["pods"] = 1
            break
    if not requests:
        return None
    for r in requests:
        for i, (resources, _) in enumerate(cq.groups):
            if r in resources:
                if group is None:
                    group = i
                elif group != i:
                    return None
                break
        else:
            return None
    flavors = cq.groups[group][1]  # type: ignore[index]
    if len(flavors) != 1 or (excluded and flavors[0] in excluded):
        return None
    flv = flavors[0]
    requests = {r: requests[r] for r in sorted(requests)}
    fung = Fungibility.of(fungibility)
    rep = (G_FIT, 0)
    borrow_max = 0
    texts: list[str] = []
    need = set()
    for r in requests:
        g, borrow, text, _ = fits_resource_quota(cq, (flv, r), 0, requests[r], fair, None)
        if text:
            texts.append(text)
        borrow_max = max(borrow_max, borrow)
        if is_preferred(rep, (g, borrow), fung):
            rep = (g, borrow)
        if g != G_NOFIT and _G_TO_MODE[g] == PREEMPT:
            need.add((flv, r))
    if rep[0] == G_NOFIT:
        return Assignment(mode=NOFIT, reason="couldn't assign flavors to pod set 0: " + ", ".join(sorted(texts)))
    if rep[0] == G_FIT:
        return Assignment(mode=FIT, flavors=[dict.fromkeys(requests, flv)],
                          usage={(flv, r): v for r, v in requests.items()}, borrows=borrow_max > 0,
                          borrowing=borrow_max)
    return Assignment(mode=PREEMPT, flavors=[dict.fromkeys(requests, flv)],
                      usage={(flv, r): v for r, v in requests.items()}, frs_need=need, borrows=borrow_max > 0,
                      borrowing=borrow_max)
