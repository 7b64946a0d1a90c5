"""Integral guarantees (SEMANTICS §2.9): burst and relaxed pools spending an accumulated volume.

A pool of type burst/relaxed accumulates volume at T x flow_ratio per second and spends it at the
integral share it was given last time. Per update it may use volume_ratio / smooth_period as an
extra guarantee: burst pools up to their burst ratio (within the free limits of their ancestors),
relaxed pools share what strong and burst guarantees leave, by their volume ratios, capped at
relaxed_share_multiplier_limit x flow_ratio. The state (volumes, last ratios) lives here between
updates so the simulator can carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from makeway.core.resources import EPS
from makeway.policies.ytsaurus import plf
from makeway.policies.ytsaurus.tree import ROOT, Tree


@dataclass(slots=True)
class IntegralConfig:
    smooth_period: float = 60.0
    saturation_period: float = 86400.0
    relaxed_multiplier: float = 3.0
    elapsed: float | None = None
    volumes: dict[str, list[float]] = field(default_factory=dict)
    last_ratio: dict[str, float] = field(default_factory=dict)
    _burst: dict[str, float] = field(default_factory=dict)

    # -- helpers ----------------------------------------------------------------------------------

    def _pools(self, tree: Tree, kind: str) -> list[str]:
        return [n for n in tree.preorder() if (tree.elements[n].integral or {}).get("type") == kind]

    @staticmethod
    def _ratio(tree: Tree, vec: list[float]) -> float:
        return max((v / t for v, t in zip(vec, tree.total) if t > 0), default=0.0)

    def _volume_ratio(self, tree: Tree, name: str) -> float:
        el = tree.elements[name]
        flow = self._ratio(tree, el.integral["flow"])  # type: ignore[index]
        vol = list(self.volumes.get(name) or el.volume or [0.0] * len(tree.total))
        if self.elapsed is not None and any(t > 0 for t in tree.total):
            dt = float(self.elapsed)
            last = self.last_ratio.get(name, 0.0)
            cap = [t * flow * self.saturation_period for t in tree.total]
            vol = [min(max(v + t * flow * dt - t * dt * last, 0.0), c) for v, t, c in zip(vol, tree.total, cap)]
        self.volumes[name] = vol
        ratios = [v / t for v, t in zip(vol, tree.total) if t > 0]
        return (min(ratios) if ratios else 0.0) / self.smooth_period

    # -- hooks called by fairshare.compute -----------------------------------------------------

    def scale_with_bursts(self, tree: Tree, strong: dict[str, list[float]]) -> None:
        """Strong guarantees of the root's children plus all burst ratios must fit in the cluster."""
        self._burst = {n: self._ratio(tree, tree.elements[n].integral["burst"])  # type: ignore[index]
                       for n in self._pools(tree, "burst")}
        dim = len(tree.total)
        tot = [sum(strong[c][i] for c in tree.elements[ROOT].children) + sum(self._burst.values())
               for i in range(dim)]
        k = min([1.0] + [1.0 / x for x, t in zip(tot, tree.total) if t > 0 and x > 1.0 + EPS])
        if k < 1.0:
            for n in strong:
                if n != ROOT:
                    strong[n] = [v * k for v in strong[n]]
            self._burst = {n: b * k for n, b in self._burst.items()}

    def _raise(self, tree: Tree, attrs: Any, name: str, share: list[float]) -> None:
        for anc in tree.ancestors(name):
            a = attrs[anc]
            a.integral_share = [x + y for x, y in zip(a.integral_share, share)]

    def assign(self, tree: Tree, attrs: Any, curves: dict[str, plf.PLF]) -> bool:
        """Set integral shares of burst then relaxed pools; True when anything was assigned."""
        from makeway.policies.ytsaurus.fairshare import fit_factor_fn

        dim = len(tree.total)
        burst_pools, relaxed_pools = self._pools(tree, "burst"), self._pools(tree, "relaxed")
        if not burst_pools and not relaxed_pools:
            return False
        for name in burst_pools:
            ratio = min(self._burst.get(name, 0.0), self._volume_ratio(tree, name))
            avail = [1.0] * dim
            for anc in tree.ancestors(name):
                if anc == ROOT:
                    break
                a = attrs[anc]
                avail = [min(v, lim - s - i) for v, lim, s, i in zip(avail, a.limits_share, a.strong_share,
                                                                       a.integral_share)]
            room = min((v for v, t in zip(avail, tree.total) if t > 0), default=0.0)
            ratio = max(0.0, min(ratio, room))
            share = [ratio if t > 0 else 0.0 for t in tree.total]
            self._raise(tree, attrs, name, share)
            self.last_ratio[name] = max(share, default=0.0)
        if relaxed_pools:
            available = [1.0 if t > 0 else 0.0 for t in tree.total]
            for c in tree.elements[ROOT].children:
                a = attrs[c]
                used = [min(s + i, d) for s, i, d in zip(a.strong_share, a.integral_share, a.demand_share)]
                available = [x - u for x, u in zip(available, used)]
            weights, fns = [], []
            for name in relaxed_pools:
                el, a = tree.elements[name], attrs[name]
                mult = el.relaxed_multiplier if el.relaxed_multiplier is not None else self.relaxed_multiplier
                ratio = min(self._volume_ratio(tree, name), self._ratio(tree, el.integral["flow"]) * mult)  # type: ignore[index]
                lim = [min(ratio + s, lv) for s, lv in zip(a.strong_share, a.limits_share)]
                g = [s + i for s, i in zip(a.strong_share, a.integral_share)]
                fns.append(plf.compose(curves[name], *fit_factor_fn(curves[name], g, lim)))
                weights.append(ratio)
            wmin = min((w for w in weights if w > EPS), default=1.0)

            def extra(f: float) -> list[list[float]]:
                out = []
                for name, w, fn in zip(relaxed_pools, weights, fns):
                    s = min(1.0, f * w / wmin) if w > EPS else 0.0
                    v = fn.left(s)
                    base = attrs[name]
                    out.append([max(0.0, x - st - it) for x, st, it in zip(v, base.strong_share, base.integral_share)])
                return out

            def fits(f: float) -> bool:
                parts = extra(f)
                return all(sum(p[i] for p in parts) <= available[i] + EPS for i in range(dim))

            lo, hi = 0.0, 1.0
            if fits(hi):
                lo = hi
            else:
                for _ in range(60):
                    mid = (lo + hi) / 2
                    if fits(mid):
                        lo = mid
                    else:
                        hi = mid
            for name, share in zip(relaxed_pools, extra(lo)):
                self._raise(tree, attrs, name, share)
                self.last_ratio[name] = max(share, default=0.0)
        return True

    def after_update(self, tree: Tree, attrs: Any) -> None:
        return None
