"""Whole real traces streamed end to end; counts checked against shared/PROVENANCE.md section 1.

Located beside the repository as ``<repo>/../shared`` (as in CI); skipped when absent.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from makeway.config import parse_config
from makeway.sim.importers import ImportStats, cluster_from_trace, detect_format, read_trace

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="shared/traces not available")


def stream(path, **kw):
    """Consume the trace once, checking order as it goes; keep only small aggregates."""
    stats = ImportStats()
    last = float("-inf")
    queues: Counter = Counter()
    jobs: set[str] = set()
    evictions = 0
    for rec in read_trace(path, stats=stats, **kw):
        assert rec["submit"] >= last
        last = rec["submit"]
        queues[rec["queue"]] += 1
        jobs.add(rec["id"].split(".")[0])
        evictions += rec.get("settings", {}).get("observed_evictions", 0)
    return stats, queues, jobs, evictions


@pytest.mark.parametrize("name,jobs,skipped", [
    ("KTH-SP2-1996-2.1-cln.swf.gz", 28_476, 1),      # line 27323: no processor count
    ("LANL-CM5-1994-4.1-cln.swf.gz", 122_060, 3),    # lines 43383-43385: no processor count
    ("NASA-iPSC-1993-3.1-cln.swf.gz", 18_239, 0),
    ("LCG.swf.gz", 188_041, 0),
])
def test_swf_logs(name, jobs, skipped):
    path = TRACES / "swf" / name
    assert detect_format(path) == "swf"
    stats, queues, _, _ = stream(path)
    assert stats.records + stats.skipped == jobs and stats.skipped == skipped
    assert not stats.dropped and not stats.merged
    cfg = cluster_from_trace(path)
    parse_config(cfg, name)
    assert set(queues) <= set(cfg["queues"])
    if name.startswith("LCG"):
        assert len(queues) == 170 and cfg["nodes"][0]["capacity"]["cpu"] == 24_515


def test_google_task_events():
    path = TRACES / "google-clusterdata-2011-2"
    stats, queues, jobs, evictions = stream(path)
    assert stats.events == 919_519 and stats.skipped == 0
    assert evictions == 21_321                       # every EVICT lands on an imported submission
    assert stats.records == 327_758 and sum(stats.dropped.values()) == 10_552
    assert 9_700 < len(jobs) <= 9_803
    assert set(queues) == {"free", "batch", "production"}


def test_philly():
    path = TRACES / "gpu" / "philly" / "philly.csv"
    stats, queues, _, _ = stream(path)
    assert stats.records == 82_247 and stats.skipped == 0
    assert len(queues) == 15 and queues["6214e9"] == 41_226 and queues["11cb48"] == 16_091
    cfg = cluster_from_trace(path)
    parse_config(cfg, "philly")
    assert set(queues) <= set(cfg["queues"])


def test_alibaba():
    path = TRACES / "gpu" / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
    stats, queues, _, _ = stream(path)
    assert stats.records == 8_152 and stats.skipped == 0
    assert queues == {"ls": 4_647, "be": 3_398, "burstable": 100, "guaranteed": 7}
    cfg = cluster_from_trace(path)
    parse_config(cfg, "alibaba")
    assert len(cfg["nodes"]) == 1_523 and sum(n["capacity"]["gpu"] for n in cfg["nodes"]) == 6_212
