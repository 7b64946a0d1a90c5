"""Loader for the ytsaurus-fair-share / -starvation / -preemption cases.

The case tree is turned into the same ``Tree`` the simulator model builds from a ClusterState, and
every expected key is answered by the model's own functions (fair share update, starvation state
machine, preemptible classification, heartbeat stages). Nothing here decides anything by itself.
"""

from __future__ import annotations

import math
from typing import Any

from makeway.core.resources import EPS
from makeway.conformance.result import CaseResult
from makeway.policies.ytsaurus import classify, fairshare, heartbeat, integral, starvation
from makeway.policies.ytsaurus.classify import P
from makeway.policies.ytsaurus.schedule import pick_operation
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

RES = ("user_slots", "cpu", "gpu", "memory", "network")


# -- building the tree ---------------------------------------------------------------------------

def build_tree(inp: dict) -> Tree:
    total = dict(inp.get("totalResources") or {})
    if not total and inp.get("nodes"):  # cluster total = sum of node limits (SEMANTICS §1.1)
        for n in inp["nodes"]:
            for r, v in (n.get("resourceLimits") or {}).items():
                total[r] = total.get(r, 0) + float(v)
    cfg = inp.get("config") or {}
    tree = Tree(RES, [float(total.get(r, 0) or 0) for r in RES], main_resource=cfg.get("mainResource", "cpu"))
    tree.add(Element(ROOT, None))
    for i, p in enumerate(inp.get("pools") or []):
        ig = p.get("integralGuarantees")
        el = tree.add(Element(
            p["name"], p.get("parent") or ROOT, weight=float(p.get("weight", 1.0) or 1.0),
            guarantee=p.get("strongGuarantee") or None, limits=p.get("resourceLimits") or None,
            max_share_ratio=p.get("maxShareRatio"), mode=p.get("mode", "fair_share") or "fair_share",
            fifo_sort=tuple(p.get("fifoSortParameters") or ("weight", "start_time")), order=i,
            truncate_fifo=bool(p.get("enableFairShareTruncationInFifoPool")),
            relaxed_multiplier=p.get("relaxedShareMultiplierLimit"),
        ))
        if ig and ig.get("guaranteeType", "none") != "none":
            el.integral = {"type": ig["guaranteeType"], "flow": tree.vec(ig.get("resourceFlow")),
                           "burst": tree.vec(ig.get("burstGuaranteeResources"))}
        if p.get("initialAccumulatedVolume"):
            el.volume = tree.vec(p["initialAccumulatedVolume"])
        if p.get("currentUsage"):
            el.usage = tree.vec(p["currentUsage"])
            el.settings["_fixed_usage"] = True
        if p.get("computePromisedGuaranteeFairShare"):
            el.settings["compute_promised_guarantee_fair_share"] = True
        for key in ("allowAggressivePreemption", "enableAggressiveStarvation", "fairShareStarvationTolerance",
                    "fairShareStarvationTimeout"):
            if key in p:
                el.settings[key] = p[key]
    for i, op in enumerate(inp.get("operations") or []):
        usage = [0.0] * len(RES)
        for a in op.get("allocations") or []:
            for k, r in enumerate(RES):
                usage[k] += float((a.get("resources") or {}).get(r, 0) or 0)
        el = tree.add(Element(
            op["id"], op.get("pool") or ROOT, is_op=True, weight=float(op.get("weight", 1.0) or 1.0),
            demand=tree.vec(op.get("demand")), usage=usage, order=i,
            start_time=float(op.get("startTime", i)), pending_count=_pending(op, usage, tree),
            gang=bool(op.get("gang")),
        ))
        el.settings.update(op.get("spec") or {})
    tree.link()
    return tree


def _pending(op: dict, usage: list[float], tree: Tree) -> int:
    if op.get("pendingAllocationCount") is not None:
        return int(op["pendingAllocationCount"])
    return 10**9  # not given: no pending-count scaling of starvation timeouts


def _integral(inp: dict) -> integral.IntegralConfig:
    cfg = inp.get("config") or {}
    ig = cfg.get("integralGuarantees") or {}
    return integral.IntegralConfig(
        smooth_period=float(ig.get("smoothPeriodSeconds", 60)),
        saturation_period=float(ig.get("poolCapacitySaturationPeriodSeconds", 86400)),
        relaxed_multiplier=float(ig.get("relaxedShareMultiplierLimit", 3)),
        elapsed=cfg.get("secondsSincePreviousUpdate"))


def update(inp: dict, tree: Tree | None = None) -> tuple[Tree, fairshare.FairShareResult]:
    tree = tree or build_tree(inp)
    nodes = inp.get("nodes") or []
    caps = [tree.vec(n.get("resourceLimits")) for n in nodes] or None
    res = fairshare.compute(tree, caps, _integral(inp))
    return tree, res


# -- comparing -------------------------------------------------------------------------------------

def _close(exp: Any, got: Any, tol: float) -> bool:
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            return False
        return all(_close(v, got.get(k, 0 if not isinstance(v, (dict, list, str, bool)) and v is not None else None), tol)
                   for k, v in exp.items())
    if isinstance(exp, list):
        return isinstance(got, list) and len(exp) == len(got) and all(_close(a, b, tol) for a, b in zip(exp, got))
    if isinstance(exp, bool) or exp is None or isinstance(exp, str):
        return exp == got
    if isinstance(exp, (int, float)):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return False
        return math.isclose(exp, got, rel_tol=0, abs_tol=max(tol, 1e-12)) or (exp >= 1e9 and got >= 1e9)
    return exp == got


def _vecd(v: list[float]) -> dict[str, float]:
    return {r: x for r, x in zip(RES, v)}


def run_case(case: dict) -> CaseResult:
    inp = case["input"]
    exp = case["expected"]
    tol = float(case.get("tolerance", 0) or 0)
    got: dict[str, Any] = {}
    for key in exp:
        got[key] = None
    answer(case, got)
    ok = True
    for key, val in exp.items():
        if key == "preemptionStatusNot":
            good = all(got[key].get(op, {}).get(aid) not in (None, st) for op, d in val.items() for aid, st in d.items())
        else:
            good = _close(val, got.get(key), tol)
        ok = ok and good
    shown = {k: got.get(k) for k in exp}
    return CaseResult(ok, exp, shown, "" if ok else "mismatch")


class Ctx:
    """The model's view after the case's fair share updates (shares, statuses, classification)."""

    def __init__(self, inp: dict):
        self.inp = inp
        self.cfg = inp.get("config") or {}
        self.tree = build_tree(inp)
        self.params = starvation.effective_params(self.tree, self.cfg)
        fixed = {o["id"]: o["status"] for o in inp.get("operations") or [] if o.get("status")}
        clocks: dict[str, starvation.Clock] = {}
        for now in inp.get("updateTimes") or [0.0]:
            self.tree, self.result = update(inp, self.tree)
            self.view = starvation.update_statuses(self.tree, self.result, self.params, clocks, float(now),
                                                   self.cfg, fixed)
            clocks = self.view.clocks
        for o in inp.get("operations") or []:
            if o.get("starvationStatus"):
                self.view.clocks[o["id"]] = starvation.Clock(0.0, o["starvationStatus"])
        for p in inp.get("pools") or []:
            if p.get("starvationStatus"):
                self.view.clocks[p["name"]] = starvation.Clock(0.0, p["starvationStatus"])
        starvation.relink_starving_ancestors(self.tree, self.view)
        a = self.result.attrs
        self.local_sat = {n: fairshare.local_satisfaction(x.usage_share, x.fair_share, x.demand_share)
                          for n, x in a.items()}
        self.satisfaction = satisfaction(self.tree, self.local_sat)

    def element_values(self, key: str) -> dict[str, Any]:
        v, p = self.view, self.params
        if key == "status":
            return dict(v.status)
        if key == "starvationStatus":
            return {n: c.status for n, c in v.clocks.items()}
        if key == "belowFairShareSince":
            return {n: c.since for n, c in v.clocks.items()}
        if key == "effectiveStarvationTolerance":
            return {n: x.tolerance for n, x in p.items()}
        if key == "effectiveStarvationTimeout":
            return {n: x.timeout for n, x in p.items()}
        if key == "effectiveAggressiveStarvationTimeout":
            return {n: x.aggressive_timeout for n, x in p.items()}
        if key == "effectiveAggressiveStarvationEnabled":
            return {n: x.aggressive_enabled for n, x in p.items()}
        if key == "lowestStarvingAncestor":
            return dict(v.lowest_starving)
        if key == "lowestAggressivelyStarvingAncestor":
            return dict(v.lowest_aggressive)
        return {}

    def priority(self, op: str, scope: str) -> str:
        fixed = {o["id"]: o.get("preemptionPriority") for o in self.inp.get("operations") or []}
        if fixed.get(op):
            return str(fixed[op])
        return starvation.preemption_priority(self.view, op, scope)

    def published(self, op: dict) -> classify.Published:
        if op.get("publishedFairShare") is not None and self.cfg.get("recomputeFairShare") is False:
            pub = classify.publish(self.tree.vec(op["publishedFairShare"]), self.tree.vec(op.get("publishedDemandShare")))
        else:
            a = self.result.attrs[op["id"]]
            pub = classify.publish(a.fair_share, a.demand_share)
        if op.get("preemptibleFlag") is not None:
            pub.preemptible = bool(op["preemptibleFlag"])
        return pub

    def statuses(self, op: dict) -> dict[str, str]:
        tree = self.tree
        allocs = sorted(enumerate(op.get("allocations") or []), key=lambda x: (float(x[1].get("startTime", 0)), x[0]))
        chain = [tree.elements[n].settings for n in tree.ancestors(op["id"])[1:]]
        spec = {"non_preemptible_resource_usage_threshold": op.get("nonPreemptibleResourceUsageThreshold")}
        thr = classify.usage_threshold(self.cfg, chain, spec, tree.resources)
        return classify.classify([(a["id"], tree.vec(a.get("resources"))) for _, a in allocs], self.published(op),
                                 tree.total, thr, _opt(self.cfg, "aggressive_preemption_satisfaction_threshold"),
                                 _opt(self.cfg, "preemption_satisfaction_threshold"))


def _opt(cfg: dict, key: str) -> float:
    v = cfg.get(key)
    return float(classify.CLASSIFY_DEFAULTS[key] if v is None else v)


def satisfaction(tree: Tree, local: dict[str, float]) -> dict[str, float]:
    """Operations: local value; pools: minimum over children, own local when empty (§3)."""
    out: dict[str, float] = {}
    for name in tree.postorder():
        el = tree.elements[name]
        if el.is_op or not el.children:
            out[name] = local[name]
        else:
            out[name] = min(out[c] for c in el.children)
    return out


def _per_element(inp: dict, exp_val: Any, values: dict[str, Any]) -> Any:
    if isinstance(exp_val, dict):
        return {k: values.get(k) for k in exp_val}
    el = inp.get("element")
    return values.get(el) if el else None


_ELEMENT_KEYS = ("status", "starvationStatus", "belowFairShareSince", "effectiveStarvationTolerance",
                 "effectiveStarvationTimeout", "effectiveAggressiveStarvationEnabled", "lowestStarvingAncestor",
                 "lowestAggressivelyStarvingAncestor", "effectiveAggressiveStarvationTimeout")


def answer(case: dict, got: dict[str, Any]) -> None:
    inp = case["input"]
    exp = case["expected"]
    if "statusTimeline" in inp or ("fairShare" in inp and "usageShare" in inp):
        _starvation_only(inp, exp, got)
        return
    if "runningAllocations" in inp or "heartbeatTimes" in inp:
        _node_case(inp, exp, got)
        return
    ctx = Ctx(inp)
    tree, a = ctx.tree, ctx.result.attrs
    for key in exp:
        if key == "fairShare":
            got[key] = {k: _vecd(a[k].fair_share) for k in exp[key] if k in a}
        elif key == "fairShareDetailed":
            got[key] = {k: {p: _vecd(v) for p, v in a[k].detailed.items()} for k in exp[key] if k in a}
        elif key == "limitsShare":
            got[key] = {k: _vecd(a[k].limits_share) for k in exp[key] if k in a}
        elif key == "bestAllocationShare":
            caps = [tree.vec(n.get("resourceLimits")) for n in inp.get("nodes") or []]
            got[key] = {k: _vecd(fairshare.best_allocation_share(tree, tree.elements[k], caps))
                        for k in exp[key] if k in tree.elements}
        elif key == "demandShare":
            got[key] = {k: _vecd(a[k].demand_share) for k in exp[key] if k in a}
        elif key == "resourceLimits":
            got[key] = {k: _vecd([s * t for s, t in zip(a[k].limits_share, tree.total)]) for k in exp[key]}
        elif key == "fairShareMax":
            got[key] = {k: max(a[k].fair_share) for k in exp[key]}
        elif key == "demandShareMax":
            got[key] = {k: max(a[k].demand_share) for k in exp[key]}
        elif key == "localSatisfactionRatio":
            got[key] = {k: ctx.local_sat[k] for k in exp[key]}
        elif key == "satisfactionRatio":
            got[key] = {k: ctx.satisfaction[k] for k in exp[key]}
        elif key == "usageShareEqualsDemandShare":
            got[key] = {k: all(abs(u - d) <= EPS for u, d in zip(a[k].usage_share, a[k].demand_share))
                        for k in exp[key]}
        elif key == "schedulingIndex":
            got[key] = _scheduling_index(ctx)
        elif key in _ELEMENT_KEYS:
            got[key] = _per_element(inp, exp[key], ctx.element_values(key))
        elif key in ("preemptionStatus", "preemptionStatusNot"):
            got[key] = {o["id"]: {k: v for k, v in ctx.statuses(o).items() if k in exp[key].get(o["id"], {})}
                        for o in inp.get("operations") or [] if o["id"] in exp[key]}
        elif key in ("preemptionBlockingElement", "conditionallyPreemptibleAllocations", "conditionalDiscount"):
            _conditional(ctx, inp, exp, got)
        elif key in ("gracefullyPreempted", "regularPreemptionCandidates", "eligibleForNewAllocations"):
            _graceful(ctx, inp, exp, got)
        elif key == "preemptionPriority":
            got[key] = {scope: {op: ctx.priority(op, scope) for op in ops} for scope, ops in exp[key].items()}
        elif key == "stageParticipation":
            scope = str(ctx.cfg.get("scheduling_preemption_priority_scope", "operation_and_ancestors"))
            ops = [o["id"] for o in inp.get("operations") or []]
            got[key] = {stage: _stage_members(stage, ops, lambda op: ctx.priority(op, scope)) for stage in exp[key]}
        elif key == "promisedGuaranteeFairShare":
            # an element outside every promised subtree has a zero promised share, as YTsaurus's attribute
            got[key] = {k: _vecd(a[k].promised if a[k].promised is not None else [0.0] * len(a[k].fair_share))
                        for k in exp[key] if k in a}
        elif key == "allocationPreemptionLevel":
            levels = {}
            for o in inp.get("operations") or []:
                for aid, st in ctx.statuses(o).items():
                    levels[aid] = classify.preemption_level(st, ctx.params[o["id"]].allow_aggressive)
            got[key] = {k: levels.get(k) for k in exp[key]}


def _stage_members(stage: str, ops: list[str], priority: Any) -> Any:
    """Operations admitted to a stage named as a case may write it (``preemptive_normal``,
    ``PreemptiveNormal``, ``normal``; ``regular`` admits every operation)."""
    word = "".join(ch for ch in stage.lower() if ch.isalnum()).removeprefix("preemptive")
    if word == "regular":
        return list(ops)
    target = heartbeat.STAGE_PRIORITY.get(f"preemptive_{word}")
    if target is None:
        return f"<unsupported stage {stage}>"
    return [op for op in ops if priority(op) == target]


def _starvation_only(inp: dict, exp: dict, got: dict[str, Any]) -> None:
    cfg = inp.get("config") or {}
    el = inp.get("element", "operation")
    is_op = not str(el).lower().startswith("pool")
    if "fairShare" in inp:
        vec = lambda d: [float((d or {}).get(r, 0)) for r in RES]  # noqa: E731
        tol = float(inp.get("effectiveTolerance", cfg.get("fair_share_starvation_tolerance", 0.8)))
        got["status"] = fairshare.element_status(vec(inp["fairShare"]), vec(inp.get("demandShare")),
                                                 vec(inp.get("usageShare")), tol, is_op)
        return
    tree = Tree(RES, [0.0] * len(RES))
    tree.add(Element(ROOT, None))
    pending = inp.get("pendingAllocationCount")
    tree.add(Element(el, ROOT, is_op=is_op, pending_count=10**9 if pending is None else int(pending)))
    tree.link()
    params = starvation.effective_params(tree, cfg)[el]
    clock = starvation.Clock()
    timeline = []
    for obs in inp["statusTimeline"]:
        clock = starvation.step(clock, obs["status"] == "below_fair_share", float(obs["time"]), params)
        timeline.append({"time": obs["time"], "starvationStatus": clock.status, "belowFairShareSince": clock.since})
    got["starvationTimeline"] = timeline
    got["effectiveStarvationTimeout"] = params.timeout
    got["effectiveAggressiveStarvationTimeout"] = params.aggressive_timeout


def _scheduling_index(ctx: Ctx) -> dict[str, int]:
    """Regular stage on one big node: least satisfied active operation first, one allocation each."""
    tree = ctx.tree
    ops = {o["id"]: o for o in ctx.inp.get("operations") or []}
    usage = {n: list(tree.elements[n].usage) for n in ops}
    pending = {n: tree.elements[n].pending_count for n in ops}
    order: dict[str, int] = {}
    while True:
        def sat(name: str) -> float:
            a = ctx.result.attrs[name]
            return fairshare.local_satisfaction(tree.share(usage[name]), a.fair_share, a.demand_share)
        active = [n for n in ops if pending[n] > 0]
        if not active:
            break
        pick = pick_operation(tree, set(active), sat)
        order[pick] = len(order)
        pending[pick] -= 1
        size = _alloc_size(ops[pick], tree)
        usage[pick] = [u + s for u, s in zip(usage[pick], size)]
    return order


def _alloc_size(op: dict, tree: Tree) -> list[float]:
    if op.get("allocationResources"):
        return tree.vec(op["allocationResources"])
    allocs = op.get("allocations") or []
    if allocs:
        return tree.vec(allocs[-1].get("resources"))
    n = op.get("pendingAllocationCount")
    demand = tree.vec(op.get("demand"))
    if n:
        return [d / n for d in demand]
    return [1.0 if r == "cpu" else 0.0 for r in tree.resources]


def _levels(inp: dict, tree: Tree | None, params: dict | None) -> dict[str, str]:
    out = {}
    for a in inp.get("runningAllocations") or []:
        allow = True
        if params is not None and a.get("operation") in params:
            allow = params[a["operation"]].allow_aggressive
        out[a["id"]] = classify.preemption_level(a["preemptionStatus"], allow)
    return out


def _node_case(inp: dict, exp: dict, got: dict[str, Any]) -> None:
    cfg = inp.get("config") or {}
    if "heartbeatTimes" in inp:
        b = heartbeat.Backoff(float(cfg.get("preemptive_scheduling_backoff", 5)))
        got["preemptiveStagesRun"] = [b.should_run("node", float(t)) for t in inp["heartbeatTimes"]]
        return
    tree = None
    params = None
    if inp.get("pools") or inp.get("operations"):
        tree = build_tree(inp)
        params = starvation.effective_params(tree, cfg)
    node = inp["node"]
    limits = [float((node.get("resourceLimits") or {}).get(r, 0)) for r in RES]
    levels = _levels(inp, tree, params)
    cands = []
    for i, a in enumerate(inp.get("runningAllocations") or []):
        res = [float((a.get("resources") or {}).get(r, 0)) for r in RES]
        cands.append(heartbeat.Cand(a["id"], a.get("operation", ""), a["preemptionStatus"], levels[a["id"]],
                                    float(a.get("startTime", 0)), i, res))
    usage = heartbeat.discount(cands, len(RES))
    stage = inp.get("stage")
    got["allocationPreemptionLevel"] = levels
    if stage == "after_scheduling":
        victims = heartbeat.overcommit_victims(cands, limits)
        got["preemptedAllocations"] = [c.id for c in victims]
        got["keptAllocations"] = [c.id for c in cands if c not in victims]
        got["reason"] = "resource_overcommit"
        return
    ops = {o["id"]: o for o in inp.get("operations") or []}
    stages = list(heartbeat.STAGES) if stage == "all_preemptive" else [stage]
    new = inp.get("newAllocation")
    pool_usage: dict[str, list[float]] = {}
    if tree is not None:
        for name, el in tree.elements.items():
            pool_usage[name] = list(el.usage)
        for c in cands:
            if c.op in tree.elements and not any(a.get("allocations") for a in ops.values()):
                for anc in tree.ancestors(c.op):
                    if not tree.elements[anc].settings.get("_fixed_usage"):
                        pool_usage[anc] = [u + r for u, r in zip(pool_usage[anc], c.res)]

    def violates(c: heartbeat.Cand) -> bool:
        if tree is None or c.op not in tree.elements:
            return False
        for anc in tree.ancestors(c.op):
            lim = tree.elements[anc].limits
            if lim and heartbeat.exceeds(pool_usage[anc], tree.vec(lim, float("inf"))):
                for a2 in tree.ancestors(c.op):
                    pool_usage[a2] = [u - r for u, r in zip(pool_usage[a2], c.res)]
                return True
        return False

    started = 0
    run: list[str] = []
    preempted: list[str] = []
    reason = None
    for st in stages:
        cand = heartbeat.stage_candidates(cands, st) if st in heartbeat.STAGE_MIN_LEVEL else []
        disc = heartbeat.discount(cand, len(RES))
        free = [lim - u + d for lim, u, d in zip(limits, usage, disc)]
        want = []
        if new:
            prio = (ops.get(new["operation"]) or {}).get("preemptionPriority")
            if prio and st in heartbeat.STAGE_PRIORITY and heartbeat.STAGE_PRIORITY[st] != prio:
                continue  # only operations whose priority equals the stage's target take part
            want = [(new["operation"], [float((new.get("resources") or {}).get(r, 0)) for r in RES])]
        else:
            prio = heartbeat.STAGE_PRIORITY.get(st)
            want = [(o["id"], _alloc_size(o, tree)) for o in ops.values()
                    if prio is None or o.get("preemptionPriority") == prio]
        got["candidateAllocations"] = [c.id for c in cand]
        got["discount"] = {r: v for r, v in zip(RES, disc) if v}
        chosen = next((w for w in want if heartbeat.fits(w[1], free)), None)
        after = list(usage)
        if chosen is not None:
            after = [u + r for u, r in zip(usage, chosen[1])]
            started += 1
            run.append(st)
        elif new is None and st != "preemptive_normal":
            continue
        victims = heartbeat.preempt_after_scheduling(after, limits, cand, violates)
        preempted.extend(c.id for c, _ in victims)
        if victims:
            reason = victims[-1][1]
        if chosen is not None:
            break
    got["allocationStarted"] = started > 0
    got["allocationsStartedWithPreemption"] = started
    got["stagesRun"] = run
    got["preemptedAllocations"] = preempted
    got["freedCpu"] = sum(c.res[RES.index("cpu")] for c in cands if c.id in preempted)
    got["reason"] = reason


def _conditional(ctx: Ctx, inp: dict, exp: dict, got: dict[str, Any]) -> None:
    tree, cfg = ctx.tree, ctx.cfg
    stage = inp.get("stage", "preemptive_normal")
    aggressive = stage == "preemptive_aggressive"
    blockers: dict[str, str | None] = {}
    cond: dict[str, list[str]] = {n: [] for n in tree.elements if not tree.elements[n].is_op}
    for o in inp.get("operations") or []:
        op = o["id"]
        blk = heartbeat.blocking_element(
            tree, op, lambda n: ctx.view.clocks[n].status != starvation.NON, lambda n: ctx.local_sat[n],
            lambda n: ctx.params[n].allow_aggressive, aggressive, _opt(cfg, "preemption_satisfaction_threshold"),
            _opt(cfg, "aggressive_preemption_satisfaction_threshold"), o.get("preemptionMode") == "graceful",
            cfg.get("preemption_check_starvation", True), cfg.get("preemption_check_satisfaction", True))
        blockers[op] = blk
        if blk is not None and blk != op and cfg.get("enable_conditional_preemption", True):
            sts = ctx.statuses(o)
            cond[blk].extend(a for a, s in sts.items() if s == P)
    got["preemptionBlockingElement"] = {k: blockers.get(k) for k in exp.get("preemptionBlockingElement", {})}
    got["conditionallyPreemptibleAllocations"] = {k: cond.get(k, []) for k in
                                                  exp.get("conditionallyPreemptibleAllocations", {})}
    res_of = {a["id"]: tree.vec(a.get("resources")) for o in inp.get("operations") or [] for a in o.get("allocations") or []}
    disc: dict[str, dict[str, float]] = {}
    for o in inp.get("operations") or []:
        total = [0.0] * len(RES)
        for anc in tree.ancestors(o["id"]):
            for aid in cond.get(anc, []):
                total = [t + r for t, r in zip(total, res_of[aid])]
        disc[o["id"]] = {r: v for r, v in zip(RES, total) if v}
    got["conditionalDiscount"] = disc


def _graceful(ctx: Ctx, inp: dict, exp: dict, got: dict[str, Any]) -> None:
    cfg = ctx.cfg
    timeout = float(cfg.get("allocation_graceful_preemption_timeout", cfg.get("job_graceful_interrupt_timeout", 60)))
    graceful: dict[str, dict] = {}
    regular: list[str] = []
    eligible = True
    for o in inp.get("operations") or []:
        allocs = o.get("allocations") or []
        sts = {a["id"]: a["preemptionStatus"] for a in allocs if a.get("preemptionStatus")} or ctx.statuses(o)
        is_graceful = o.get("preemptionMode") == "graceful"
        for aid, st in sts.items():
            if is_graceful and st == P:
                graceful[aid] = {"timeoutSeconds": timeout}
            elif not is_graceful and st == P:
                regular.append(aid)
        status = ctx.view.status.get(o["id"])
        if is_graceful and status == "normal":
            eligible = False
    got["gracefullyPreempted"] = graceful
    got["regularPreemptionCandidates"] = regular
    got["eligibleForNewAllocations"] = eligible
