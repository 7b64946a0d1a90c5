"""One compiled pass over an SWF log's bytes: what ``swf_scan._bytes_scan`` finds of every line, and
the numbers of every line simple enough to read exactly without numpy's parser.

Why: on the KTH log the vectorized scan (a dozen whole-buffer numpy passes, then ``np.loadtxt``
over the good lines) was about a sixth of a whole FIFO run. Here one loop does both, built ahead
of time like the event loop (``sim.fast.aot``), so no process loads numba to run it.

A token is *simple* when it is ``[+-]?`` then digits with at most one ``.`` among or after them
(or ``.`` then digits), at most 15 digits in all: its value is then an integer below 2**53 divided
by a power of ten below 10**16, both exact, and one correctly rounded division gives what a
correctly rounded parser (numpy's) gives. A line of 18 tokens whose every token is simple has its
kept fields written and is marked; every other line is left to the numpy path, so what that path
would reject it still rejects.
"""

from __future__ import annotations

from numba import njit

_MAX_DIGITS = 15


@njit(cache=True, _nrt=False)
def scan(buf, column, ends, ntok, first, tok11, len11, flags, V):  # pragma: no cover - compiled
    """Fill the per-line arrays (``ends``: each line's newline, as ``np.flatnonzero(buf == 10)``;
    ``flags``: bit 1 odd bytes, bit 2 foreign bytes, bit 4 parsed) and, for every parsed line,
    ``V[line, column[f]]`` with its field f wherever ``column[f] >= 0`` (other lines' rows hold
    whatever was written before the line turned out not simple). Returns the number of parsed
    lines. Allocates nothing: the built module runs without numba's runtime."""
    n = buf.shape[0]
    nlines = ntok.shape[0]
    parsed = 0
    line = 0
    pos = 0
    while line < nlines:
        stop = ends[line] if line < ends.shape[0] else n
        k = 0
        flag = 0
        plain = True  # every token so far simple, no vertical tab or form feed
        i = pos
        while i < stop:
            b = buf[i]
            if b == 32 or b == 9 or b == 11 or b == 12:
                if b == 11 or b == 12:
                    plain = False
                i += 1
                continue
            start = i
            sign = 1.0
            digits = 0
            frac = 0
            dots = 0
            mant = 0
            ok = True
            while i < stop:
                b = buf[i]
                if b == 32 or b == 9 or b == 11 or b == 12:
                    break
                if b < 32 or b >= 127:
                    flag |= 3
                    ok = False
                elif 48 <= b <= 57:
                    digits += 1
                    if digits <= _MAX_DIGITS:
                        mant = mant * 10 + (b - 48)
                    if dots:
                        frac += 1
                elif b == 46:
                    dots += 1
                elif (b == 43 or b == 45) and i == start:
                    if b == 45:
                        sign = -1.0
                elif b == 43 or b == 45 or b == 101 or b == 69:
                    ok = False
                else:
                    flag |= 2
                    ok = False
                i += 1
            if k == 0:
                first[line] = start
            elif k == 10:
                tok11[line] = start
                len11[line] = i - start
            if ok and digits and digits <= _MAX_DIGITS and dots <= 1 and plain:
                if k < 18 and column[k] >= 0:
                    v = float(mant)
                    if frac:
                        p = 1.0
                        for _ in range(frac):
                            p *= 10.0
                        v = v / p
                    V[line, column[k]] = sign * v
            else:
                plain = False
            k += 1
        ntok[line] = k
        if k == 18 and plain and flag == 0:
            flag |= 4
            parsed += 1
        flags[line] = flag
        pos = stop + 1
        line += 1
    return parsed

