"""An SWF log read in one pass over its bytes into arrays: the same jobs, warnings and errors as the
line-by-line reader (``swf._rows`` and friends, kept as the reference and the fallback).

Why: reading a log line by line (split, ``float`` per field, a tuple, a dict, a validated record per
job) cost two thirds of a KTH run. Here the lines are classified and the numbers parsed by numpy over
the whole buffer; only lines that are not plain rows of 18 numbers, or whose values fail a check,
go through the reference ``swf._parse`` (so their messages are its messages, word for word).

The result is a ``Tape``: the rows the reader yields, in the order it yields them, as columns, and
every warning, note, drop and count it would report, each at its place in that order (``pos``: how
many rows were yielded before it). Replaying the tape (``replay``) as far as a consumer reads gives
the reporter the same calls, in the same order, as the streaming reader would have made by then;
in strict mode the first bad line raises there, as it did.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from makeway.config import MAX_TASKS, MAX_TIME
from makeway.errors import TraceError
from makeway.sim.importers._common import ImportStats, Reporter

FIELDS = 18
_NUMERIC = np.zeros(256, bool)
_NUMERIC[np.frombuffer(b"0123456789+-.eE", np.uint8)] = True
_WS = np.zeros(256, bool)
_WS[[9, 10, 11, 12, 32]] = True
_ODD = np.zeros(256, bool)  # bytes whose meaning differs between bytes and decoded str: per-line path
_ODD[[b for b in range(32) if b not in (9, 10, 11, 12)] + list(range(127, 256))] = True
# columns of ``Tape.cols`` (a row of the reference reader: swf.Row, in its order)
SUBMIT, LINE, JOB, WAIT, RUN, PROCS, REQ, STATUS, USER, GROUP, QUEUE, PART = range(12)


@dataclass
class Tape:
    """What the reader yields (``cols``: one row per job, ``swf.Row`` order, float64) and reports."""

    cols: np.ndarray
    events: list[tuple] = field(default_factory=list)  # (kind, *args), in report order
    pos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # rows yielded before each
    # user, group, queue and partition of every row ``swf._rows`` yields (line order): what ``cluster`` reads
    parsed: np.ndarray | None = None

    def __len__(self) -> int:
        return self.cols.shape[0]


def replay(events: list[tuple], rep: Reporter, lo: int, hi: int) -> None:
    """Report events ``lo:hi`` of a tape through ``rep`` as the streaming reader reported them."""
    stats = rep.stats
    for ev in events[lo:hi]:
        kind = ev[0]
        if kind == "bad":
            rep.bad(ev[1], ev[2])
        elif kind == "note":
            rep.note(ev[1], ev[2])
        elif kind == "count":
            stats.count(ev[1])
        elif kind == "drop":
            stats.drop(ev[1])
        else:
            stats.merged += 1


class _Capture:
    """A reporter that writes down what ``swf._parse`` reports, in order, for the tape."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.stats = self

    def bad(self, line: int, problem: str) -> None:
        self.events.append(("bad", line, problem))

    def note(self, line: int, problem: str) -> None:
        self.events.append(("note", line, problem))

    def count(self, what: str) -> None:
        self.events.append(("count", what))


def _gunzip(path: Path) -> bytearray:
    """A gzip file's bytes read into one buffer sized from its trailer: ``GzipFile.read()`` joins its
    pieces at the end, holding the log twice at that moment."""
    with open(path, "rb") as fh:
        packed = fh.seek(0, os.SEEK_END)
        size = 0
        if packed >= 4:
            fh.seek(-4, os.SEEK_END)
            size = int.from_bytes(fh.read(4), "little")  # the last member's length mod 2**32: a hint
    out = bytearray(size if size <= 64 * packed else 0)  # a damaged trailer is no hint
    at = 0
    with gzip.open(path, "rb") as fh:
        while True:
            piece = fh.read(1 << 20)
            if not piece:
                break
            out[at:at + len(piece)] = piece  # grows the buffer where the hint fell short
            at += len(piece)
    del out[at:]
    return out


def _bytes(path: Path) -> bytes | bytearray | None:
    """The file's bytes, or None when it cannot be read whole (a corrupt gzip stream: the reference
    reader reports where it stopped)."""
    try:
        if path.suffix == ".gz":
            return _gunzip(path)
        return path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (EOFError, gzip.BadGzipFile, zlib.error):
        return None
    except OSError as exc:
        if isinstance(exc, (IsADirectoryError, PermissionError)):
            raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return None


_CACHE: dict[tuple, Tape | None] = {}


def tape(path: Path, processors: str = "requested") -> Tape | None:
    """The tape of ``path`` (kept for the next call with the same file, e.g. ``cluster`` then ``read``),
    or None when the reference reader must run (the file cannot be read whole, or holds a token
    numpy reads differently from Python)."""
    try:
        st = os.stat(path)
        key: tuple | None = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, processors)
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    got = _scan(Path(path), processors)
    if key is not None:
        _CACHE.clear()  # one file at a time: its arrays are all the memory this keeps
        _CACHE[key] = got
    return got


def forget() -> None:
    """Drop the kept tape (its arrays), once nothing will read it again."""
    _CACHE.clear()


# the fields a row or a check reads (of the 18), in this order: job, submit, wait, run, allocated, requested,
# requested time, status, user, group, queue, partition
_KEEP = [0, 1, 2, 3, 4, 7, 8, 10, 11, 12, 14, 15]
_COLUMN = np.full(FIELDS, -1, np.int64)  # field -> its column of ``_numbers``' values, or -1
_COLUMN[_KEEP] = np.arange(len(_KEEP))
_LINES = 1 << 14  # lines handed to np.loadtxt at a time


def _numbers(buf: np.ndarray, good: np.ndarray, line_start: np.ndarray, line_end: np.ndarray,
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``_KEEP`` fields of every good line (float64) and whether all 18 of its fields are finite;
    parsed ``_LINES`` lines at a time, so neither the good lines' text nor all 18 columns exist whole.
    None when numpy cannot read a line the way the classification said it could."""
    n, nlines = buf.shape[0], good.shape[0]
    ng = int(good.sum())
    V = np.empty((ng, len(_KEEP)))
    finite = np.empty(ng, bool)
    k = 0
    for a in range(0, nlines, _LINES):
        b = min(nlines, a + _LINES)
        g = good[a:b]
        m = int(g.sum())
        if not m:
            continue
        lo, hi = int(line_start[a]), min(int(line_end[b - 1]) + 1, n)
        body = buf[lo:hi][np.repeat(g, np.minimum(line_end[a:b] + 1, n) - line_start[a:b])].tobytes()
        try:
            B = np.loadtxt(io.BytesIO(body), dtype=np.float64, comments=None, ndmin=2, quotechar=None)
        except ValueError:
            return None
        if B.shape != (m, FIELDS):
            return None
        with np.errstate(invalid="ignore"):
            finite[k:k + m] = np.isfinite(B).all(axis=1)
        V[k:k + m] = B[:, _KEEP]
        k += m
    return V, finite


def _compiled_scan(buf: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """``swf_bytes.scan``'s arrays for ``buf`` (the per-line facts of ``_bytes_scan``, flags
    instead of masks, and the ``_KEEP`` fields of the lines it parsed), or None where its built
    module is not to be had (no numba, no compiler, ``MAKEWAY_AOT=0``): the numpy path then."""
    from makeway.sim.fast import aot

    here = Path(__file__).resolve().parent
    fn = aot.built("_makeway_swf_", (here / "swf_bytes.py",), _scan_function, _SCAN_SIGNATURE)
    if fn is None:
        return None
    out = _scan_arrays(buf)
    fn(buf, _COLUMN, *out)
    return out


_SCAN_SIGNATURE = "i8(u1[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u1[::1], f8[:,::1])"


def _line_ends(buf: np.ndarray) -> tuple[np.ndarray, int]:
    """Each newline's position, and the number of lines (a last one may lack its newline)."""
    ends = np.flatnonzero(buf == 10)
    return ends, ends.shape[0] + int(buf.shape[0] > 0 and buf[-1] != 10)


def _scan_arrays(buf: np.ndarray) -> tuple[np.ndarray, ...]:
    """``swf_bytes.scan``'s output arrays for ``buf``: (ends, ntok, first, tok11, len11, flags, V)."""
    ends, nlines = _line_ends(buf)
    return (ends, np.zeros(nlines, np.int64), np.full(nlines, -1, np.int64), np.full(nlines, -1, np.int64),
            np.zeros(nlines, np.int64), np.zeros(nlines, np.uint8), np.zeros((nlines, len(_KEEP))))


def _scan_function() -> Any:
    from makeway.sim.importers import swf_bytes

    return swf_bytes.scan


def _merged(buf: np.ndarray, good: np.ndarray, done: np.ndarray, V_all: np.ndarray, line_start: np.ndarray,
            line_end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``_numbers`` of the good lines, taking the compiled pass's values where it parsed a line and
    numpy's for the rest (tokens it does not read exactly)."""
    V = V_all[good]
    finite = np.ones(V.shape[0], bool)  # a simple token has at most 15 digits and no exponent
    slow = good & ~done
    if slow.any():
        got = _numbers(buf, slow, line_start, line_end)
        if got is None:
            return None
        at = slow[good]
        V[at], finite[at] = got
    return V, finite


def _scan(path: Path, processors: str) -> Tape | None:
    from makeway.sim.fast import heap
    from makeway.sim.importers import swf

    heap.hold()  # the log's arrays, freed, leave no holes a run's arrays cannot reuse
    data = _bytes(path)
    if data is None:
        return None
    if b"\r" in data:  # universal newlines, as the text reader splits: same line numbers
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    buf = np.frombuffer(data, np.uint8)
    n = buf.shape[0]
    if n == 0:
        return Tape(np.zeros((0, 12)), parsed=np.zeros((0, 4), np.int64))
    compiled = _compiled_scan(buf)
    if compiled is None:
        ends, ntok, first, tok11, len11, odd, foreign = _bytes_scan(buf)
        done = V_all = None
    else:
        ends, ntok, first, tok11, len11, flags, V_all = compiled
        odd, foreign, done = (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0
        del flags
    nlines = ntok.shape[0]
    has_tok = ntok > 0
    comment = np.zeros(nlines, bool)
    comment[has_tok] = buf[first[has_tok]] == ord(";")
    data_line = has_tok & ~comment
    good = data_line & ~odd & ~foreign & (ntok == FIELDS)
    # odd lines are classified by the reference too (str.strip differs from bytes on them)
    other = np.flatnonzero((data_line & ~good) | (odd & ~data_line))
    line_start = np.concatenate(([0], ends + 1))[:nlines]
    line_end = np.concatenate((ends, [n]))[:nlines]
    del ends, ntok, first, tok11, odd, foreign, has_tok, comment, data_line
    good_lines = np.flatnonzero(good)
    got = (_numbers(buf, good, line_start, line_end) if done is None
           else _merged(buf, good, done, V_all, line_start, line_end))
    del done, V_all
    if got is None:
        return None
    V, finite = got
    del good, got

    def text(i: int) -> str:
        return data[line_start[i]:line_end[i]].decode("utf-8", "replace")

    # values of the good lines: checks the reference makes, vectorized; a line failing any is re-read
    with np.errstate(invalid="ignore"):
        big = np.zeros(V.shape[0], bool)
        for c in (0, 4, 5, 7, 8, 9, 10, 11):  # fields 1, 5, 8, 11, 12, 13, 15, 16
            big |= np.abs(V[:, c]) >= 2.0**53
        submit, run, alloc, req, req_time = V[:, 1], V[:, 3], V[:, 4], V[:, 5], V[:, 6]
        if processors == "requested":
            procs = np.where(req > 0, np.trunc(req), np.trunc(alloc))
        else:
            procs = np.where(alloc > 0, np.trunc(alloc), np.trunc(req))
        ok = finite & ~big & (submit >= 0) & (procs > 0) & (procs <= MAX_TASKS) & \
            (np.maximum(np.maximum(submit, run), req_time) <= MAX_TIME)
    lines = np.concatenate((good_lines[~ok], other))
    lines.sort()
    differ = ok & (alloc > 0) & (req > 0) & (alloc != req)
    note_differ = ("jobs whose allocated processors (field 5) differ from requested (field 8): "
                   f"{processors} read (--swf-processors)")
    partial = bool((np.isin(V[:, 7], (2.0, 3.0, 4.0)) & (len11[good_lines] == 1)).any()) if V.shape[0] else False
    needs_sort = _needs_sort(submit, good_lines, partial, [text(i) for i in other.tolist()], other)
    bad_text = [(i, text(i)) for i in lines.tolist()]
    del data, buf, line_start, line_end, len11, text  # the log's bytes: not read again
    # a row of each ok line, in swf.Row order
    rows_ok = np.empty((int(ok.sum()), 12))
    rows_ok[:, LINE] = good_lines[ok] + 1
    rows_ok[:, PROCS] = procs[ok]
    for col, src in ((SUBMIT, 1), (WAIT, 2), (RUN, 3), (REQ, 6)):
        rows_ok[:, col] = V[ok, src]
    for col, src in ((JOB, 0), (STATUS, 7), (USER, 8), (GROUP, 9), (QUEUE, 10), (PART, 11)):
        rows_ok[:, col] = np.trunc(V[ok, src])
    del V, submit, run, alloc, req, req_time, procs
    # events of the parse stage, by line: counted notes of ok lines and what the reference says of the rest
    cap = _Capture()
    line_ev: list[tuple[int, int, tuple]] = [(int(ln) + 1, 0, ("count", note_differ))
                                             for ln in good_lines[differ].tolist()]
    extra: list[tuple] = []
    for i, t in bad_text:
        s = t.strip()
        if not s or s.startswith(";"):
            continue
        cap.events = []
        row = swf._parse(i + 1, s, cap, processors)  # type: ignore[arg-type]
        line_ev.extend((i + 1, k, ev) for k, ev in enumerate(cap.events))
        if row is not None:
            extra.append(row)
    if extra:
        if any(abs(v) >= 2**53 for r in extra for v in (r[1], r[2], *r[7:])):
            return None  # an id or code a float would round: the reference keeps it exact
        parsed = np.concatenate((rows_ok, np.array(extra, np.float64).reshape(-1, 12)))
        parsed = parsed[np.argsort(parsed[:, LINE], kind="stable")]
    else:
        parsed = rows_ok
    del rows_ok
    line_ev.sort(key=lambda e: (e[0], e[1]))
    return _finish(parsed, line_ev, needs_sort)


def _bytes_scan(buf: np.ndarray, chunk: int = 1 << 20) -> tuple[np.ndarray, ...]:
    """Per line: newline positions, token count, first token's position, the 11th token's position
    and length (``_partial_token``), odd bytes and non-numeric characters seen; a chunk of the buffer
    at a time (chunks end at a newline) so no per-byte or per-token array outlives its chunk."""
    n = buf.shape[0]
    ends_all, nlines = _line_ends(buf)
    ntok = np.zeros(nlines, np.int64)
    first = np.full(nlines, -1, np.int64)
    tok11 = np.full(nlines, -1, np.int64)
    len11 = np.zeros(nlines, np.int64)
    odd = np.zeros(nlines, bool)
    foreign = np.zeros(nlines, bool)
    lo = 0
    while lo < n:
        hi = min(n, lo + chunk)
        if hi < n:
            cut = np.flatnonzero(buf[hi:min(n, hi + 65536)] == 10)
            hi = hi + int(cut[0]) + 1 if cut.shape[0] else min(n, hi + 65536)
        b = buf[lo:hi]
        ws = _WS[b]
        tok = ~ws
        tok[1:] &= ws[:-1]
        if lo and not _WS[buf[lo - 1]]:
            tok[0] = False
        end = ~ws
        end[:-1] &= ws[1:]
        st = np.flatnonzero(tok) + lo
        en = np.flatnonzero(end) + lo + 1
        line = np.searchsorted(ends_all, st)
        if line.shape[0]:
            ntok += np.bincount(line, minlength=nlines)
            new = np.ones(line.shape[0], bool)
            new[1:] = line[1:] != line[:-1]
            head = np.flatnonzero(new)
            first[line[head]] = st[head]
            rank = np.arange(line.shape[0]) - np.repeat(head, np.diff(np.append(head, line.shape[0])))
            k = rank == 10
            tok11[line[k]] = st[k]
            len11[line[k]] = en[k] - st[k]
        for mask, flag in ((_ODD[b], odd), (~ws & ~_NUMERIC[b], foreign)):
            at = np.flatnonzero(mask)
            if at.shape[0]:
                flag[np.searchsorted(ends_all, at + lo)] = True
        lo = hi
    return ends_all, ntok, first, tok11, len11, odd, foreign


def _needs_sort(submit: np.ndarray, good_lines: np.ndarray, partial: bool, other_text: list[str],
                other: np.ndarray) -> bool:
    """``swf._needs_sort`` on the same lines: submit going backwards, or field 11 written ``2``/``3``/``4``."""
    from makeway.sim.importers import swf

    if other.shape[0]:  # a few odd lines: the reference's own loop over every line's submit
        subs: list[tuple[int, float, bool]] = []
        for i, t in zip(other.tolist(), other_text):
            parts = t.split()
            if not t or t.lstrip().startswith(";") or len(parts) < FIELDS:
                continue
            try:
                subs.append((i, float(parts[1]), parts[10] in ("2", "3", "4")))
            except ValueError:
                continue
        merged = sorted([(int(i), float(s), False) for i, s in zip(good_lines.tolist(), submit.tolist())] + subs)
        if partial:
            return True
        last = float("-inf")
        for _, s, partial in merged:
            if s < last or partial:
                return True
            last = s
        return False
    if submit.shape[0] > 1 and bool((np.diff(submit) < 0).any()):
        return True
    return partial


def _finish(parsed: np.ndarray, line_ev: list[tuple[int, int, tuple]], needs_sort: bool) -> Tape:
    """Merge partial executions and sort (when the reference would), then the record stage (cancelled
    jobs dropped, unknown run times refused), with every event at its place among the yields."""
    from makeway.sim.importers import swf

    if not needs_sort:
        rows = parsed
        stage1: list[tuple] = []
    else:
        stage1 = [(0, 0, k, e[2]) for k, e in enumerate(line_ev)]
        status = parsed[:, STATUS]
        if np.isin(status, (2, 3, 4)).any():
            merged_ev: list[tuple] = []

            class _Rep:
                stats = _MergeStats(merged_ev)

                @staticmethod
                def note(line: int, problem: str) -> None:
                    merged_ev.append(("note", line, problem))

            as_rows = [_row(r) for r in parsed.tolist()]
            folded = swf._merge_partials(as_rows, _Rep)  # type: ignore[arg-type]
            stage1 += [(0, 1, k, e) for k, e in enumerate(merged_ev)]
            rows = np.array(folded, np.float64).reshape(-1, 12)
        else:
            rows = parsed
        rows = rows[np.lexsort((rows[:, LINE], rows[:, SUBMIT]))]
    # record stage, in yield order: cancelled before start dropped, run time -1 refused
    status, run = rows[:, STATUS], rows[:, RUN]
    cancelled = (status == 5) & (run <= 0)
    refused = ~cancelled & (run < 0)
    out = ~(cancelled | refused)
    kept_before = np.cumsum(out) - out
    stage2 = []
    for i in np.flatnonzero(~out).tolist():
        if cancelled[i]:
            ev: tuple = ("drop", "cancelled before start")
        else:
            ev = ("bad", int(rows[i, LINE]), f"job {int(rows[i, JOB])}: run time unknown (-1)")
        stage2.append((int(kept_before[i]), 2, i, ev))
    if needs_sort:
        events = stage1 + stage2
    else:  # by line: a line's parse events, then the record stage of its row, then later lines
        keyed = [(e[0], 0, k, e[2]) for k, e in enumerate(line_ev)]
        keyed += [(int(rows[i, LINE]), 1, i, ev) for _, _, i, ev in stage2]
        keyed.sort(key=lambda e: e[:3])
        kept_lines = rows[out, LINE]
        at = np.searchsorted(kept_lines, np.array([e[0] for e in keyed], np.float64), side="left").tolist()
        events = [(p, 0, 0, e[3]) for p, e in zip(at, keyed)]
    kept = rows[out]
    pos = np.array([e[0] for e in events], np.int64)
    return Tape(kept, [e[3] for e in events], pos, parsed[:, USER:PART + 1].astype(np.int64))


class _MergeStats:
    def __init__(self, sink: list[tuple]):
        self.sink = sink

    @property
    def merged(self) -> int:
        return 0

    @merged.setter
    def merged(self, value: int) -> None:
        self.sink.append(("merged",))


def _row(r: list[float]) -> tuple:
    """A float row back as ``swf.Row`` (ints where the reference has ints)."""
    return (r[0], int(r[1]), int(r[2]), r[3], r[4], int(r[5]), r[6], int(r[7]), int(r[8]), int(r[9]),
            int(r[10]), int(r[11]))


def records(tp: Tape, block: int = 4096) -> Iterator[tuple]:
    """The tape's rows as ``swf.Row`` tuples, made a block at a time (a list of every row's tuple
    would be the largest thing a run holds)."""
    cols = tp.cols
    for lo in range(0, cols.shape[0], block):
        yield from map(_row, cols[lo:lo + block].tolist())


__all__ = ["Tape", "forget", "records", "replay", "tape"]
