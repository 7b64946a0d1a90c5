"""Pools of the fair share update computed together, level by level, in a few numpy passes.

A tree with thousands of small pools spends its time in per-pool Python work on curves of a few
dozen points. Here pools whose children are all known are computed together as padded 2-D arrays
(one row per pool): the pool curve as a sweep over the children's slope changes and jumps, then the
fair share by suggestion read off the curve parametrically. The result is the same function as the
generic path (``fairshare.pool_curve`` then ``fit_factor_fn`` and ``plf.compose``) up to rounding;
a pool whose shape falls outside what this handles (a span of 1 or more on some resource) is
reported back and takes the generic path. The root, read at suggestion 1 only, gets just its fit
factor there (``root_fit``).

The parametric view: with g' and L' the guarantee and limit clipped into the curve's range, the fit
factor by suggestion of resource r is the inverse of F_r - g'_r on [0, L'_r - g'_r], then the right
end of the plateau at L'_r. The pool's fit factor is the minimum over resources, so
M(s) = inf{f : rho(f) >= s} with rho(f) = max(0, max_r F_r(f) - g'_r) below f* = min_r tail_r
(where some resource reaches its limit for good), and 1 from f* on. The fair share by suggestion is
then the curve F at M(s): the points (rho(f), F(f)) over F's knots and the points where the maximum
switches resource or leaves 0, with the lower value kept at every jump (SEMANTICS §2.4).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.plf import LIMIT_SNAP, PLF, SLIVER



def pad_points(fns: list[PLF], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Stack functions into (n, Q) x positions and (n, Q, dim) values, each padded with its last point
    (a repeated point changes nothing: evaluation looks at the first and last point of a run)."""
    lens = np.fromiter((len(f) for f in fns), dtype=np.int64, count=len(fns))
    q = int(lens.max())
    if (lens == q).all():
        return np.stack([f.ax for f in fns]), np.stack([f.ay for f in fns]).reshape(len(fns), q, dim)
    x = np.concatenate([f.ax for f in fns])
    y = np.concatenate([f.ay for f in fns]).reshape(len(x), dim)
    start = np.concatenate([[0], np.cumsum(lens)[:-1]])
    idx = start[:, None] + np.minimum(np.arange(q)[None, :], lens[:, None] - 1)
    return x[idx], y[idx]


def _compact(x: np.ndarray, y: np.ndarray, keep: np.ndarray):
    """Rows with the points where ``keep`` is False removed: flat arrays plus per-row offsets/counts."""
    flat = np.flatnonzero(keep.ravel())
    counts = keep.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return x.reshape(-1)[flat], y.reshape(-1, *y.shape[2:])[flat], offsets, counts


def _repad(fx: np.ndarray, fy: np.ndarray, offsets: np.ndarray, counts: np.ndarray):
    """``_compact``'s rows back as padded arrays, as wide as the longest row."""
    w = int(counts.max())
    idx = offsets[:, None] + np.minimum(np.arange(w)[None, :], counts[:, None] - 1)
    return fx[idx], fy[idx]


def _run_ends(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mask keeping, of every run of equal x, the first point and the last one if its value differs:
    a jump is its lower and upper value only, as ``plf.np_clean`` leaves it (intermediate values
    inside a jump would read as extra steps once the curve is inverted)."""
    n = x.shape[1]
    step = x[:, 1:] != x[:, :-1]
    first = np.ones(x.shape, dtype=bool)
    first[:, 1:] = step
    last = np.ones(x.shape, dtype=bool)
    last[:, :-1] = step
    keep = first.copy()
    rows, cols = np.nonzero(last & ~first)  # ends of runs of two or more points: compare with the head
    if len(rows):
        start = np.maximum.accumulate(np.where(first, np.arange(n)[None, :], 0), axis=1)[rows, cols]
        keep[rows, cols] = np.any(y[rows, cols] != y[rows, start], axis=-1)
    return keep


def compact_rows(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Padded functions with every run of equal x cut to its ends, re-padded to the longest row
    (an operation's closed form has 14 points of which 4 to 8 are distinct)."""
    fx, fy, off, cnt = _compact(x, y, _run_ends(x, y))
    return _repad(fx, fy, off, cnt)


def _count_below(xs: np.ndarray, q: np.ndarray, inclusive: bool = False) -> np.ndarray:
    """Per row, how many of the ascending ``xs`` are < q (<= q with ``inclusive``): a row-wise bisect."""
    return (xs <= q[:, None]).sum(axis=1) if inclusive else (xs < q[:, None]).sum(axis=1)


def _left_at(xs: np.ndarray, ys: np.ndarray, q: np.ndarray, lerp1: bool = False) -> np.ndarray:
    """Per row, the left-continuous value at q (as ``PLF.left``), values of shape (R, W, ...); with
    ``lerp1`` (scalar values) rounded as ``plf._eval1`` on lists rounds, so that a pool read here
    gets the very fit factor a cached copy of it gets on the generic path."""
    rows = np.arange(len(q))
    w = xs.shape[1]
    j = _count_below(xs, q)
    jc = np.minimum(j, w - 1)
    jp = np.maximum(j - 1, 0)
    x0, x1 = xs[rows, jp], xs[rows, jc]
    dx = np.where(x1 > x0, x1 - x0, 1.0)
    t = np.where(x1 > x0, (q - x0) / dx, 0.0)
    y0, y1 = ys[rows, jp], ys[rows, jc]
    if ys.ndim == 3:
        t = t[:, None]
    interp = y0 + (y1 - y0) * t
    if lerp1:
        interp = np.where(x1 > x0, y0 + (y1 - y0) * (q - x0) / dx, y0)
    exact = (j < w) & (xs[rows, jc] == q)
    first = j == 0
    last = j >= w
    shape = (-1, 1) if ys.ndim == 3 else (-1,)
    out = np.where(exact.reshape(shape) | first.reshape(shape), y1, interp)
    return np.where(last.reshape(shape), ys[:, -1], out)


# -- pool curves -------------------------------------------------------------------------------

def _parts(cx, cy, kid, fifo, k, pos, n):
    """Children's fair share by suggestion placed on the pool's fit factor axis (``pool_curve``):
    fair share mode scales x by 1/k (k = weight / smallest weight), FIFO shifts child i to [i, i+1];
    every part starts at 0 and is held constant to the pool's end. Missing children (padding) are 0."""
    dummy = kid < 0
    x = cx[np.where(dummy, 0, kid)]
    y = cy[np.where(dummy, 0, kid)]
    end = np.where(fifo, n, 1.0)
    kpos = k > 0
    scaled = np.where(kpos[:, :, None], x / np.where(kpos, k, 1.0)[:, :, None], 0.0)
    y = np.where((~fifo[:, None] & ~kpos)[:, :, None, None], y[:, :, :1], y)
    x = np.where(fifo[:, None, None], x + pos[:, :, None], scaled)
    x = np.where(dummy[:, :, None], 0.0, x)
    y = np.where(dummy[:, :, None, None], 0.0, y)
    last_x = np.where(fifo[:, None], n[:, None], np.maximum(x[:, :, -1], 1.0))
    last_x = np.where(dummy, end[:, None], last_x)
    px = np.concatenate([np.zeros(x.shape[:2] + (1,)), x, last_x[:, :, None]], axis=2)
    py = np.concatenate([y[:, :, :1], y, y[:, :, -1:]], axis=2)
    return px, py


def _snap_knots(ex: np.ndarray) -> np.ndarray:
    """``plf.snap_knots`` on every row (sorted x positions of a curve sum)."""
    n = ex.shape[1]
    near = np.zeros(ex.shape, dtype=bool)
    near[:, 1:] = ex[:, 1:] - ex[:, :-1] <= SLIVER
    head = np.maximum.accumulate(np.where(near, 0, np.arange(n)[None, :]), axis=1)
    return np.where(head == head[:, -1:], ex[:, -1:], np.take_along_axis(ex, head, axis=1))


def _sweep(px: np.ndarray, py: np.ndarray, mult: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row sums of parts (R, K, P) as curves (R, 2KP): slope changes and jumps of every part, sorted by
    x within the row and accumulated; each event yields its value before and after its own jump, so
    a run of equal x starts at the left value and ends at the right value. ``mult`` (R, K): part
    counted that many times (a group of equal operations, ``grouping``)."""
    r, kk, p = px.shape
    dim = py.shape[-1]
    dx = px[:, :, 1:] - px[:, :, :-1]
    dy = py[:, :, 1:] - py[:, :, :-1]
    lin = dx > SLIVER  # narrower rises are summed as jumps (``plf.SLIVER``)
    slope = np.where(lin[..., None], dy / np.where(lin, dx, 1.0)[..., None], 0.0)
    zero = np.zeros((r, kk, 1, dim))
    s_ext = np.concatenate([zero, slope, zero], axis=2)
    ds = s_ext[:, :, 1:] - s_ext[:, :, :-1]
    jump = np.concatenate([zero, np.where(lin[..., None], 0.0, dy)], axis=2)
    if mult is not None:
        m = mult[:, :, None, None]
        ds = ds * m
        jump = jump * m
        base = (py[:, :, 0] * mult[:, :, None]).sum(axis=1)
    else:
        base = py[:, :, 0].sum(axis=1)
    ex = px.reshape(r, kk * p)
    order = np.argsort(ex, axis=1, kind="stable")
    ex = _snap_knots(np.take_along_axis(ex, order, axis=1))
    ed = np.take_along_axis(ds.reshape(r, kk * p, dim), order[:, :, None], axis=1)
    ej = np.take_along_axis(jump.reshape(r, kk * p, dim), order[:, :, None], axis=1)
    cs = np.cumsum(ed, axis=1)
    inc = cs[:, :-1] * (ex[:, 1:] - ex[:, :-1])[:, :, None] + ej[:, :-1]
    acc = base[:, None] + np.concatenate([np.zeros((r, 1, dim)), np.cumsum(inc, axis=1)], axis=1)
    xs = np.repeat(ex, 2, axis=1)
    ys = np.stack([acc, acc + ej], axis=2).reshape(r, 2 * kk * p, dim)
    return xs, ys


# -- fair share by suggestion ------------------------------------------------------------------

def _snap_limit(lim: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``plf.snap_limit`` on arrays."""
    return np.where((hi >= lim) & (hi <= lim + LIMIT_SNAP), hi, lim)


def _limit_level(yr: np.ndarray, lp: np.ndarray) -> np.ndarray:
    """``plf.limit_level`` per row: the highest knot value within ``LIMIT_SNAP`` above L', else L'."""
    rows = np.arange(len(lp))
    i = _count_below(yr, lp + LIMIT_SNAP, inclusive=True) - 1
    top = yr[rows, np.maximum(i, 0)]
    return np.where((i >= 0) & (top >= lp), top, lp)


def _inv_right(xs: np.ndarray, yr: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row sup{f : F_r(f) <= w} of an ascending component (as ``plf._inv_right``)."""
    rows = np.arange(len(w))
    n = xs.shape[1]
    i = _count_below(yr, w, inclusive=True) - 1
    ic = np.clip(i, 0, n - 2)
    y0, y1, x0, x1 = yr[rows, ic], yr[rows, ic + 1], xs[rows, ic], xs[rows, ic + 1]
    same = y1 == y0
    v = np.where(same, x0, x0 + (x1 - x0) * (w - y0) / np.where(same, 1.0, y1 - y0))
    return np.where(i < 0, xs[:, 0], np.where(i >= n - 1, xs[:, -1], v))


SNAP = 1e-13  # suggestions (shares, at most 1) closer than this are one suggestion


def _snap(rho: np.ndarray) -> np.ndarray:
    """Merge runs of suggestions that differ only by rounding into their first value. A crossing point
    found by interpolation can land a few ulps off a plateau (or off 0) that the generic path has
    exactly; left as is, that sliver is a near-vertical piece whose slope (about 1e16) ruins a
    parent's curve sum, and a rho of 1e-19 instead of 0 moves the fit factor at suggestion 0."""
    n = rho.shape[1]
    near = np.zeros(rho.shape, dtype=bool)
    near[:, 1:] = rho[:, 1:] - rho[:, :-1] <= SNAP
    head = np.maximum.accumulate(np.where(near, 0, np.arange(n)[None, :]), axis=1)
    return np.take_along_axis(rho, head, axis=1)


def _kinks(fx, fy, yr, z, gp):
    """Points inside segments where rho = max(0, max_r F_r - g'_r) changes its piece: F_r meeting
    g'_r (placed by the formula of ``plf._inv_right``, so exactly where the generic path puts the fit
    factor at suggestion 0) and two resources' lines crossing. Only segments whose leading piece
    differs at the two ends can hold one; returns (row, f, value, z) of each, or None."""
    r, w, dim = fy.shape
    top = np.argmax(np.concatenate([z, np.zeros((r, w, 1))], axis=2), axis=2)
    rows, seg = np.nonzero((fx[:, 1:] > fx[:, :-1]) & (top[:, 1:] != top[:, :-1]))
    if len(rows) == 0:
        return None
    x0, x1 = fx[rows, seg], fx[rows, seg + 1]
    y0, y1 = yr[rows, seg], yr[rows, seg + 1]
    z0, z1 = z[rows, seg], z[rows, seg + 1]
    g = gp[rows]
    cands, snaps = [], []
    for i in range(dim):
        hit = (y0[:, i] < g[:, i]) & (y1[:, i] > g[:, i])
        dy = np.where(hit, y1[:, i] - y0[:, i], 1.0)
        cands.append(np.where(hit, x0 + (x1 - x0) * (g[:, i] - y0[:, i]) / dy, np.nan))
        snaps.append(i)
        for j in range(i + 1, dim):
            d0, d1 = z0[:, i] - z0[:, j], z1[:, i] - z1[:, j]
            hit = d0 * d1 < 0
            cands.append(np.where(hit, x0 + (x1 - x0) * (d0 / np.where(hit, d0 - d1, 1.0)), np.nan))
            snaps.append(-1)
    cx = np.stack(cands, axis=1)
    valid = (cx > x0[:, None]) & (cx < x1[:, None])
    k, c = np.nonzero(valid)
    cx = cx[k, c]
    t = ((cx - x0[k]) / (x1[k] - x0[k]))[:, None]
    f0, f1 = fy[rows[k], seg[k]], fy[rows[k], seg[k] + 1]
    cy = f0 + (f1 - f0) * t
    cz = z0[k] + (z1[k] - z0[k]) * t
    snap = np.array(snaps)[c]
    cz[snap >= 0, snap[snap >= 0]] = 0.0
    return rows[k], cx, cy, cz


def _merge(px, py, pz, rows, cx, cy, cz):
    """Insert the extra points into their rows, in f order (each lies strictly inside a segment, so
    a stable sort keeps every knot's own order)."""
    r, n = px.shape
    counts = np.bincount(rows, minlength=r)
    e = int(counts.max())
    order = np.argsort(rows, kind="stable")
    rows, cx, cy, cz = rows[order], cx[order], cy[order], cz[order]
    slot = np.arange(len(rows)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[rows]
    ex = np.repeat(px[:, -1:], e, axis=1)
    ey = np.repeat(py[:, -1:], e, axis=1)
    ez = np.repeat(pz[:, -1:], e, axis=1)
    ex[rows, slot], ey[rows, slot], ez[rows, slot] = cx, cy, cz
    ax = np.concatenate([px, ex], axis=1)
    order = np.argsort(ax, axis=1, kind="stable")
    return (np.take_along_axis(ax, order, axis=1),
            np.take_along_axis(np.concatenate([py, ey], axis=1), order[:, :, None], axis=1),
            np.take_along_axis(np.concatenate([pz, ez], axis=1), order[:, :, None], axis=1))


def _fsbs(fx: np.ndarray, fy: np.ndarray, g: np.ndarray, lim: np.ndarray):
    """Fit factor by suggestion and fair share by suggestion of every row's curve, as padded points
    (s, f, value); ``ok`` is False for rows this does not cover (a span of 1 or more)."""
    r, w, dim = fy.shape
    rows = np.arange(r)
    yr = np.maximum.accumulate(fy, axis=1)
    lo, hi = yr[:, 0], yr[:, -1]
    lp = np.minimum(np.maximum(_snap_limit(lim, hi), lo), hi)
    gp = np.minimum(np.maximum(g, lo), lp)
    ok = np.all(lp - gp < 1.0, axis=1)
    tails = np.stack([_inv_right(fx, yr[:, :, i], _limit_level(yr[:, :, i], lp[:, i])) for i in range(dim)], axis=1)
    fstar = tails.min(axis=1)
    z = yr - gp[:, None, :]
    # the knots, each followed by the corner of the jump that may start there: the new rho with the
    # old value (flat at the lower value, then the jump); elsewhere the corner repeats the next knot
    jmp = fx[:, 1:] == fx[:, :-1]
    px = np.concatenate([np.stack([fx[:, :-1], fx[:, 1:]], axis=2).reshape(r, 2 * (w - 1)), fx[:, -1:]], axis=1)
    ky = np.where(jmp[..., None], fy[:, :-1], fy[:, 1:])
    py = np.concatenate([np.stack([fy[:, :-1], ky], axis=2).reshape(r, 2 * (w - 1), dim), fy[:, -1:]], axis=1)
    pz = np.concatenate([np.stack([z[:, :-1], z[:, 1:]], axis=2).reshape(r, 2 * (w - 1), dim), z[:, -1:]], axis=1)
    extra = _kinks(fx, fy, yr, z, gp)
    if extra is not None:
        px, py, pz = _merge(px, py, pz, *extra)
    # from f* on the pool is at its limit: one point (f*, F(f*-)) stands for all of them
    ystar = _left_at(fx, fy, fstar)
    zstar = _left_at(fx, yr, fstar) - gp
    beyond = px >= fstar[:, None]
    px = np.where(beyond, fstar[:, None], px)
    py = np.where(beyond[..., None], ystar[:, None], py)
    pz = np.where(beyond[..., None], zstar[:, None], pz)
    pz = np.minimum(pz, (lp - gp)[:, None, :])  # below f* every resource is within its limit
    rho = _snap(np.maximum.accumulate(np.maximum(pz.max(axis=2), 0.0), axis=1))
    # at s = 0 the fit factor is the last f with rho = 0, and the value there the left value
    nzero = (rho <= 0.0).sum(axis=1)
    f0 = px[rows, nzero - 1]
    y0 = _left_at(fx, fy, f0)
    zmask = rho <= 0.0
    px = np.where(zmask, f0[:, None], px)
    py = np.where(zmask[..., None], y0[:, None], py)
    s = np.concatenate([rho, np.ones((r, 1))], axis=1)
    f = np.concatenate([px, fstar[:, None]], axis=1)
    v = np.concatenate([py, ystar[:, None]], axis=1)
    return s, f, v, ok


# -- the level ---------------------------------------------------------------------------------

CHUNK = 1 << 15  # points per chunk: small arrays are reused by the allocator, large ones cost page faults


def leaf_pools(cx: np.ndarray, cy: np.ndarray, kids: list[list[int]], fifo: list[bool],
               weights: list[list[float]], g: np.ndarray, lim: np.ndarray,
               view: "LevelView | None" = None, mult: list[list[int]] | None = None) -> list[tuple | None]:
    """(curve, fit factor by suggestion, fair share by suggestion) of every pool, None where the
    pool must take the generic path. ``cx``/``cy`` hold the children's fair share by suggestion as
    padded rows (``pad_points``); ``kids`` the rows of each pool's children in the pool's order (FIFO
    order for FIFO pools); ``g``/``lim`` (pools x dim) its guarantee and limit shares. Pools are taken
    in order of size so that a chunk pads little. ``view``, if given, keeps what a top-down read of
    all these pools at once needs (``LevelView``)."""
    out: list[tuple | None] = [None] * len(kids)
    lay = _Layout(kids, fifo, weights, mult)
    if view is not None:
        view.start(cx, cy, lay, len(kids))
    sizes = lay.sizes
    order = np.argsort(sizes, kind="stable")
    budget = max(1, CHUNK // (cx.shape[1] + 2))
    at = 0
    while at < len(order):
        width = max(1, int(sizes[order[at]]))
        end = at + 1
        while end < len(order) and (end - at + 1) * max(width, int(sizes[order[end]])) <= budget:
            width = max(width, int(sizes[order[end]]))
            end += 1
        members = order[at:end]
        for i, res in zip(members.tolist(), _chunk(members, width, cx, cy, lay, g, lim, view)):
            out[i] = res
        at = end
    return out


class LevelView:
    """One level's pools read top-down in one pass: each pool's fit factor and fair share at its
    suggestion, and its children's suggestions and fair shares (children being rows of ``cx``/``cy``),
    the arithmetic of ``child_suggestion`` and ``PLF.left`` on arrays."""

    def start(self, cx, cy, lay: "_Layout", n: int) -> None:
        self.cx, self.cy, self.lay = cx, cy, lay
        self.chunks: list[tuple] = []
        self.ok = np.zeros(n, dtype=bool)

    def add(self, members, s, fv, ok, kk) -> None:
        self.chunks.append((members, s, fv, kk))
        self.ok[members] = ok

    def read(self, sugg: np.ndarray):
        """For suggestions ``sugg`` (one per pool of the level): fit factors, fair shares, and the
        children as (pool index, position in the pool, fair share) arrays; pools not ``ok`` are
        skipped (NaN)."""
        n = len(self.ok)
        dim = self.cy.shape[-1]
        fit = np.full(n, np.nan)
        fair = np.full((n, dim), np.nan)
        kid_pool, kid_col, kid_fair = [], [], []
        lay = self.lay
        for members, s, fv, kk in self.chunks:
            q = sugg[members]
            f = _left_at(s, fv[:, :, 0], q, lerp1=True)
            fit[members] = f
            fair[members] = _left_at(s, fv[:, :, 1:], q)
            kid, _, pos, _, fifo = lay.block(members, kk)
            col = np.arange(kk)[None, :]
            idx = np.where(kid >= 0, lay.offsets[members][:, None] + col, 0)
            fs = f[:, None]
            share = np.where(fifo[:, None], np.minimum(1.0, np.maximum(0.0, fs - pos)),
                             np.minimum(1.0, fs * lay.w[idx] / lay.wmin[members][:, None]))
            keep = (kid >= 0) & self.ok[members][:, None]
            rows, cols = np.nonzero(keep)
            kid_pool.append(members[rows])
            kid_col.append(cols)
            kid_fair.append(_left_at(self.cx[kid[rows, cols]], self.cy[kid[rows, cols]], share[rows, cols]))
        if not kid_pool:
            return fit, fair, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, dim))
        return fit, fair, np.concatenate(kid_pool), np.concatenate(kid_col), np.concatenate(kid_fair)


class _Layout:
    """The children of all pools as flat arrays: row in the children's arrays, the scale k = weight /
    smallest weight (fair share mode) and the position (FIFO), with each pool's offset and size."""

    def __init__(self, kids: list[list[int]], fifo: list[bool], weights: list[list[float]],
                 mult: list[list[int]] | None = None) -> None:
        self.mult = None if mult is None else np.fromiter(chain.from_iterable(mult), dtype=float)
        self.sizes = np.fromiter(map(len, kids), dtype=np.int64, count=len(kids))
        total = int(self.sizes.sum())
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.rows = np.fromiter(chain.from_iterable(kids), dtype=np.int64, count=total)
        w = self.w = np.fromiter(chain.from_iterable(weights), dtype=float, count=total)
        self.fifo = np.array(fifo, dtype=bool)
        wmin = np.minimum.reduceat(np.where(w > EPS, w, np.inf), self.offsets)
        wmin = self.wmin = np.where(np.isinf(wmin), 1.0, wmin)
        self.k = np.where(w > EPS, w / np.repeat(wmin, self.sizes), 0.0)
        self.pos = (np.arange(total) - np.repeat(self.offsets, self.sizes)).astype(float)

    def block(self, members: np.ndarray, kk: int):
        """(rows, k, pos, n, fifo) of ``members`` as (len(members), kk) blocks, -1 / 0 as padding."""
        col = np.arange(kk)[None, :]
        size = self.sizes[members][:, None]
        valid = col < size
        idx = np.where(valid, self.offsets[members][:, None] + col, 0)
        fifo = self.fifo[members]
        kid = np.where(valid, self.rows[idx], -1)
        k = np.where(valid & ~fifo[:, None], self.k[idx], 0.0)
        pos = np.where(valid & fifo[:, None], self.pos[idx], 0.0)
        return kid, k, pos, size[:, 0].astype(float), fifo

    def block_mult(self, members: np.ndarray, kk: int) -> np.ndarray | None:
        """Each child's count of equal operations as (len(members), kk), padding 0; None if all 1."""
        if self.mult is None:
            return None
        col = np.arange(kk)[None, :]
        valid = col < self.sizes[members][:, None]
        idx = np.where(valid, self.offsets[members][:, None] + col, 0)
        return np.where(valid, self.mult[idx], 0.0)


class NotGroupable(Exception):
    """Raised where a grouped tree's sum would not be bit for bit the per-operation one."""


def _integer_slopes(px: np.ndarray, py: np.ndarray, mult: np.ndarray) -> bool:
    """Rows holding a group (a count above 1): every part's slopes integers, no nonzero jump."""
    rows = np.flatnonzero((mult > 1).any(axis=1))
    if len(rows) == 0:
        return True
    x, y = px[rows], py[rows]
    dx = x[:, :, 1:] - x[:, :, :-1]
    dy = y[:, :, 1:] - y[:, :, :-1]
    lin = (dx > SLIVER)[..., None]
    slope = dy / np.where(lin, dx[..., None], 1.0)
    return bool(np.all(np.where(lin, slope == np.round(slope), dy == 0)))


def _chunk(members, kk, cx, cy, lay: _Layout, g, lim, view: LevelView | None = None):
    """One chunk of pools (at most ``kk`` children each): curves, fit factors and fair shares by
    suggestion, each pool's as PLFs (fit factor as lists, read one point at a time top-down)."""
    r = len(members)
    kid, k, pos, n, fmask = lay.block(members, kk)
    px, py = _parts(cx, cy, kid, fmask, k, pos, n)
    mult = lay.block_mult(members, kk)
    if mult is not None and not _integer_slopes(px, py, mult):
        raise NotGroupable("a pool's parts do not all have integer slopes")
    sx, sy = _sweep(px, py, mult)
    fx, fy, off, cnt = _compact(sx, sy, _run_ends(sx, sy))
    pfx, pfy = _repad(fx, fy, off, cnt)
    s, f, v, ok = _fsbs(pfx, pfy, g[members], lim[members])
    fv = np.concatenate([f[:, :, None], v], axis=2)
    ss, sv, soff, scnt = _compact(s, fv, _run_ends(s, fv))
    if view is not None:
        view.add(members, *_repad(ss, sv, soff, scnt), ok, kk)
    res = []
    for row in range(r):
        if not ok[row]:
            res.append(None)
            continue
        a, c = off[row], cnt[row]
        curve = PLF(fx[a:a + c], fy[a:a + c])
        a, c = soff[row], scnt[row]
        xs = ss[a:a + c]
        res.append((curve, (xs.tolist(), sv[a:a + c, 0].tolist()), PLF(xs, sv[a:a + c, 1:])))
    return res


def root_fit(cx: np.ndarray, cy: np.ndarray, kids: list[int], fifo: bool, weights: list[float],
             g: np.ndarray, lim: np.ndarray) -> float:
    """The fit factor of a pool at suggestion 1, without its curve or fair share by suggestion.

    The root is only ever read there, and its curve is the largest of the tree. At s = 1 each
    resource's fit factor is sup{f : F_r(f) <= L'_r} when its span L'_r - g'_r is below 1, else
    inf{f : F_r(f) >= min(L'_r, g'_r + 1)} (``plf.mff_component``); the pool's is their minimum,
    the first f where some resource passes its bound. F is the sum of the children's parts, read
    at single points, and that first f is found by bisection (to the last bit; the left end is
    kept, which is the left-continuous reading the generic path makes at a jump).
    """
    m = len(kids)
    k = np.zeros((1, m))
    pos = np.zeros((1, m))
    if fifo:
        pos[0] = np.arange(m)
    else:
        wmin = min((w for w in weights if w > EPS), default=1.0)
        k[0] = [w / wmin if w > EPS else 0.0 for w in weights]
    px, py = _parts(cx, cy, np.array([kids]), np.array([fifo]), k, pos, np.array([float(m)]))
    px, py = px[0], py[0]
    end = float(m) if fifo else 1.0

    def value(f: float) -> np.ndarray:
        return _left_at(px, py, np.full(m, f)).sum(axis=0)

    lo_v = py[:, 0].sum(axis=0)
    hi_v = py[:, -1].sum(axis=0)
    lp = np.minimum(np.maximum(_snap_limit(lim, hi_v), lo_v), hi_v)
    gp = np.minimum(np.maximum(g, lo_v), lp)
    span = lp - gp
    strict = span < 1.0  # passes when F_r > L'_r; otherwise when F_r >= bound
    bound = np.where(strict, lp, np.where(span == 1.0, lp, gp + 1.0))
    # at its top F_r never passes L'_r = F_r(end), whatever the rounding of a sum read mid-way says
    bound = np.where(strict & (lp >= hi_v), np.inf, bound)

    def passed(v: np.ndarray) -> bool:
        return bool(np.any(np.where(strict, v > bound, v >= bound)))

    if not passed(value(end)):
        return end
    if passed(value(0.0)):
        return 0.0
    lo, hi = 0.0, end
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if passed(value(mid)):
            hi = mid
        else:
            lo = mid
    return lo


def left_rows(xs: np.ndarray, ys: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Left values of the padded functions ``rows`` at ``q`` (one query per row), as ``PLF.left``."""
    return _left_at(xs[rows], ys[rows], q)
