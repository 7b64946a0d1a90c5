"""Piecewise-linear monotone vector functions with jumps, the building block of vector HDRF.

A function is a list of x positions (non-decreasing; a repeated x is a vertical jump) and the value
vector at each. Evaluation is *left-continuous*: at a jump the first (lower) value counts. That is
what makes a pool take the lower fair share at a discontinuity, as YTsaurus does (SEMANTICS §2.4).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

Vec = list[float]


@dataclass(slots=True)
class PLF:
    xs: list[float]
    ys: list[Vec]

    def left(self, x: float) -> Vec:
        """Value at x (left-continuous), clamped to the domain."""
        xs = self.xs
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
        xs = self.xs
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
        return self.xs[-1]


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
    xs = f.xs
    yr = [y[r] for y in f.ys]
    # enforce monotonicity against rounding noise
    for i in range(1, len(yr)):
        if yr[i] < yr[i - 1]:
            yr[i] = yr[i - 1]
    lo, hi = yr[0], yr[-1]
    lp = min(max(lim, lo), hi)
    gp = min(max(g, lo), lp)
    if lp - gp <= 0.0:
        v = _inv_right(xs, yr, lp)
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
        tail = _inv_right(xs, yr, lp)
        ss.extend([span, 1.0])
        vs.extend([tail, tail])
    return ss, vs


def _eval1(xs: list[float], vs: list[float], x: float) -> tuple[float, float]:
    """(left value, right value) of a scalar PL function with jumps."""
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


def min_scalar(funcs: list[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    """Pointwise minimum of scalar PL functions on [0, 1] (with jumps)."""
    if len(funcs) == 1:
        return funcs[0]
    pos = sorted({x for xs, _ in funcs for x in xs})
    lefts = []
    rights = []
    for x in pos:
        lv, rv = [], []
        for xs, vs in funcs:
            a, b = _eval1(xs, vs, x)
            lv.append(a)
            rv.append(b)
        lefts.append(lv)
        rights.append(rv)
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
    fx = f.xs
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
        while i < len(fx) and fx[i] < m1:
            x = fx[i]
            s = s0 + (x - m0) / (m1 - m0) * (s1 - s0)
            out_x.append(s)
            out_y.append(f.left(x))
            rv = f.right(x)
            out_x.append(s)
            out_y.append(rv)
            i = bisect_right(fx, x)
        out_x.append(s1)
        out_y.append(f.left(m1))
    return clean(out_x, out_y)


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
    xl: list[float] = []
    yl: list[Vec] = []
    last: list[bool] = []
    base = np.zeros(dim)
    for p in parts:
        xl.extend(p.xs)
        yl.extend(p.ys)
        last.extend([False] * (len(p.xs) - 1) + [True])
        base += p.ys[0]
    x = np.asarray(xl, dtype=float)
    y = np.asarray(yl, dtype=float).reshape(len(xl), dim)
    valid = ~np.asarray(last[:-1], dtype=bool)
    dx = x[1:] - x[:-1]
    dy = y[1:] - y[:-1]
    lin = valid & (dx > 0)
    jmp = valid & (dx <= 0)
    slope = dy[lin] / dx[lin][:, None]
    ev_x = np.concatenate([x[:-1][lin], x[1:][lin], x[:-1][jmp], [0.0, end]])
    ev_s = np.concatenate([slope, -slope, np.zeros((int(jmp.sum()) + 2, dim))])
    ev_j = np.concatenate([np.zeros((2 * int(lin.sum()), dim)), dy[jmp], np.zeros((2, dim))])
    u, inv = np.unique(ev_x, return_inverse=True)
    S = np.zeros((len(u), dim))
    J = np.zeros((len(u), dim))
    np.add.at(S, inv, ev_s)
    np.add.at(J, inv, ev_j)
    after = np.cumsum(S, axis=0)
    step = J[:-1] + after[:-1] * np.diff(u)[:, None]
    left = base + np.vstack([np.zeros((1, dim)), np.cumsum(step, axis=0)])
    right = left + J
    has_jump = np.any(J != 0, axis=1)
    ux = u.tolist()
    lv = left.tolist()
    rv = right.tolist()
    xs_out: list[float] = []
    ys_out: list[Vec] = []
    for k in range(len(ux)):
        xs_out.append(ux[k])
        ys_out.append(lv[k])
        if has_jump[k]:
            xs_out.append(ux[k])
            ys_out.append(rv[k])
    return clean(xs_out, ys_out)
