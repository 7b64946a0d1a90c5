"""The one-pass SWF reader (``swf_scan``) against the line-by-line reference reader (``swf._rows``):
the same records, and every warning, count and drop reported at the same point of the stream, in
strict mode the same error after the same records; the cluster built from the log the same."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.errors import TraceError
from makeway.sim.importers import swf, swf_scan
from makeway.sim.importers._common import ImportStats

TOKENS = ["-1", "0", "1", "2", "3", "4", "5", "7", "32", "64", "2.5", "1e3", "1e400", "nan", "x", "+4", "-3",
          "1.2.3", "2.0", "0x1", "1_0", "9" * 17, "20000000000"]


def _line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["ok"] * 8 + ["comment", "blank", "short", "long", "token", "odd"]))
    job = draw(st.integers(1, 30))
    submit = draw(st.integers(-2, 50))
    vals = [str(job), str(submit), str(draw(st.integers(-1, 9))), str(draw(st.integers(-1, 40))),
            str(draw(st.sampled_from([-1, 1, 2, 4, 8]))), "-1", "-1",
            str(draw(st.sampled_from([-1, 0, 1, 2, 3, 8]))), str(draw(st.sampled_from([-1, 10, 60]))), "-1",
            draw(st.sampled_from(["1", "0", "5", "2", "3", "4", "1", "1"])), str(draw(st.integers(-1, 3))),
            str(draw(st.integers(-1, 2))), "-1", str(draw(st.integers(-1, 2))), str(draw(st.integers(-1, 2))),
            "-1", "-1"]
    if kind == "comment":
        return "; Note: " + draw(st.sampled_from(["x", "MaxProcs: 8", ""]))
    if kind == "blank":
        return draw(st.sampled_from(["", "   ", "\t"]))
    if kind == "short":
        return " ".join(vals[: draw(st.integers(1, 17))])
    if kind == "long":
        return " ".join(vals + ["7"] * draw(st.integers(1, 2)))
    if kind == "token":
        vals[draw(st.integers(0, 17))] = draw(st.sampled_from(TOKENS))
    if kind == "odd":
        return "\u00a0" + " ".join(vals) + draw(st.sampled_from(["\x1c", "\xe9", ""]))
    return draw(st.sampled_from([" ", "  ", "\t"])).join(vals)


@st.composite
def _logs(draw: st.DrawFn) -> str:
    lines = ["; MaxProcs: 8", "; MaxNodes: 8", "; Queue: 1 batch"]
    lines += [_line(draw) for _ in range(draw(st.integers(0, 14)))]
    end = draw(st.sampled_from(["\n", "\r\n", ""]))
    return end.join(lines) if end else "\n".join(lines)


def _stream(path: Path, use_scan: bool, strict: bool, **kw):
    """(records, stats snapshot at each record, error or None, final stats)."""
    stats = ImportStats()
    orig = swf_scan.tape
    if not use_scan:
        swf_scan.tape = lambda *a, **k: None  # type: ignore[assignment]
    out, snaps, err = [], [], None
    try:
        swf_scan.forget()
        for rec in swf.read(path, strict=strict, stats=stats, **kw):
            out.append(rec)
            snaps.append((stats.skipped, list(stats.warnings), dict(stats.dropped), stats.merged, dict(stats.notes)))
        cfg = swf.cluster(path, layout=kw.get("layout", "pool"), queue_by=kw.get("queue_by", "auto"))
    except TraceError as exc:
        err, cfg = str(exc), None
    finally:
        swf_scan.tape = orig  # type: ignore[assignment]
    return out, snaps, err, stats, cfg


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_logs(), strict=st.booleans(), processors=st.sampled_from(swf.PROCESSORS),
       queue_by=st.sampled_from(swf.QUEUE_BY), gz=st.booleans(), block=st.sampled_from([2, 5, swf_scan._LINES]),
       compiled=st.booleans())
def test_scan_equals_the_line_reader(tmp_path_factory, text, strict, processors, queue_by, gz, block, compiled):
    """... also when numpy reads the lines a few at a time (``block``), and with the compiled pass
    (``swf_bytes``) or without it."""
    path = tmp_path_factory.mktemp("swf") / ("log.swf.gz" if gz else "log.swf")
    raw = text.encode("utf-8")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    kw = {"processors": processors, "queue_by": queue_by, "layout": "nodes"}
    ref = _stream(path, False, strict, **kw)
    orig, swf_scan._LINES = swf_scan._LINES, block
    real = swf_scan._compiled_scan
    if not compiled:
        swf_scan._compiled_scan = lambda buf: None  # type: ignore[assignment]
    try:
        got = _stream(path, True, strict, **kw)
    finally:
        swf_scan._LINES = orig
        swf_scan._compiled_scan = real  # type: ignore[assignment]
    assert got[0] == ref[0]
    assert got[1] == ref[1]
    assert got[2] == ref[2]
    assert got[3] == ref[3]
    assert got[4] == ref[4]


_DIGITS = st.text("0123456789", min_size=1, max_size=17)


@st.composite
def _number(draw: st.DrawFn) -> str:
    """A token from the grammar the compiled pass reads itself and from just outside it: signs,
    points at either end, leading zeros, 15 digits and more, exponents, stray signs and points."""
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    kind = draw(st.sampled_from(["int", "int", "dec", "dec", "lead", "trail", "exp", "bad"]))
    a, b = draw(_DIGITS), draw(_DIGITS)
    if kind == "int":
        return sign + a
    if kind == "dec":
        return f"{sign}{a}.{b}"
    if kind == "lead":
        return f"{sign}.{b}"
    if kind == "trail":
        return f"{sign}{a}."
    if kind == "exp":
        return f"{sign}{a}.{b}{draw(st.sampled_from(['e', 'E']))}{draw(st.sampled_from(['', '-', '+']))}{b[:3]}"
    return draw(st.sampled_from(["-", "+", ".", "-.", "1-", "1.2.3", "--1", "+-1", "1e", "00", "-0", "-0.0", "0.",
                                 "43591.010316006538", "74187060.866652760"]))  # 17 digits: int/10**k misrounds


@st.composite
def _number_log(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        toks = [draw(_number()) if draw(st.integers(0, 3)) == 0 else str(draw(st.integers(-1, 99)))
                for _ in range(draw(st.sampled_from([18] * 6 + [17, 19])))]
        seps = [draw(st.sampled_from([" ", "  ", "\t", "\x0b", "\x0c"])) if draw(st.integers(0, 5)) == 0 else " "
                for _ in range(len(toks) - 1)]
        lines.append(draw(st.sampled_from(["", " ", "\t"])) + "".join(t + s for t, s in zip(toks, seps + [""])))
    return "\n".join(lines).encode()


def _tape(path: Path, processors: str, compiled: bool):
    real = swf_scan._compiled_scan
    if not compiled:
        swf_scan._compiled_scan = lambda buf: None  # type: ignore[assignment]
    try:
        got = swf_scan._scan(path, processors)
    finally:
        swf_scan._compiled_scan = real  # type: ignore[assignment]
    if got is None:
        return None
    return got.cols.tobytes(), got.events, got.pos.tolist(), None if got.parsed is None else got.parsed.tobytes()


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=_number_log(), processors=st.sampled_from(swf.PROCESSORS))
def test_compiled_pass_reads_numbers_as_numpy_does(tmp_path_factory, raw, processors):
    """The tape with the compiled pass is the numpy path's bit for bit (signed zeros and the last
    bit of every decimal included), and None where that is None; tokens it does not read exactly
    (exponents, 16 digits and more, malformed) go to numpy."""
    pytest.importorskip("numba")
    path = tmp_path_factory.mktemp("swf") / "n.swf"
    path.write_bytes(raw)
    assert _tape(path, processors, True) == _tape(path, processors, False)


def test_compiled_pass_parses_simple_lines_itself():
    """What the pass marks parsed, and with which values: simple lines only, exactly."""
    pytest.importorskip("numba")
    lines = [" ".join(["-0", "1.5", ".25", "7.", "+3"] + ["0.1"] * 13),  # simple: parsed
             " ".join(["1e3"] + ["1"] * 17),  # an exponent: numpy's
             " ".join(["1" * 16] + ["1"] * 17),  # 16 digits: numpy's
             " ".join(["1", "43591.010316006538"] + ["1"] * 16),  # 17 digits (1 bit off as int / 10**12)
             "\x0b".join(["1"] * 18),  # a vertical tab between tokens: numpy's
             " ".join(["1"] * 17),  # 17 tokens: not a row
             "; a comment"]
    buf = np.frombuffer("\n".join(lines).encode(), np.uint8)
    got = swf_scan._compiled_scan(buf)
    if got is None:
        pytest.skip("no built module here (no compiler or MAKEWAY_AOT=0)")
    ends, ntok, first, tok11, len11, flags, V = got
    assert ((flags & 4) != 0).tolist() == [True, False, False, False, False, False, False]
    assert ((flags & 2) != 0).tolist() == [False] * 6 + [True]
    assert ntok.tolist() == [18, 18, 18, 18, 18, 17, 3]
    row = V[0].tolist()
    assert str(row[0]) == "-0.0" and row[1:5] == [1.5, 0.25, 7.0, 3.0]  # fields 0 to 4
    assert row == [float(lines[0].split()[f]) for f in swf_scan._KEEP]


def test_gzip_read_whole_whatever_its_trailer_says(tmp_path):
    """Two members (the trailer names the last one's length only) and a trailer that lies: all bytes read."""
    one, two = b"; MaxProcs: 8\n" + b"1 0 0 10 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n" * 50, b"2 5 0 10 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    path = tmp_path / "two.swf.gz"
    path.write_bytes(gzip.compress(one) + gzip.compress(two))
    assert bytes(swf_scan._bytes(path)) == one + two
    packed = bytearray(gzip.compress(one))
    packed[-4:] = (10**6).to_bytes(4, "little")
    path.write_bytes(bytes(packed))
    assert swf_scan._bytes(path) is None  # gzip checks the length: the line reader says where it stopped


def test_malformed_line_named_by_line_and_field(tmp_path):
    path = tmp_path / "bad.swf"
    ok = "1 0 0 10 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1"
    path.write_text("; MaxProcs: 8\n" + ok + "\n2 5 0 10 4 -1 -1 4 sixty -1 1 1 1 -1 1 -1 -1 -1\n")
    swf_scan.forget()
    assert swf_scan.tape(path) is not None  # the one-pass reader takes the file; the bad line is its own
    with pytest.raises(TraceError, match=r"bad\.swf:3: field 9 is not a number: 'sixty'"):
        list(swf.read(path, strict=True))


def _renumbered(text: str) -> str:
    """The log with every line's first token made unique (job numbers repeat in generated logs)."""
    import re

    return "\n".join(re.sub(r"^(\s*)-?\d+", lambda m: f"{m.group(1)}{1000 + k}", line)
                     for k, line in enumerate(text.split("\n")))


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_logs(), strict=st.booleans(), model=st.sampled_from(["fifo-strict", "none"]),
       unique=st.booleans(), layout=st.sampled_from(swf.LAYOUTS), kill=st.booleans(), batch=st.sampled_from([1, 3]))
def test_run_on_columns_or_made_workloads_equals_run_on_records(tmp_path_factory, text, strict, model, unique,
                                                                 layout, kill, batch):
    """``run`` on the log's columns (``swf_columns``, packed by the compiled core a few rows at a time,
    or iterated by the pure-Python core) and on the workloads the SWF reader makes itself: the results,
    the import statistics and the errors of ``run`` on its records (duplicate ids included)."""
    import json

    from makeway.config import parse_config
    from makeway.errors import MakewayError
    from makeway.sim import run as runmod
    from makeway.sim.fast.compiled import CompiledSimulation

    path = tmp_path_factory.mktemp("swf") / "log.swf"
    path.write_text(_renumbered(text) if unique else text)
    data = swf.cluster(path, layout=layout) or {}
    if not data:
        return
    data["preemption"] = {"model": model, "settings": {}}
    data.setdefault("simulation", {})["kill_at_requested_time"] = kill
    cfg = parse_config(data, "test")

    def go(mode: str, jobs: int = 0):
        orig = runmod._made_workloads, runmod._columns, CompiledSimulation.MIN_JOBS, CompiledSimulation.BATCH
        if mode != "columns":
            runmod._columns = lambda *a: None
        if mode == "records":
            runmod._made_workloads = lambda *a: None
        CompiledSimulation.MIN_JOBS, CompiledSimulation.BATCH = jobs, batch
        stats = ImportStats()
        try:
            swf_scan.forget()
            rec = runmod.run(cfg, path, None, strict=strict, stats=stats, allow_empty=True,
                             trace_options={"layout": layout})
            return json.dumps(rec.results({}), sort_keys=True, default=str), stats
        except MakewayError as exc:
            return str(exc), stats
        finally:
            runmod._made_workloads, runmod._columns, CompiledSimulation.MIN_JOBS, CompiledSimulation.BATCH = orig

    ref = go("records")
    assert go("made") == ref
    assert go("columns") == ref
    assert go("columns", jobs=10**6) == ref  # too few for the compiled core: the columns iterated
