"""Piecewise-linear monotone vector functions with jumps, the building block of vector HDRF.

A function is a list of x positions (non-decreasing; a repeated x is a vertical jump) and the value
vector at each. Evaluation is *left-continuous*: at a jump the first (lower) value counts. That is
what makes a pool take the lower fair share at a discontinuity, as YTsaurus does (SEMANTICS §2.4).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

Vec = list[float]


class PLF:
    """x positions and value vectors, held as lists (small curves) or numpy arrays (large ones)."""

    __slots__ = ("_xs", "_ys", "_ax", "_ay")

    def __init__(self, xs, ys):
        if isinstance(xs, np.ndarray):
            self._ax, self._ay = xs, np.asarray(ys, dtype=float)
            self._xs = self._ys = None
        else:
            self._xs, self._ys = xs, ys
            self._ax = self._ay = None

    @property
    def xs(self) -> list[float]:
        if self._xs is None:
            self._xs = self._ax.tolist()
        return self._xs

    @property
    def ys(self) -> list[Vec]:
        if self._ys is None:
            self._ys = self._ay.tolist()
        return self._ys

    @property
    def ax(self) -> np.ndarray:
        if self._ax is None:
            self._ax = np.asarray(self._xs, dtype=float)
        return self._ax

    @property
    def ay(self) -> np.ndarray:
        if self._ay is None:
            self._ay = np.asarray(self._ys, dtype=float).reshape(len(self._xs), -1)
        return self._ay

    def __len__(self) -> int:
        return len(self._xs) if self._xs is not None else len(self._ax)

    def left(self, x: float) -> Vec:
        """Value at x (left-continuous), clamped to the domain."""
        if self._xs is None:
            xa, ya = self._ax, self._ay
            j = int(xa.searchsorted(x, "left"))
            if j == 0:
                return ya[0].tolist()
            if j >= len(xa):
                return ya[-1].tolist()
            if xa[j] == x:
                return ya[j].tolist()
            x0, x1 = float(xa[j - 1]), float(xa[j])
            return (ya[j - 1] + (ya[j] - ya[j - 1]) * ((x - x0) / (x1 - x0))).tolist()
        xs = self._xs
        j = bisect_left(xs, x)
        if j == 0:
            return self.ys[0]
        if j >= len(xs):
            return self.ys[-1]
        if xs[j] == x:
            return self.ys[j]
        return _lerp(xs[j - 1], self.ys[j - 1], xs[j], self.ys[j], x)

    def right(self, x: float) -> Vec:
        """Limit from the right at x (the last value at a jump)."""
        if self._xs is None:
            xa, ya = self._ax, self._ay
            j = int(xa.searchsorted(x, "right"))
            if j >= len(xa):
                return ya[-1].tolist()
            if j == 0:
                return ya[0].tolist()
            if xa[j - 1] == x:
                return ya[j - 1].tolist()
            x0, x1 = float(xa[j - 1]), float(xa[j])
            return (ya[j - 1] + (ya[j] - ya[j - 1]) * ((x - x0) / (x1 - x0))).tolist()
        xs = self._xs
        j = bisect_right(xs, x)
        if j >= len(xs):
            return self.ys[-1]
        if j == 0:
            return self.ys[0]
        if xs[j - 1] == x:
            return self.ys[j - 1]
        return _lerp(xs[j - 1], self.ys[j - 1], xs[j], self.ys[j], x)

    @property
    def end(self) -> float:
        return self.xs[-1] if self._xs is not None else float(self._ax[-1])


def _lerp(x0: float, y0: Vec, x1: float, y1: Vec, x: float) -> Vec:
    if x1 == x0:
        return y0
    t = (x - x0) / (x1 - x0)
    return [a + (b - a) * t for a, b in zip(y0, y1)]


def _lerp1(x0: float, y0: float, x1: float, y1: float, x: float) -> float:
    if x1 == x0:
        return y0
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def clean(xs: list[float], ys: list[Vec]) -> PLF:
    """Drop consecutive duplicate points (same x and same value)."""
    ox, oy = [xs[0]], [ys[0]]
    for x, y in zip(xs[1:], ys[1:]):
        if x == ox[-1] and y == oy[-1]:
            continue
        if len(ox) >= 2 and x == ox[-1] == ox[-2]:
            oy[-1] = y  # a jump through an intermediate value: keep lower and upper only
            continue
        ox.append(x)
        oy.append(y)
    if len(ox) == 1:
        ox.append(ox[0])
        oy.append(oy[0])
    return PLF(ox, oy)


# -- inverse of one component, as a fit factor by suggestion -----------------------------------

LIMIT_SNAP = 1e-13
"""A curve whose top passes a limit by no more than this meets it only by rounding: sums of the same
shares added in different orders differ in their last bits, and a limit met exactly would otherwise
stop the fit factor at the left end of the top plateau in one order and not in another."""


def snap_limit(lim: float, hi: float) -> float:
    return hi if lim <= hi <= lim + LIMIT_SNAP else lim


def limit_level(yr, lp: float) -> float:
    """The level whose right inverse is the right end of the plateau at the limit L'
    (``sup{f : F_r(f) <= L'}``): L' itself, or the highest knot value above it by no more than
    ``LIMIT_SNAP``. A plateau that sums children already at their limits can sit a few ulps above
    L' (0.05000000000000003 for 0.05); read exactly, it would not be at the limit at all and the
    fit factor beyond the limit would stop at its left end instead of its right."""
    i = bisect_right(yr, lp + LIMIT_SNAP) - 1
    return float(yr[i]) if i >= 0 and yr[i] >= lp else lp


def _inv_left(xs: list[float], yr: list[float], w: float) -> float:
    """inf{f : F_r(f) >= w}."""
    i = bisect_left(yr, w)
    if i == 0:
        return xs[0]
    if i >= len(yr):
        return xs[-1]
    return _lerp1(yr[i - 1], xs[i - 1], yr[i], xs[i], w)


def _inv_right(xs: list[float], yr: list[float], w: float) -> float:
    """sup{f : F_r(f) <= w}."""
    i = bisect_right(yr, w) - 1
    if i < 0:
        return xs[0]
    if i >= len(yr) - 1:
        return xs[-1]
    return _lerp1(yr[i], xs[i], yr[i + 1], xs[i + 1], w)


def mff_component(f: PLF, r: int, g: float, lim: float) -> tuple[list[float], list[float]]:
    """Fit factor by suggestion for resource r: inverse of F_r over [g', L'] shifted to start at 0.

    s = 0 and s beyond the limit take the right end of a plateau, 0 < s <= L'-g' the left end,
    which is the left-continuity rule of SEMANTICS §2.4.
    """
    if len(f) >= LARGE:
        return _np_mff(f.ax, f.ay[:, r], g, lim)
    xs = f.xs
    yr = [y[r] for y in f.ys]
    # enforce monotonicity against rounding noise
    for i in range(1, len(yr)):
        if yr[i] < yr[i - 1]:
            yr[i] = yr[i - 1]
    lo, hi = yr[0], yr[-1]
    lp = min(max(snap_limit(lim, hi), lo), hi)
    gp = min(max(g, lo), lp)
    if lp - gp <= 0.0:
        v = _inv_right(xs, yr, limit_level(yr, lp))
        return [0.0, 1.0], [v, v]
    ss = [0.0]
    vs = [_inv_right(xs, yr, gp)]
    for x, y in zip(xs, yr):
        if gp < y < lp:
            ss.append(y - gp)
            vs.append(x)
    span = lp - gp
    ss.append(span)
    vs.append(_inv_left(xs, yr, lp))
    if span < 1.0:
        tail = _inv_right(xs, yr, limit_level(yr, lp))
        ss.extend([span, 1.0])
        vs.extend([tail, tail])
    return ss, vs


def _eval1(xs, vs, x: float) -> tuple[float, float]:
    """(left value, right value) of a scalar PL function with jumps."""
    if isinstance(xs, np.ndarray):
        lv, rv = np_left_right(xs, np.asarray(vs, dtype=float), np.array([x]))
        return float(lv[0]), float(rv[0])
    j = bisect_left(xs, x)
    k = bisect_right(xs, x)
    if j >= len(xs):
        return vs[-1], vs[-1]
    if j < k:
        return vs[j], vs[k - 1]
    if j == 0:
        return vs[0], vs[0]
    v = _lerp1(xs[j - 1], vs[j - 1], xs[j], vs[j], x)
    return v, v


def _sweep_eval(xs: list[float], vs: list[float], pos: list[float]) -> tuple[list[float], list[float]]:
    """``_eval1`` at every one of the ascending ``pos`` in one forward pass (same arithmetic)."""
    n = len(xs)
    left: list[float] = []
    right: list[float] = []
    j = k = 0
    for x in pos:
        while j < n and xs[j] < x:
            j += 1
        if k < j:
            k = j
        while k < n and xs[k] <= x:
            k += 1
        if j >= n:
            left.append(vs[-1])
            right.append(vs[-1])
        elif j < k:
            left.append(vs[j])
            right.append(vs[k - 1])
        elif j == 0:
            left.append(vs[0])
            right.append(vs[0])
        else:
            x0, x1 = xs[j - 1], xs[j]
            v = vs[j - 1] if x1 == x0 else vs[j - 1] + (vs[j] - vs[j - 1]) * (x - x0) / (x1 - x0)
            left.append(v)
            right.append(v)
    return left, right


def min_scalar(funcs: list[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    """Pointwise minimum of scalar PL functions on [0, 1] (with jumps)."""
    if len(funcs) == 1:
        return funcs[0]
    if sum(len(xs) for xs, _ in funcs) >= LARGE:
        return _np_min(funcs)
    funcs = [(list(xs), list(vs)) if isinstance(xs, np.ndarray) else (xs, vs) for xs, vs in funcs]
    pos = sorted({x for xs, _ in funcs for x in xs})
    cols = [_sweep_eval(xs, vs, pos) for xs, vs in funcs]
    lefts = list(zip(*(c[0] for c in cols)))
    rights = list(zip(*(c[1] for c in cols)))
    out_x: list[float] = []
    out_v: list[float] = []
    for k, x in enumerate(pos):
        out_x.append(x)
        out_v.append(min(lefts[k]))
        mr = min(rights[k])
        if mr != out_v[-1]:
            out_x.append(x)
            out_v.append(mr)
        if k + 1 < len(pos):
            x1 = pos[k + 1]
            a, b = rights[k], lefts[k + 1]
            # crossings of the lower envelope inside (x, x1)
            cross = []
            n = len(a)
            for i in range(n):
                for j in range(i + 1, n):
                    d0 = a[i] - a[j]
                    d1 = b[i] - b[j]
                    if d0 * d1 < 0:
                        t = d0 / (d0 - d1)
                        cross.append(t)
            for t in sorted(cross):
                cx = x + (x1 - x) * t
                if x < cx < x1:
                    out_x.append(cx)
                    out_v.append(min(a[i] + (b[i] - a[i]) * t for i in range(n)))
    return out_x, out_v


def compose(f: PLF, mx: list[float], mv: list[float]) -> PLF:
    """s -> F(M(s)) for monotone M (scalar PL with jumps) and F (vector PL with jumps)."""
    if len(f) + len(mx) >= LARGE:
        return _np_compose(f, mx, mv)
    if isinstance(mx, np.ndarray):
        mx, mv = mx.tolist(), np.asarray(mv).tolist()
    fx = f.xs
    fy = f.ys
    out_x: list[float] = [mx[0]]
    out_y: list[Vec] = [f.left(mv[0])]
    for k in range(len(mx) - 1):
        s0, s1, m0, m1 = mx[k], mx[k + 1], mv[k], mv[k + 1]
        if s1 == s0:
            continue
        if m1 == m0:
            v = f.left(m0)
            out_x.extend([s0, s1])
            out_y.extend([v, v])
            continue
        out_x.append(s0)
        out_y.append(f.right(m0))
        i = bisect_right(fx, m0)
        nfx = len(fx)
        while i < nfx and fx[i] < m1:
            # fx[i] is the first knot at x: its left value is fy[i], its right value the run's last
            x = fx[i]
            s = s0 + (x - m0) / (m1 - m0) * (s1 - s0)
            e = i + 1
            while e < nfx and fx[e] == x:
                e += 1
            out_x.append(s)
            out_y.append(fy[i])
            out_x.append(s)
            out_y.append(fy[e - 1])
            i = e
        out_x.append(s1)
        out_y.append(f.left(m1))
    return clean(out_x, out_y)


SLIVER = 1e-13
"""A rise over less than this much x is summed as a jump: rounding can leave a jump as a segment a
few ulps wide, whose slope (1e15 and more) would wreck the running slope of the sweep. Points of
different parts closer than this are one point of the sum (``snap_knots``)."""


def snap_knots(xs: np.ndarray) -> np.ndarray:
    """Sorted x positions of a curve sum with every run closer than ``SLIVER`` (point to point) moved
    to the run's first position, the run holding the last position to the last (the domain's end).

    Children's jumps that coincide in exact arithmetic arrive a few ulps apart when their curves were
    summed in different orders. Left apart, the earlier one alone may pass the parent's bound, so the
    parent stops between them and the later child reads beyond its jump by rounding only; which one
    comes first depends on the summation order, so two constructions of the same tree then hand out
    different shares. As one point, the parent stops at both jumps or passes both."""
    n = len(xs)
    if n < 2:
        return xs
    near = np.zeros(n, dtype=bool)
    near[1:] = xs[1:] - xs[:-1] <= SLIVER
    head = np.maximum.accumulate(np.where(near, 0, np.arange(n)))
    out = xs[head]
    out[head == head[-1]] = xs[-1]
    return out


def total_sum(parts: list[PLF], dim: int, end: float) -> PLF:
    """Sum of vector PL functions on [0, end] (each extended constantly at both ends).

    A sweep over slope changes and jumps, O(N log N) in the total number of points, instead of
    evaluating every part at every breakpoint.
    """
    if not parts:
        return PLF([0.0, end], [[0.0] * dim, [0.0] * dim])
    if len(parts) == 1:
        p = parts[0]
        xs, ys = list(p.xs), list(p.ys)
        if xs[0] > 0.0:
            xs.insert(0, 0.0)
            ys.insert(0, ys[0])
        if xs[-1] < end:
            xs.append(end)
            ys.append(ys[-1])
        return clean(xs, ys)
    x = np.concatenate([p.ax for p in parts])
    y = np.concatenate([p.ay for p in parts]).reshape(len(x), dim)
    lens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    return sum_points(x, y, lens, np.add.reduce([p.ay[0] for p in parts]), dim, end)


def sum_points(x: np.ndarray, y: np.ndarray, lens: np.ndarray, base: np.ndarray, dim: int, end: float,
               mult: np.ndarray | None = None) -> PLF:
    """``total_sum`` of two or more parts given as their points end to end (``x``, ``y``), each
    part's point count (``lens``) and the sum of their first values (``base``). ``mult`` (per
    point) counts a part that many times: the same events at the same knots, each slope and jump
    times its count (YTsaurus group elements)."""
    lastmask = np.zeros(len(x), dtype=bool)
    lastmask[np.cumsum(lens) - 1] = True
    valid = ~lastmask[:-1]
    dx = x[1:] - x[:-1]
    dy = y[1:] - y[:-1]
    lin = valid & (dx > SLIVER)
    jmp = valid & (dx <= SLIVER)
    slope = dy[lin] / dx[lin][:, None]
    jumps = dy[jmp]
    if mult is not None:
        w = mult[:-1][:, None]
        slope, jumps = slope * w[lin], jumps * w[jmp]
    ev_x = np.concatenate([x[:-1][lin], x[1:][lin], x[:-1][jmp], [0.0, end]])
    ev_s = np.concatenate([slope, -slope, np.zeros((int(jmp.sum()) + 2, dim))])
    ev_j = np.concatenate([np.zeros((2 * int(lin.sum()), dim)), jumps, np.zeros((2, dim))])
    order = np.argsort(ev_x, kind="stable")
    xs_sorted = snap_knots(ev_x[order])
    starts = np.flatnonzero(np.concatenate([[True], xs_sorted[1:] != xs_sorted[:-1]]))
    u = xs_sorted[starts]
    S = np.add.reduceat(ev_s[order], starts, axis=0)
    J = np.add.reduceat(ev_j[order], starts, axis=0)
    after = np.cumsum(S, axis=0)
    step = J[:-1] + after[:-1] * np.diff(u)[:, None]
    left = base + np.vstack([np.zeros((1, dim)), np.cumsum(step, axis=0)])
    right = left + J
    has_jump = np.any(J != 0, axis=1)
    nk = len(u)
    idx = np.concatenate([np.arange(nk), np.nonzero(has_jump)[0]])
    sub = np.concatenate([np.zeros(nk), np.ones(int(has_jump.sum()))])
    vals = np.concatenate([left, right[has_jump]])
    order = np.lexsort((sub, idx))
    xo, yo = np_clean(u[idx[order]], vals[order])
    return PLF(xo, yo)


# -- numpy paths for large curves (pools high in the tree), same semantics as the list code -------

LARGE = 400  # functions with at least this many points take the numpy path (measured break-even)


def np_left_right(xs: np.ndarray, vs: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left and right values at each query (``vs`` 1-D or 2-D), as ``_eval1``/``PLF.left/right``."""
    n = len(xs)
    jl = np.searchsorted(xs, q, "left")
    jr = np.searchsorted(xs, q, "right")
    a = np.clip(jl - 1, 0, n - 1)
    b = np.clip(jl, 0, n - 1)
    dx = xs[b] - xs[a]
    t = np.where(dx > 0, (q - xs[a]) / np.where(dx > 0, dx, 1.0), 0.0)
    if vs.ndim == 2:
        t = t[:, None]
    interp = vs[a] + (vs[b] - vs[a]) * t
    shape = (-1, 1) if vs.ndim == 2 else (-1,)
    at_knot = (jl < n) & (jl < jr)
    left = np.where((jl >= n).reshape(shape), vs[-1],
                    np.where((jl == 0).reshape(shape), vs[0],
                             np.where(at_knot.reshape(shape), vs[b], interp)))
    rk = np.clip(jr - 1, 0, n - 1)
    right = np.where((jl >= n).reshape(shape), vs[-1],
                     np.where(at_knot.reshape(shape), vs[rk],
                              np.where((jl == 0).reshape(shape), vs[0], interp)))
    return left, right


def np_clean(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the first and last point of every run of equal x, drop exact repeats."""
    n = len(x)
    if n > 2:
        first = np.ones(n, dtype=bool)
        last = np.ones(n, dtype=bool)
        first[1:] = x[1:] != x[:-1]
        last[:-1] = x[1:] != x[:-1]
        keep = first | last
        x, y = x[keep], y[keep]
    if len(x) > 1:
        same = (x[1:] == x[:-1]) & np.all(y[1:] == y[:-1], axis=tuple(range(1, y.ndim)))
        keep = np.ones(len(x), dtype=bool)
        keep[1:] = ~same
        x, y = x[keep], y[keep]
    if len(x) == 1:
        x = np.concatenate([x, x])
        y = np.concatenate([y, y])
    return x, y


def _np_mff(xs: np.ndarray, yr: np.ndarray, g: float, lim: float) -> tuple[list[float], list[float]]:
    yr = np.maximum.accumulate(yr)
    lo, hi = float(yr[0]), float(yr[-1])
    lp = min(max(snap_limit(lim, hi), lo), hi)
    gp = min(max(g, lo), lp)
    n = len(xs)

    def inv_left(w: float) -> float:
        i = int(np.searchsorted(yr, w, "left"))
        if i == 0:
            return float(xs[0])
        if i >= n:
            return float(xs[-1])
        return _lerp1(float(yr[i - 1]), float(xs[i - 1]), float(yr[i]), float(xs[i]), w)

    def inv_right(w: float) -> float:
        i = int(np.searchsorted(yr, w, "right")) - 1
        if i < 0:
            return float(xs[0])
        if i >= n - 1:
            return float(xs[-1])
        return _lerp1(float(yr[i]), float(xs[i]), float(yr[i + 1]), float(xs[i + 1]), w)

    if lp - gp <= 0.0:
        v = inv_right(limit_level(yr, lp))
        return np.array([0.0, 1.0]), np.array([v, v])
    mask = (yr > gp) & (yr < lp)
    span = lp - gp
    head_s, head_v = [0.0], [inv_right(gp)]
    tail_s, tail_v = [span], [inv_left(lp)]
    if span < 1.0:
        tail = inv_right(limit_level(yr, lp))
        tail_s += [span, 1.0]
        tail_v += [tail, tail]
    return (np.concatenate([head_s, yr[mask] - gp, tail_s]), np.concatenate([head_v, xs[mask], tail_v]))


def _np_min(funcs: list[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    arrs = [(np.asarray(xs, dtype=float), np.asarray(vs, dtype=float)) for xs, vs in funcs]
    pos = np.unique(np.concatenate([a for a, _ in arrs]))
    L = np.empty((len(arrs), len(pos)))
    R = np.empty((len(arrs), len(pos)))
    for i, (xs, vs) in enumerate(arrs):
        L[i], R[i] = np_left_right(xs, vs, pos)
    mL, mR = L.min(axis=0), R.min(axis=0)
    P = len(pos)
    k_all = [np.arange(P), np.arange(P)]
    sub = [np.zeros(P), np.ones(P)]
    xo = [pos, pos]
    vo = [mL, mR]
    keep = [np.ones(P, dtype=bool), mR != mL]
    if P > 1:
        a, b = R[:, :-1], L[:, 1:]
        x0, x1 = pos[:-1], pos[1:]
        F = len(arrs)
        for i in range(F):
            for j in range(i + 1, F):
                d0 = a[i] - a[j]
                d1 = b[i] - b[j]
                hit = d0 * d1 < 0
                if not hit.any():
                    continue
                idx = np.nonzero(hit)[0]
                t = d0[idx] / (d0[idx] - d1[idx])
                cx = x0[idx] + (x1[idx] - x0[idx]) * t
                inside = (cx > x0[idx]) & (cx < x1[idx])
                idx, t, cx = idx[inside], t[inside], cx[inside]
                val = (a[:, idx] + (b[:, idx] - a[:, idx]) * t).min(axis=0)
                k_all.append(idx)
                sub.append(2.0 + t)
                xo.append(cx)
                vo.append(val)
                keep.append(np.ones(len(idx), dtype=bool))
    K = np.concatenate(k_all)
    S = np.concatenate(sub)
    X = np.concatenate(xo)
    V = np.concatenate(vo)
    M = np.concatenate(keep)
    K, S, X, V = K[M], S[M], X[M], V[M]
    order = np.lexsort((S, K))
    return X[order], V[order]


def _np_compose(f: PLF, mx: list[float], mv: list[float]) -> PLF:
    fx = f.ax
    fy = f.ay
    mxa = np.asarray(mx, dtype=float)
    mva = np.asarray(mv, dtype=float)
    s0, s1, m0, m1 = mxa[:-1], mxa[1:], mva[:-1], mva[1:]
    nondeg = s1 > s0
    flat = nondeg & (m1 == m0)
    inc = nondeg & (m1 > m0)
    dim = fy.shape[1]
    keys_k: list[np.ndarray] = [np.array([-1])]
    keys_s: list[np.ndarray] = [np.array([0.0])]
    xs_out: list[np.ndarray] = [mxa[:1]]
    ys_out: list[np.ndarray] = [np_left_right(fx, fy, mva[:1])[0]]
    kf = np.nonzero(flat)[0]
    if len(kf):
        v = np_left_right(fx, fy, m0[kf])[0]
        keys_k += [kf, kf]
        keys_s += [np.zeros(len(kf)), np.full(len(kf), 3.0)]
        xs_out += [s0[kf], s1[kf]]
        ys_out += [v, v]
    ki = np.nonzero(inc)[0]
    if len(ki):
        keys_k += [ki, ki]
        keys_s += [np.zeros(len(ki)), np.full(len(ki), 3.0)]
        xs_out += [s0[ki], s1[ki]]
        ys_out += [np_left_right(fx, fy, m0[ki])[1], np_left_right(fx, fy, m1[ki])[0]]
        knots = np.unique(fx)
        seg = np.searchsorted(m0[ki], knots, "left") - 1
        ok = seg >= 0
        seg_c = np.clip(seg, 0, len(ki) - 1)
        ok &= (knots > m0[ki][seg_c]) & (knots < m1[ki][seg_c])
        if ok.any():
            kn = knots[ok]
            sk = ki[seg_c[ok]]
            sx = s0[sk] + (kn - m0[sk]) / (m1[sk] - m0[sk]) * (s1[sk] - s0[sk])
            lv, rv = np_left_right(fx, fy, kn)
            frac = (kn - m0[sk]) / (m1[sk] - m0[sk])
            keys_k += [sk, sk]
            keys_s += [1.0 + frac, 1.0 + frac + 1e-300]
            xs_out += [sx, sx]
            ys_out += [lv, rv]
    K = np.concatenate(keys_k)
    S = np.concatenate(keys_s)
    X = np.concatenate(xs_out)
    Y = np.concatenate([y.reshape(-1, dim) for y in ys_out])
    tie = np.arange(len(K))
    order = np.lexsort((tie, S, K))
    x, y = np_clean(X[order], Y[order])
    return PLF(x, y)
