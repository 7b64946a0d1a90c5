"""Starvation (SEMANTICS §4): effective parameters, the below-fair-share clock, inheritance.

Statuses are evaluated once per fair share update, never per event: the first below-fair-share
observation only starts the clock, comparisons are strict, the aggressive check comes first, and a
starving pool lends its eligibility to every operation below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from makeway.core.decisions import Note
from makeway.policies.ytsaurus import fairshare
from makeway.policies.ytsaurus.tree import ROOT, Tree

NON, STARVING, AGGRESSIVE = "non_starving", "starving", "aggressively_starving"

TREE_DEFAULTS: dict[str, Any] = {
    "fair_share_starvation_timeout": 30.0,
    "fair_share_aggressive_starvation_timeout": 120.0,
    "fair_share_starvation_tolerance": 0.8,
    "enable_aggressive_starvation": False,
    "enable_pool_starvation": True,
    "allocation_count_preemption_timeout_coefficient": 1.0,
    "scheduling_preemption_priority_scope": "operation_and_ancestors",
}

_POOL_KEYS = {
    "tolerance": ("fairShareStarvationTolerance", "fair_share_starvation_tolerance"),
    "timeout": ("fairShareStarvationTimeout", "fair_share_starvation_timeout", "fair_share_preemption_timeout"),
    "aggressive": ("enableAggressiveStarvation", "enable_aggressive_starvation"),
    "allow_aggressive": ("allowAggressivePreemption", "allow_aggressive_preemption",
                         "allow_aggressive_starvation_preemption"),
}


def tree_option(cfg: dict[str, Any], key: str) -> Any:
    v = cfg.get(key)
    if v is None and key == "fair_share_starvation_timeout":
        v = cfg.get("fair_share_preemption_timeout")
    if v is None and key == "allocation_count_preemption_timeout_coefficient":
        v = cfg.get("job_count_preemption_timeout_coefficient")
    return TREE_DEFAULTS.get(key) if v is None else v


def _own(settings: dict[str, Any], what: str) -> Any:
    for k in _POOL_KEYS[what]:
        if settings.get(k) is not None:
            return settings[k]
    return None


@dataclass(slots=True)
class Params:
    tolerance: float
    timeout: float
    aggressive_timeout: float
    aggressive_enabled: bool
    allow_aggressive: bool


def effective_params(tree: Tree, cfg: dict[str, Any]) -> dict[str, Params]:
    """Inherited per element: pools own-or-parent; operations may only tighten (§4.1, §4.2)."""
    return ParamsMaker(cfg).fill(tree, tree.preorder(), {})


class ParamsMaker:
    """One element's ``Params`` from its parent's (already in ``out``). Operations without settings
    of their own under one pool differ only by a short pending count and gang: they share one
    ``Params`` each (never changed in place), which ``update_statuses`` also relies on to compute
    one status per distinct set."""

    __slots__ = ("cfg", "coef", "plain")

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.coef = float(tree_option(cfg, "allocation_count_preemption_timeout_coefficient"))
        self.plain: dict[tuple, Params] = {}

    def fill(self, tree: Tree, names, out: dict[str, Params]) -> dict[str, Params]:
        elements = tree.elements
        for name in names:
            out[name] = self.one(elements[name], out)
        return out

    def one(self, el, out: dict[str, Params]) -> Params:
        cfg, coef = self.cfg, self.coef
        if el.name == ROOT:
            return Params(float(tree_option(cfg, "fair_share_starvation_tolerance")),
                          float(tree_option(cfg, "fair_share_starvation_timeout")),
                          float(tree_option(cfg, "fair_share_aggressive_starvation_timeout")),
                          bool(tree_option(cfg, "enable_aggressive_starvation")),
                          bool(cfg.get("allowAggressivePreemption", True)))
        par = out[el.parent or ROOT]
        s = el.settings
        if not el.is_op:
            tol, to, ag, al = (_own(s, "tolerance"), _own(s, "timeout"), _own(s, "aggressive"),
                               _own(s, "allow_aggressive"))
            return Params(par.tolerance if tol is None else float(tol), par.timeout if to is None else float(to),
                          par.aggressive_timeout, par.aggressive_enabled if ag is None else bool(ag),
                          par.allow_aggressive if al is None else bool(al))
        key = None
        if not s:
            short = coef > 0 and el.pending_count / coef < 1
            key = (el.parent, el.pending_count if short else None, el.gang)
            hit = self.plain.get(key)
            if hit is not None:
                return hit
        tol = s.get("fair_share_starvation_tolerance")
        to = s.get("fair_share_starvation_timeout", s.get("fair_share_preemption_timeout"))
        tolerance = par.tolerance if tol is None else min(par.tolerance, float(tol))
        timeout = par.timeout if to is None else max(par.timeout, float(to))
        aggressive_timeout = par.aggressive_timeout
        r = el.pending_count / coef if coef > 0 else 1.0
        if r < 1:
            timeout *= r
            aggressive_timeout *= r
        allow = par.allow_aggressive
        if el.gang and not cfg.get("allow_aggressive_preemption_for_gang_operations", True):
            allow = False
        made = Params(tolerance, timeout, aggressive_timeout, par.aggressive_enabled, allow)
        if key is not None:
            self.plain[key] = made
        return made


class KeptParams:
    """``effective_params`` of each tree, where the last tree's are made again only for the
    operations ``treeops.TreeOps`` made again (``changed``) and the tree is the very next one
    (``gen``): the pools come from the same queues and settings (a change of nodes or queues
    walks every operation, and then every element here), and an operation kept from the last tree
    has the same element, hence the same ``Params``."""

    __slots__ = ("_gen", "_out", "_maker")

    def __init__(self) -> None:
        self._gen = -1
        self._out: dict[str, Params] = {}
        self._maker: ParamsMaker | None = None

    def params(self, tree: Tree, cfg: dict[str, Any], changed: list[str] | None, gen: int) -> dict[str, Params]:
        maker = self._maker
        if changed is None or gen != self._gen + 1 or maker is None or maker.cfg is not cfg:
            maker = self._maker = ParamsMaker(cfg)
            out = maker.fill(tree, tree.preorder(), {})
        else:
            out = dict(self._out)
            elements = tree.elements
            for name in changed:
                el = elements.get(name)
                if el is None:
                    out.pop(name, None)
                else:
                    out[name] = maker.one(el, out)
        self._gen, self._out = gen, out
        return out


@dataclass(slots=True)
class Clock:
    since: float | None = None
    status: str = NON


_IDLE = Clock(None, NON)  # clocks are never changed in place, so every idle element shares this one


def step(clock: Clock, below: bool, now: float, p: Params) -> Clock:
    """One observation of the state machine (§4.2); returns the new clock."""
    if not below:
        return _IDLE
    if clock.since is None:
        return Clock(now, clock.status)
    if p.aggressive_enabled and now > clock.since + p.aggressive_timeout:
        return clock if clock.status == AGGRESSIVE else Clock(clock.since, AGGRESSIVE)
    if now > clock.since + p.timeout:
        return clock if clock.status == STARVING else Clock(clock.since, STARVING)
    return clock  # clocks are never changed in place: an unchanged one is kept as it is


@dataclass(slots=True)
class StarvationView:
    status: dict[str, str] = field(default_factory=dict)          # schedulable status
    clocks: dict[str, Clock] = field(default_factory=dict)
    lowest_starving: dict[str, str | None] = field(default_factory=dict)
    lowest_aggressive: dict[str, str | None] = field(default_factory=dict)


def update_statuses(tree: Tree, res: fairshare.FairShareResult, params: dict[str, Params],
                    clocks: dict[str, Clock], now: float, cfg: dict[str, Any],
                    fixed: dict[str, str] | None = None) -> StarvationView:
    """Status, starvation clock and inherited starving ancestors for every element."""
    view = StarvationView()
    pools_starve = bool(tree_option(cfg, "enable_pool_starvation"))
    fixed = fixed or {}
    elements = tree.elements
    statuses, new_clocks = view.status, view.clocks
    lowest, lowest_aggr = view.lowest_starving, view.lowest_aggressive
    # a backlog holds many operations with the very same shares (same demand, nothing running):
    # ``element_status`` is a pure function of its arguments, computed once per distinct set
    seen: dict[tuple, str] = {}
    # members of a group share one Attrs object (and plain operations one Params): looked up by
    # the objects first, each held in the entry so that its id cannot be taken by another
    same: dict[tuple[int, int, bool], tuple] = {}
    clocks_get, below = clocks.get, "below_fair_share"
    for name in tree.preorder():
        el = elements[name]
        p = params[name]
        status = fixed.get(name) if fixed else None
        if status is None:
            a = res.attrs[name]
            ident = (id(a), id(p), el.is_op)
            hit = same.get(ident)
            if hit is not None and hit[0] is a and hit[1] is p:
                status = hit[2]
            else:
                key = (*a.fair_share, None, *a.demand_share, None, *a.usage_share, p.tolerance, el.is_op)
                status = seen.get(key)
                if status is None:
                    status = seen[key] = fairshare.element_status(a.fair_share, a.demand_share, a.usage_share,
                                                                  p.tolerance, el.is_op)
                same[ident] = (a, p, status)
        statuses[name] = status
        parent = el.parent  # None only at the root
        if parent is None or status != below or (not el.is_op and not pools_starve):
            clock = new_clocks[name] = _IDLE  # ``step`` of a clock not below its fair share
        else:
            clock = new_clocks[name] = step(clocks_get(name, _IDLE), True, now, p)
        st = clock.status
        if st == NON:
            if parent is None or parent == ROOT:
                lowest[name] = lowest_aggr[name] = None
            else:
                lowest[name] = lowest.get(parent)
                lowest_aggr[name] = lowest_aggr.get(parent)
        else:
            inherit = parent != ROOT
            lowest[name] = name
            lowest_aggr[name] = name if st == AGGRESSIVE else (lowest_aggr.get(parent) if inherit else None)
    return view


def note(name: str, result: fairshare.FairShareResult, view: StarvationView) -> Note:
    """The note of an operation that starts or stops starving (its clock's status left or reached
    ``NON`` since the last update), with its shares and since when it is below its fair share."""
    clock = view.clocks[name]
    a = result.attrs[name]
    return Note("starvation", name, f"operation {name} {'starts' if clock.status != NON else 'stops'} starving",
                {"starving": clock.status != NON, "status": clock.status,
                 "fair_share": max(a.fair_share, default=0.0), "usage_share": max(a.usage_share, default=0.0),
                 "below_fair_share_since": clock.since})


def preemption_priority(view: StarvationView, op: str, scope: str = "operation_and_ancestors") -> str:
    if scope == "operation_only":
        st = view.clocks[op].status
        return "aggressive" if st == AGGRESSIVE else "normal" if st == STARVING else "none"
    if view.lowest_aggressive.get(op):
        return "aggressive"
    if view.lowest_starving.get(op):
        return "normal"
    return "none"


def relink_starving_ancestors(tree: Tree, view: StarvationView) -> None:
    """Recompute the lowest (aggressively) starving ancestors from ``view.clocks`` after statuses were
    set from outside (a conformance case's fixed pool or operation statuses), as ``update_statuses``
    links them: root never counts, and an element's own status wins over its parent's."""
    lowest, lowest_aggr = view.lowest_starving, view.lowest_aggressive
    for name in tree.preorder():
        parent = tree.elements[name].parent
        st = view.clocks[name].status if name in view.clocks else None
        inherit = parent is not None and parent != ROOT
        lowest[name] = name if st in (STARVING, AGGRESSIVE) else (lowest.get(parent) if inherit else None)
        lowest_aggr[name] = name if st == AGGRESSIVE else (lowest_aggr.get(parent) if inherit else None)
