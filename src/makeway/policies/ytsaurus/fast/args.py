"""The compiled YTsaurus loop's arguments, read once per run from ``pack.Packed`` and the model,
and ``run``: the loop's whole run of a case in the class, its log trimmed.

What the loop needs beyond ``Packed`` is read here with the model's own code, so that the two
cannot drift: each pool's starvation tolerance and timeout (``starvation.ParamsMaker`` on the
pools' tree, which is static in the class; an operation takes its leaf's, its timeout scaled by
its pending count), the pools' preorder (a leaf's rank there orders the regular stage's ties and
the "(finished)" notes), the periods as the engine reads them, and the tree options.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import durations, starvation
from makeway.policies.ytsaurus.fast import layout as L
from makeway.policies.ytsaurus.fast.pack import Packed, unsupported
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


def loop_args(packed: Packed, state: ClusterState, model: Any, horizon: float = math.inf,
              trace: bool = False, window: float | None = None) -> tuple:
    """``loop.run``'s arguments for this run (``trace``: log every refresh, not only computed ones;
    ``window``: the engine's no-progress window, ``SimOptions.no_progress_window``)."""
    r = packed.resource
    cfg = model.settings
    tree = Tree((r,), [packed.T])
    tree.add(Element(ROOT, None))
    for i, q in enumerate(state.queues.values()):  # as ``build_tree`` adds them
        tree.add(Element(q.name, q.parent or ROOT, weight=float(q.weight or 1.0), guarantee=q.guaranteed,
                         order=i, settings=dict(durations.normalize(q.settings))))
    tree.link_children()
    maker = starvation.ParamsMaker(cfg)
    params = maker.fill(tree, tree.preorder(), {})
    pools = packed.pools
    P = len(pools)
    pix = {p: i for i, p in enumerate(pools)}
    PTOL = np.array([params[p].tolerance for p in pools], np.float64)
    PTO = np.array([params[p].timeout for p in pools], np.float64)
    PRE = np.array([pix[p] for p in tree.pool_preorder()], np.int64)
    LRANK = np.zeros(P, np.int64)
    for k, p in enumerate(PRE):
        LRANK[p] = k
    wls = packed.wls
    SUB = np.array([wl.submit for wl in wls], np.float64)
    DUR = np.array([wl.duration for wl in wls], np.float64)
    nodes = len(packed.CAP)
    hb = float(model.heartbeat_period)
    up = float(model.update_period)
    splay = float(model.heartbeat_splay or 0.0)
    HB0 = np.array([(splay * i / nodes) if splay else 0.0 for i in range(nodes)], np.float64)
    maxp = max([p for p in (hb, model.tick_period) if p], default=0.0)
    pools_starve = bool(starvation.tree_option(cfg, "enable_pool_starvation"))
    if window is None:  # ``Simulation._window``
        window = max(600.0, 50 * maxp)
    # ``preemptive._blocked_for``: the raw setting, anywhere on the way to the root
    ALLOWN = np.array([all((state.queues[q].settings or {}).get("allow_normal_preemption") is not False
                           for q in state.path_to_root(p)) if p in state.queues else True for p in pools], np.bool_)
    ops_only = str(cfg.get("scheduling_preemption_priority_scope", "operation_and_ancestors")) == "operation_only"
    return (packed.T, up, hb, HB0, float(maxp), float(maker.coef), pools_starve, float(horizon), bool(trace),
            bool(model.enabled), float(model.backoff.period), float(model.aggressive_threshold), float(model.threshold),
            ops_only, float(window),
            packed.PAR, packed.W, packed.GU, packed.KOFF, packed.KIDS, packed.LEAF, PTOL, PTO, PRE, LRANK, ALLOWN,
            packed.POOL, packed.REQ, packed.NT, SUB, DUR, packed.CAP)


def run(state: ClusterState, model: Any, workloads: Sequence[Workload], horizon: float = math.inf,
        trace: bool = False, checked: bool = False, window: float | None = None) -> SimpleNamespace:
    """The compiled loop's whole run of a case in the class (``pack.unsupported`` None): its log,
    trimmed, and what it stopped at (``layout.STOP_WATCH``: where the engine's no-progress watch,
    of ``window`` seconds, might have stopped it; the general engine must run it then)."""
    why = None if checked else unsupported(state, model, workloads)
    if why is None and not (model.update_period > 0 and (model.heartbeat_period or 0) > 0):
        why = "a fair share update or heartbeat period that is not positive"
    if why is not None:
        raise ValueError(f"the compiled YTsaurus loop cannot run this: {why}")
    from makeway.policies.ytsaurus.fast.loop import run as loop_run

    packed = Packed(state, model, workloads)
    LOG, LT, LV, UPD, IS, XS, PUBT = loop_run(*loop_args(packed, state, model, horizon, trace, window))
    n, k = int(IS[L.I_NLOG]), int(IS[L.I_NUPD])
    return SimpleNamespace(packed=packed, wls=packed.wls, node_names=packed.node_names, pools=packed.pools,
                           LOG=LOG[:n], LT=LT[:n], LV=LV[:n], UPD=UPD[:k], IS=IS, PUBT=PUBT, last_t=float(XS[L.X_LAST_T]),
                           stop=int(IS[L.I_STOP]))


__all__ = ["loop_args", "run"]
