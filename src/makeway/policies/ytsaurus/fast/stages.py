"""The preemptive stage of a heartbeat in the compiled YTsaurus loop (``preemptive.stages`` for the
loop's class, ``docs/plans/ytsaurus-compiled-loop.md`` §4.3, slice 4).

In the class the aggressive stage never picks anyone (aggressive starvation is off, so no
operation has aggressive priority) and so decides nothing; only the normal stage is ported.

* **Candidates** are the node's allocations classed ``preemptible`` by ``classify.classify``,
  except those of pools under an ``allow_normal_preemption: false`` and those the heartbeat's own
  regular stage started (the model reads the state, which has them only once the heartbeat's
  decisions are applied; its free units and live usage have them already). With one resource and no
  usage threshold the prefix rule has a closed form per allocation: with ``s`` the share of the
  operation's allocations started before it (by seq), it is non-preemptible while
  ``fair x aggressive threshold > s + EPS``, then aggressively preemptible while
  ``fair x threshold > s + EPS`` (or always, where the operation's published fair share equals its
  demand), then preemptible. The share is a sum of whole units over the total, so the same float
  in both languages.
* **The preemptor** is the least ``(satisfaction, tree position)`` among the published operations
  with a pending task and normal preemption priority (starving, or, by the default scope, under a
  starving pool below ``<Root>``) whose task fits the free units plus the candidates'.
* **Victims** are the candidates youngest first, by (start, seq) descending, while the node with
  the preemptor's task would be over its capacity (``heartbeat.preempt_after_scheduling``). Each
  reason's satisfactions read the live usage after the earlier victims left. The preemptor's
  task then starts: the victims' units make room for it by construction.
"""

from __future__ import annotations

from numba import njit

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.fast.layout import (
    C_A, C_B, C_C, C_D, C_E, C_KIND, I_NLOG, L_PREEMPT, S_AP, S_NP, S_P, ST_STARVING, V_PFAIR, V_PSAT, V_PUSAGE, V_VSAT,
)

INF_SAT = 1e9  # ``status.INF_SAT``


@njit(cache=True)
def satisfaction(f, units, T):
    """``fairshare.local_satisfaction`` with one resource: usage over fair share."""
    if f <= EPS:
        return INF_SAT
    s = (float(units) / T) / f
    return s if s < INF_SAT else INF_SAT


@njit(cache=True)
def alloc_status(before, T, f, d, aggr_thr, thr):
    """``classify.classify``'s class of an allocation with ``before`` units of its operation
    started before it, under the published fair share ``f`` and demand ``d``."""
    s = float(before) / T
    if f * aggr_thr > s + EPS:
        return S_NP
    if abs(f - d) <= EPS and d > EPS:  # ``publish``: not preemptible, the bound is infinite
        return S_AP
    if f * thr > s + EPS:
        return S_AP
    return S_P


@njit(cache=True)
def starving_pools(PAR, PST, ANC):
    """Per pool, into ``ANC``: it or an ancestor below ``<Root>`` starves, what makes its operations'
    preemption priority normal under the default scope (pools in postorder: parents come later)."""
    for p in range(PAR.shape[0] - 1, -1, -1):
        ANC[p] = PAR[p] >= 0 and (PST[p] == ST_STARVING or (PAR[PAR[p]] >= 0 and ANC[PAR[p]]))


@njit(cache=True)
def pick(free, T, ACT, nact, npub, NPEND, NRUN, REQ, FPUB, POOL, LRANK, needy, ops_only, ST, ANC):
    """The published operation with a pending task of at most ``free`` units that a stage serves
    next, or -1: the least (live satisfaction, tree position), the position being the leaf's rank
    in the pools' preorder, then the trace index (``HeapPicker``'s order, flattened). ``needy``:
    only those of normal preemption priority (starving, or, unless ``ops_only``, under a pool
    ``ANC`` marks)."""
    best = -1
    bs = 0.0
    br = 0
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if NPEND[w] == 0 or REQ[w] > free:
            continue
        if needy and ST[w] != ST_STARVING and (ops_only or not ANC[POOL[w]]):
            continue
        s = satisfaction(FPUB[w], NRUN[w] * REQ[w], T)
        r = LRANK[POOL[w]]
        if best < 0 or s < bs or (s == bs and r < br):  # same leaf: the earlier index, walked first
            best, bs, br = w, s, r
    return best


@njit(cache=True)
def _before_units(g, w, TOFF, NT, RUNF, ASEQ, REQ):
    k = 0
    for h in range(TOFF[w], TOFF[w] + NT[w]):
        if RUNF[h] and ASEQ[h] < ASEQ[g]:
            k += 1
    return k * REQ[w]


@njit(cache=True)
def normal_stage(n, free, seq0, T, ACT, nact, npub, ops_only, aggr_thr, thr, CAP, SOFF, NA, SLOT, TOP, TOFF, NT, RUNF,
                 ASEQ, ASTART, REQ, POOL, PAR, PST, ALLOWN, INTREE, ST, FPUB, DPUB, UPUB, NPEND, NRUN, LRANK,
                 CAND, ANC, LOG, LT, LV, IS, now):
    """The normal preemptive stage on node ``n`` with ``free`` units after the regular stage, whose
    starts (seq ``seq0`` on) are not candidates: the model reads the state, where they are not yet. Logs
    an ``L_PREEMPT`` row per victim and returns (preemptor, victims in ``CAND[:k]``), or (-1, 0)
    where no operation was chosen. Applies nothing: the caller evicts and starts."""
    nc = 0
    room = free
    for i in range(NA[n]):
        g = SLOT[SOFF[n] + i]
        w = TOP[g]
        if ASEQ[g] >= seq0 or not ALLOWN[POOL[w]]:
            continue
        if alloc_status(_before_units(g, w, TOFF, NT, RUNF, ASEQ, REQ), T, FPUB[w], DPUB[w], aggr_thr, thr) != S_P:
            continue
        CAND[nc] = g
        nc += 1
        room += REQ[w]

    if not ops_only:
        starving_pools(PAR, PST, ANC)
    c = pick(room, T, ACT, nact, npub, NPEND, NRUN, REQ, FPUB, POOL, LRANK, True, ops_only, ST, ANC)
    if c < 0:
        return -1, 0

    # youngest first: (start, seq) descending
    for a in range(1, nc):
        x = CAND[a]
        b = a - 1
        while b >= 0 and (ASTART[CAND[b]] < ASTART[x] or (ASTART[CAND[b]] == ASTART[x] and ASEQ[CAND[b]] < ASEQ[x])):
            CAND[b + 1] = CAND[b]
            b -= 1
        CAND[b + 1] = x
    used = CAP[n] - free + REQ[c]
    k = 0
    while k < nc and used > CAP[n]:
        g = CAND[k]
        v = TOP[g]
        i = IS[I_NLOG]
        LOG[i, C_KIND] = L_PREEMPT
        LOG[i, C_A] = v
        LOG[i, C_B] = g - TOFF[v]
        LOG[i, C_C] = n
        LOG[i, C_D] = c
        LOG[i, C_E] = S_P
        LT[i] = now
        LV[i, V_PFAIR] = FPUB[c]
        LV[i, V_PUSAGE] = UPUB[c]
        LV[i, V_PSAT] = satisfaction(FPUB[c], _live_units(c, CAND, k, TOP, NRUN, REQ), T)
        LV[i, V_VSAT] = satisfaction(FPUB[v], _live_units(v, CAND, k, TOP, NRUN, REQ), T)
        IS[I_NLOG] = i + 1
        used -= REQ[v]
        k += 1
    return c, k


@njit(cache=True)
def least_needy(ACT, nact, npub, ops_only, ST, POOL, PAR, PST, ANC, NPEND, REQ):
    """The least task of an operation the normal stage could choose (normal priority, published,
    pending; a huge number: none)."""
    if not ops_only:
        starving_pools(PAR, PST, ANC)
    m = 1 << 62
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if NPEND[w] > 0 and REQ[w] < m and (ST[w] == ST_STARVING or (not ops_only and ANC[POOL[w]])):
            m = REQ[w]
    return m


@njit(cache=True)
def most_room(T, aggr_thr, thr, CAP, USED, SOFF, NA, SLOT, TOP, TOFF, NT, RUNF, ASEQ, REQ, POOL, ALLOWN, FPUB, DPUB):
    """The most units the normal stage could make on one node: its free units and its candidates'.
    While it is below ``least_needy`` (and nothing moves) no heartbeat's stage chooses anyone."""
    best = 0
    for n in range(CAP.shape[0]):
        room = CAP[n] - USED[n]
        for i in range(NA[n]):
            g = SLOT[SOFF[n] + i]
            w = TOP[g]
            if ALLOWN[POOL[w]] and alloc_status(_before_units(g, w, TOFF, NT, RUNF, ASEQ, REQ), T, FPUB[w], DPUB[w],
                                                aggr_thr, thr) == S_P:
                room += REQ[w]
        if room > best:
            best = room
    return best


@njit(cache=True)
def _live_units(v, CAND, k, TOP, NRUN, REQ):
    """Operation ``v``'s running units less its victims among ``CAND[:k]`` (taken before it)."""
    m = 0
    for j in range(k):
        if TOP[CAND[j]] == v:
            m += 1
    return (NRUN[v] - m) * REQ[v]


__all__ = ["alloc_status", "least_needy", "most_room", "normal_stage", "pick", "satisfaction", "INF_SAT"]
