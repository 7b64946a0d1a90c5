"""Trace importers on committed excerpts of the real traces (see tests/data/PROVENANCE.md).

Malformed input is built in a temporary directory from the excerpts, so every warning test names
the exact line it broke.
"""

from __future__ import annotations

import ast
import gzip
import json
import shutil
from pathlib import Path

import pytest

import makeway.sim.importers as importers_package
from makeway.config import parse_config
from makeway.errors import TraceError
from makeway.sim.importers import ImportStats, cluster_from_trace, detect_format, read_trace
from makeway.sim.importers._common import wrong_width
from makeway.sim.importers.philly import gang
from makeway.sim.trace import parse_record

DATA = Path(__file__).resolve().parents[1] / "data"
KTH = DATA / "swf" / "KTH-SP2-excerpt.swf"
LANL = DATA / "swf" / "LANL-CM5-excerpt.swf"
LCG = DATA / "swf" / "LCG-excerpt.swf"
GOOGLE = DATA / "google2011"
PHILLY = DATA / "philly" / "philly.csv"
ALIBABA = DATA / "alibaba" / "openb_pod_list_default.csv"
IMPORTERS = Path(importers_package.__file__).parent


def records(path, fmt=None, **kw):
    stats = ImportStats()
    return list(read_trace(path, fmt, stats=stats, **kw)), stats


def assert_valid_and_sorted(recs):
    times = [r["time"] if r.get("event") == "config" else r["submit"] for r in recs]
    assert times == sorted(times)
    for r in recs:
        parse_record(r)  # the simulator's own schema accepts every record


# -- detection ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path,fmt", [(KTH, "swf"), (LCG, "swf"), (GOOGLE, "google2011"),
                                      (GOOGLE / "task_events" / "part-00000-of-00500.csv", "google2011"),
                                      (PHILLY, "philly"), (ALIBABA, "alibaba")])
def test_detect_format(path, fmt):
    assert detect_format(path) == fmt


def test_detect_by_content_and_unknown(tmp_path):
    swf = tmp_path / "log.txt"
    swf.write_text("\n".join(KTH.read_text().splitlines()[30:33]) + "\n")
    assert detect_format(swf) == "swf"
    js = tmp_path / "t.data"
    js.write_text('{"id": "a"}\n')
    assert detect_format(js) == "jsonl"
    other = tmp_path / "x.csv"
    other.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceError, match="unknown trace format"):
        detect_format(other)
    with pytest.raises(TraceError, match="node list"):
        detect_format(DATA / "alibaba" / "openb_node_list_all_node.csv")
    with pytest.raises(TraceError, match="no such file"):
        detect_format(tmp_path / "missing.swf")
    with pytest.raises(TraceError, match="unknown trace format 'nope'"):
        read_trace(KTH, "nope")


# -- SWF ---------------------------------------------------------------------------------------

def test_swf_kth_fields():
    recs, stats = records(KTH)
    assert stats.records == len(recs) == 40 and stats.skipped == 0
    assert recs[0] == {"id": "15", "queue": "default", "submit": 599850, "duration": 3477, "priority": 0,
                       "tasks": [{"count": 1, "resources": {"cpu": 4}}], "requested_duration": 53940,
                       "user": "u12", "settings": {"status": 1, "wait": 192180}}
    assert_valid_and_sorted(recs)


def test_swf_queues_and_partitions_from_header():
    lanl, _ = records(LANL)
    by_id = {r["id"]: r for r in lanl}
    assert by_id["1"]["queue"] == "default"            # queue field -1
    assert by_id["2"]["queue"] == "development"        # queue 1 named in the header
    assert by_id["3"]["queue"] == "scavenge_benchmark"  # queue 4
    assert by_id["6"]["settings"]["status"] == 0
    lcg, _ = records(LCG)
    assert lcg[0]["queue"] == "grid.ici.ro" and lcg[1]["queue"] == "lancs.ac.uk"
    assert "settings" not in lcg[0] or "wait" not in lcg[0]["settings"]
    users, _ = records(LANL, queue_by="user")
    assert users[0]["queue"] == "user-2"


def test_swf_gzip_equals_plain(tmp_path):
    gz = tmp_path / "kth.swf.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(KTH.read_bytes())
    assert records(gz)[0] == records(KTH)[0]


def _with_jobs(tmp_path, src, transform, name="t.swf"):
    lines = src.read_text().splitlines()
    header = [line for line in lines if line.startswith(";")]
    jobs = [line for line in lines if line and not line.startswith(";")]
    out = tmp_path / name
    out.write_text("\n".join(header + transform(jobs)) + "\n")
    return out, len(header)


def test_swf_unsorted_lines_come_out_sorted(tmp_path):
    path, _ = _with_jobs(tmp_path, KTH, lambda jobs: list(reversed(jobs)))
    recs, _ = records(path)
    assert [r["id"] for r in recs] == [r["id"] for r in records(KTH)[0]]


def test_swf_partial_executions_are_merged_and_cancelled_dropped(tmp_path):
    def tweak(jobs):
        return [
            "  100  10  0  50  4  -1 -1  4  500 -1  2  7 7 -1 -1 -1 -1 -1",
            "  101  20  0  30  1  -1 -1  1   60 -1  5  7 7 -1 -1 -1 -1 -1",   # cancelled after running
            "  102  25  0   0  1  -1 -1  1   60 -1  5  7 7 -1 -1 -1 -1 -1",   # cancelled before start
            "  100  90  0  70  4  -1 -1  4  500 -1  2  7 7 -1 -1 -1 -1 -1",
            "  100 200  0  20  4  -1 -1  4  500 -1  3  7 7 -1 -1 -1 -1 -1",
        ]
    path, _ = _with_jobs(tmp_path, KTH, tweak)
    recs, stats = records(path)
    by_id = {r["id"]: r for r in recs}
    assert set(by_id) == {"100", "101"}
    assert by_id["100"]["submit"] == 10 and by_id["100"]["duration"] == 140
    assert by_id["100"]["settings"]["status"] == 1
    assert by_id["101"]["duration"] == 30 and by_id["101"]["settings"]["status"] == 5
    assert stats.merged == 2 and stats.dropped == {"cancelled before start": 1}


def test_swf_malformed_lines_warn_with_line_numbers(tmp_path):
    def tweak(jobs):
        jobs = list(jobs)
        jobs[2] = " ".join(jobs[2].split()[:9])            # truncated
        jobs[5] = jobs[5].replace(jobs[5].split()[3], "x1", 1)  # run time not a number
        jobs[7] = "   99 610000 0 10 -1 -1 -1 -1 60 -1 1 3 3 -1 -1 -1 -1 -1"  # no processors
        return jobs
    path, nh = _with_jobs(tmp_path, KTH, tweak)
    recs, stats = records(path)
    assert len(recs) == 37 and stats.skipped == 3 and stats.records == 37
    assert stats.warnings[0] == f"{path}:{nh + 3}: expected 18 fields, got 9 (truncated line?)"
    assert stats.warnings[1].startswith(f"{path}:{nh + 6}: field 4 is not a number")
    assert stats.warnings[2].startswith(f"{path}:{nh + 8}: job 99: no processor count")
    with pytest.raises(TraceError, match=rf":{nh + 3}: expected 18 fields"):
        list(read_trace(path, strict=True))


def test_warning_list_is_capped_but_counted(tmp_path):
    path, _ = _with_jobs(tmp_path, KTH, lambda jobs: jobs + ["1 2 3"] * 150)
    recs, stats = records(path)
    assert len(recs) == 40 and stats.skipped == 150 and stats.warning_count == 150 and len(stats.warnings) == 100


def test_swf_node_layout_is_a_gang_of_one_cpu_tasks():
    recs = list(read_trace(KTH, layout="nodes"))
    assert recs[0]["tasks"] == [{"count": 4, "resources": {"cpu": 1}}]
    assert cluster_from_trace(KTH, layout="nodes")["nodes"] == [{"name": "node", "count": 100, "capacity": {"cpu": 1}}]


def test_swf_cluster_from_header():
    kth = cluster_from_trace(KTH)
    assert kth["nodes"] == [{"name": "pool", "capacity": {"cpu": 100}}]
    assert kth["preemption"]["model"] == "none"
    lcg = cluster_from_trace(LCG)
    assert lcg["nodes"] == [{"name": "pool", "capacity": {"cpu": 24515}}]
    assert len(lcg["queues"]) == 170 + 2 and lcg["queues"]["grid.ici.ro"] == {"parent": "root"}
    lanl = cluster_from_trace(LANL)
    assert {"interactive", "production", "queue-0", "iway", "default"} <= set(lanl["queues"])
    for cfg in (kth, lcg, lanl):
        parse_config(cfg, "test")
    queues = set(lanl["queues"])
    assert all(r["queue"] in queues for r in records(LANL)[0])


# -- Google 2011 -------------------------------------------------------------------------------

def test_google_excerpt_submissions():
    recs, stats = records(GOOGLE)
    assert [r["id"] for r in recs] == ["3730198063.0", "4872450645.0", "6251620716.0", "4872450645.0.1",
                                       "6252014407.0"]
    by_id = {r["id"]: r for r in recs}
    evicted = by_id["3730198063.0"]
    assert evicted["settings"] == {"scheduling_class": 0, "observed_evictions": 1, "censored": True}
    assert evicted["duration"] == pytest.approx(5434.454708 - 2462.756587)
    assert evicted["queue"] == "free" and evicted["priority"] == 0
    assert evicted["tasks"] == [{"count": 1, "resources": {"cpu": 0.4, "memory": 713 * 2**20}}]
    assert by_id["6251620716.0"]["settings"]["end"] == "FAIL"
    assert by_id["6251620716.0"]["duration"] == pytest.approx(699.280105)
    assert by_id["4872450645.0.1"]["submit"] == pytest.approx(720.670381)
    assert by_id["6252014407.0"]["queue"] == "batch" and by_id["6252014407.0"]["settings"]["end"] == "FINISH"
    assert stats.dropped == {"pending at trace end": 2} and stats.events == 18
    assert_valid_and_sorted(recs)


def test_google_scale_options_and_truncated_line(tmp_path):
    recs, _ = records(GOOGLE, cpu_scale=1000, memory_scale=2**30)
    assert recs[0]["tasks"][0]["resources"] == {"cpu": 12.5, "memory": 6 * 2**20}
    part = tmp_path / "part-00000-of-00500.csv.gz"
    lines = (GOOGLE / "task_events" / "part-00000-of-00500.csv").read_text().splitlines()
    lines[4] = lines[4][:30]
    with gzip.open(part, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    got, stats = records(part, "google2011")
    assert stats.skipped == 1 and stats.warnings[0].startswith(f"{part}:5: expected 13 columns")
    with pytest.raises(TraceError, match=":5: expected 13 columns"):
        list(read_trace(part, "google2011", strict=True))
    assert cluster_from_trace(GOOGLE) is None


# -- Philly ------------------------------------------------------------------------------------

def test_philly_excerpt():
    recs, stats = records(PHILLY)
    assert len(recs) == 40 == stats.records
    assert recs[0]["submit"] == 0
    assert_valid_and_sorted(recs)
    first_line = PHILLY.read_text().splitlines()[1].split(",")
    r2 = next(r for r in recs if r["id"] == "philly-2")
    assert r2["queue"] == first_line[4] and r2["duration"] == float(first_line[1])
    assert gang(1) == [{"count": 1, "resources": {"gpu": 1}}]
    assert gang(16) == [{"count": 2, "resources": {"gpu": 8}}]
    assert gang(12) == [{"count": 12, "resources": {"gpu": 1}}]


def test_philly_cluster_and_bad_rows(tmp_path):
    cfg = cluster_from_trace(PHILLY)
    assert cfg["nodes"] == [{"name": "philly", "count": 352, "capacity": {"gpu": 8}}]
    assert cfg["queues"]["6214e9"] == {"parent": "root", "guaranteed": {"gpu": 512}}
    parse_config(cfg, "test")
    bad = tmp_path / "philly.csv"
    lines = PHILLY.read_text().splitlines()
    lines[3] = "2017-13-40 99:00:00,1.0,1,1.0,11cb48"
    lines[6] = lines[6].rsplit(",", 2)[0]
    bad.write_text("\n".join(lines) + "\n")
    recs, stats = records(bad)
    assert len(recs) == 38
    assert stats.warnings == [f"{bad}:4: timestamp '2017-13-40 99:00:00' is not YYYY-MM-DD HH:MM:SS",
                              f"{bad}:7: expected 5 columns, got 3 (truncated line?)"]
    assert cluster_from_trace(bad) is None  # no philly_vc.csv beside it


# -- Alibaba -----------------------------------------------------------------------------------

def test_alibaba_pods():
    recs, stats = records(ALIBABA)
    assert len(recs) == 120 == stats.records
    assert_valid_and_sorted(recs)
    by_id = {r["id"]: r for r in recs}
    shared = by_id["openb-pod-0001"]
    assert shared["tasks"] == [{"count": 1, "resources": {"cpu": 6, "memory": 12288 * 2**20, "gpu": 0.46}}]
    assert shared["priority"] == 2 and shared["queue"] == "ls"
    assert shared["settings"] == {"phase": "Running", "num_gpu": 1, "gpu_milli": 460}
    assert shared["duration"] == 12902960 - 427061
    pending = [r for r in recs if r["settings"]["phase"] == "Pending"]
    assert len(pending) == 11 and all(r["settings"]["never_scheduled"] for r in pending)
    p61 = by_id["openb-pod-0061"]
    assert p61["duration"] == 10001403 - 10001278 and p61["priority"] == 0 and p61["queue"] == "be"


def test_alibaba_cluster():
    cfg = cluster_from_trace(ALIBABA)
    assert len(cfg["nodes"]) == 30
    t4 = next(n for n in cfg["nodes"] if n["labels"]["model"] == "T4")
    assert t4["capacity"]["gpu"] >= 1
    assert cfg["nodes"][0] == {"name": "openb-node-0000", "capacity": {"cpu": 32, "memory": 262144 * 2**20, "gpu": 0},
                               "labels": {"model": "CPU"}}
    assert cfg["queues"]["ls"]["priority"] == 2
    parse_config(cfg, "test")


def test_alibaba_bad_qos_strict(tmp_path):
    bad = tmp_path / "pods.csv"
    lines = ALIBABA.read_text().splitlines()
    lines[2] = lines[2].replace(",LS,", ",VIP,")
    bad.write_text("\n".join(lines) + "\n")
    recs, stats = records(bad)
    assert len(recs) == 119 and "unknown qos 'VIP'" in stats.warnings[0] and stats.warnings[0].startswith(f"{bad}:3:")
    with pytest.raises(TraceError, match=":3: pod openb-pod-0001: unknown qos"):
        list(read_trace(bad, strict=True))


@pytest.mark.parametrize("column, value, message", [
    (1, "x12", "column cpu_milli: 'x12' is not a number"),
    (2, "1.5", "column memory_mib: '1.5' is not a whole number"),
    (4, "", "column gpu_milli: '' is not a number"),
    (9, "soon", "column deletion_time: 'soon' is not a number"),
    (10, "n/a", "column scheduled_time: 'n/a' is not a number"),
])
def test_alibaba_bad_number_names_column_and_value(tmp_path, column, value, message):
    bad = tmp_path / "pods.csv"
    lines = ALIBABA.read_text().splitlines()
    cols = lines[4].split(",")
    cols[column] = value
    lines[4] = ",".join(cols)
    bad.write_text("\n".join(lines) + "\n")
    recs, stats = records(bad)
    assert len(recs) == 119 and stats.warnings == [f"{bad}:5: {message}"]
    with pytest.raises(TraceError, match=f":5: {message}"):
        list(read_trace(bad, strict=True))


# -- row width, shared by the CSV importers ------------------------------------------------------

@pytest.mark.parametrize("source, fmt, line, change, message", [
    (PHILLY, "philly", 3, lambda s: s + ",extra", "expected 5 columns, got 6 (extra columns?)"),
    (PHILLY, "philly", 3, lambda s: s.rsplit(",", 1)[0], "expected 5 columns, got 4 (truncated line?)"),
    (ALIBABA, "alibaba", 3, lambda s: s + ",x,y", "expected 11 columns, got 13 (extra columns?)"),
    (ALIBABA, "alibaba", 3, lambda s: s.rsplit(",", 1)[0], "expected 11 columns, got 10 (truncated line?)"),
])
def test_row_width_hint_matches_direction(tmp_path, source, fmt, line, change, message):
    bad = tmp_path / source.name
    lines = source.read_text().splitlines()
    lines[line - 1] = change(lines[line - 1])
    bad.write_text("\n".join(lines) + "\n")
    _, stats = records(bad, fmt)
    assert stats.warnings == [f"{bad}:{line}: {message}"]


@pytest.mark.parametrize("expected, got, unit, message", [
    (18, 9, "fields", "expected 18 fields, got 9 (truncated line?)"),
    (18, 20, "fields", "expected 18 fields, got 20 (extra fields?)"),
    (13, 1, "columns", "expected 13 columns, got 1 (truncated line?)"),
    (5, 6, "columns", "expected 5 columns, got 6 (extra columns?)"),
])
def test_wrong_width_message(expected, got, unit, message):
    assert wrong_width(expected, got, unit) == message


def _unreachable(path):
    """Statements after a return/raise/continue/break in the same block."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for stmt, after in zip(block, block[1:]):
                if isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                    found.append(after.lineno)
    return found


@pytest.mark.parametrize("path", sorted(IMPORTERS.glob("*.py")), ids=lambda p: p.name)
def test_importers_have_no_unreachable_code(path):
    assert _unreachable(path) == []


def test_unreachable_check_sees_dead_code(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("def f():\n    return 1\n    x = 2\n")
    assert _unreachable(p) == [3]


# -- makeway JSONL -----------------------------------------------------------------------------

def _write_jsonl(path, recs):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_jsonl_unsorted_with_config_event(tmp_path, name):
    src, _ = records(KTH)
    event = {"event": "config", "time": 600000, "queue": "default", "max": {"cpu": 50}}
    path = tmp_path / name
    _write_jsonl(path, list(reversed(src)) + [event])
    recs, stats = records(path)
    assert stats.records == 40 and stats.events == 1
    assert_valid_and_sorted(recs)
    assert recs[1] == event and [r for r in recs if "id" in r] == src


def test_jsonl_bad_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    src, _ = records(KTH)
    lines = [json.dumps(r) for r in src[:5]]
    lines[1] = lines[1][:20]
    lines[3] = json.dumps({**src[3], "duration": -1})
    path.write_text("\n".join(lines) + "\n")
    recs, stats = records(path)
    assert [r["id"] for r in recs] == [src[0]["id"], src[2]["id"], src[4]["id"]]
    assert stats.warnings[0].startswith(f"{path}:2: invalid JSON")
    assert stats.warnings[1].startswith(f"{path}:4: ") and "duration" in stats.warnings[1]
    with pytest.raises(TraceError, match=":2: invalid JSON"):
        list(read_trace(path, strict=True))


def test_convert_roundtrip_is_identity(tmp_path):
    for src in (KTH, GOOGLE, PHILLY, ALIBABA):
        recs, _ = records(src)
        out = tmp_path / "out.jsonl"
        _write_jsonl(out, recs)
        assert records(out, "jsonl")[0] == recs


def test_missing_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        list(read_trace(tmp_path / "nope.csv", "philly"))
    shutil.copy(KTH, tmp_path / "copy.swf")
    assert records(tmp_path / "copy.swf")[1].records == 40


def test_truncated_gzip_keeps_what_was_read(tmp_path):
    big = tmp_path / "big.swf"
    lines = KTH.read_text().splitlines()
    header = [line for line in lines if line.startswith(";")]
    jobs = [line for line in lines if not line.startswith(";")]
    big.write_text("\n".join(header + jobs * 200) + "\n")
    data = gzip.compress(big.read_bytes())
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(data[: len(data) // 2])
    recs, stats = records(cut)
    assert 0 < len(recs) < 8000
    assert any("truncated or corrupt file" in w for w in stats.warnings)
    with pytest.raises(TraceError, match="truncated or corrupt"):
        list(read_trace(cut, strict=True))


# -- properties --------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

swf_rows = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 5_000), st.integers(1, 64),
                              st.sampled_from([0, 1, 5]), st.integers(-1, 3)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(swf_rows)
def test_swf_any_order_gives_sorted_complete_records(tmp_path_factory, rows):
    """Lines in any order: every job is a record (or dropped as cancelled before start), sorted."""
    path = tmp_path_factory.mktemp("swf") / "p.swf"
    header = "; MaxNodes: 64\n; MaxProcs: 64\n; Queue: 0 batch\n; Queue: 1 express\n"
    lines = [f"{i + 1} {sub} 0 {run} {procs} -1 -1 {procs} {run + 60} -1 {status} 1 1 -1 {queue} -1 -1 -1"
             for i, (sub, run, procs, status, queue) in enumerate(rows)]
    path.write_text(header + "\n".join(lines) + "\n")
    recs, stats = records(path)
    cancelled = sum(1 for _, run, _, status, _ in rows if status == 5 and run == 0)
    assert stats.records == len(recs) == len(rows) - cancelled
    assert stats.dropped.get("cancelled before start", 0) == cancelled and stats.skipped == 0
    assert [(r["submit"], int(r["id"])) for r in recs] == sorted((r["submit"], int(r["id"])) for r in recs)
    cfg = cluster_from_trace(path)
    assert {r["queue"] for r in recs} <= set(cfg["queues"])
    users = cluster_from_trace(path, queue_by="user")
    assert set(users["queues"]) == {"root", "user-1", "default"}


def _strptime_utc(text: str) -> float | None:
    from datetime import datetime, timezone
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


stamp_parts = st.tuples(st.integers(1, 9999), st.integers(0, 14), st.integers(0, 32), st.integers(0, 25),
                        st.integers(0, 61), st.integers(0, 61), st.sampled_from([" ", "  ", "T"]),
                        st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(stamp_parts, min_size=1, max_size=12))
def test_philly_timestamps_read_as_strptime_reads_them(parts):
    """The per-day shortcut of the Philly importer gives strptime's seconds, or its refusal, for
    in-range and out-of-range fields, one- and two-digit forms, other separators, repeated days."""
    from makeway.sim.importers.philly import utc_seconds
    days: dict[str, float] = {}
    for y, mo, d, h, mi, s, sep, padded in parts:
        fmt = "{:04d}-{:02d}-{:02d}{}{:02d}:{:02d}:{:02d}" if padded else "{}-{}-{}{}{}:{}:{}"
        text = fmt.format(y, mo, d, sep, h, mi, s)
        want = _strptime_utc(text)
        if want is None:
            with pytest.raises(ValueError):
                utc_seconds(text, days)
        else:
            assert utc_seconds(text, days) == want
