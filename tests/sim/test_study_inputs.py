"""--queue-map, --scale-cluster, --save-cluster, compare --trace without a config, --swf-processors
(issue 17), on the committed excerpts (tests/data/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from makeway.config import load_config, parse_config
from makeway.errors import ConfigError
from makeway.sim import queue_map
from makeway.sim.importers import ImportStats, cluster_from_trace, read_trace
from makeway.sim.scale import scale_cluster
from tests.test_cli import cli

DATA = Path(__file__).resolve().parents[1] / "data"
PHILLY = DATA / "philly" / "philly.csv"
ALIBABA = DATA / "alibaba" / "openb_pod_list_default.csv"
LANL = DATA / "swf" / "LANL-CM5-excerpt-2.swf"
STUDY = Path(__file__).resolve().parents[2] / "examples" / "studies" / "philly"


def test_yaml_map_exact_then_rules_in_order_then_default():
    qm = queue_map.load(str(STUDY / "queue-map.yaml"))
    got = {vc: qm.target({"queue": vc}) for vc in ("6214e9", "b436b2", "11cb48", "6c71a0", "0e4a51", "ed69ec")}
    assert got == {"6214e9": "prod", "b436b2": "prod", "11cb48": "research", "6c71a0": "research",
                   "0e4a51": "research", "ed69ec": "batch"}
    qm.check(load_config(STUDY / "cluster.yaml").queues)
    study = load_config(STUDY / "cluster.yaml")
    assert [q for q in study.queues if q != "root"] == ["prod", "research", "batch"]
    for model in ("kueue", "yunikorn", "ytsaurus", "symphony"):
        parse_config({**study.model_dump(), "preemption": {"model": model, "settings": study.preemption.settings}})
    rec = qm.apply({"id": "j", "queue": "6214e9"})
    assert rec["queue"] == "prod" and rec["labels"] == {"trace_queue": "6214e9"}


def test_inline_rules_other_fields_and_no_default_keeps_the_queue():
    qm = queue_map.from_inline("user:u1*=prod, 62*=research")
    assert qm.target({"queue": "x", "user": "u12"}) == "prod"
    assert qm.target({"queue": "6214e9", "user": "u2"}) == "research"
    assert qm.target({"queue": "other", "user": "u2"}) is None  # no default: the record keeps its queue


@pytest.mark.parametrize("data, message", [
    ({"by": "team"}, "by: unknown field 'team'"),
    ({"rules": [{"regex": "(", "queue": "a"}]}, "rules.0.regex: bad regular expression"),
    ({"rules": [{"match": "a*", "regex": "a", "queue": "a"}]}, "rules.0: give exactly one of match"),
    ({"rules": [{"match": "a*"}]}, "rules.0.queue: must be a queue name"),
    ({"mapping": {}}, "mapping: unknown field"),
])
def test_bad_maps_name_the_field(data, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        queue_map.from_data(data, "m.yaml")


def test_scale_keeps_every_kind_and_rounds_half_up():
    ali = cluster_from_trace(ALIBABA)
    kinds = {(tuple(sorted(n["capacity"].items())), tuple(sorted(n["labels"].items()))) for n in ali["nodes"]}
    small = scale_cluster(ali, 0.01)
    assert len(small["nodes"]) == len(kinds) and all(n.get("count", 1) == 1 for n in small["nodes"])
    parse_config(small)
    philly = cluster_from_trace(PHILLY)  # 352 servers, VC guarantees of node count x 8 GPUs
    half = scale_cluster(philly, 0.125, quotas=True)
    assert half["nodes"][0]["count"] == 44
    assert half["queues"]["6214e9"]["guaranteed"] == {"gpu": 64}
    assert scale_cluster({"nodes": [{"name": "n", "count": 5, "capacity": {"cpu": 1}}]}, 0.1)["nodes"][0].get("count", 1) == 1
    assert scale_cluster({"nodes": [{"name": "n", "count": 5, "capacity": {"cpu": 1}}]}, 0.3)["nodes"][0]["count"] == 2


def test_save_cluster_writes_a_config_that_replays_the_same(tmp_path):
    saved = tmp_path / "philly.yaml"
    code, out, err = cli("simulate", "--trace", str(PHILLY), "--scale-cluster", "0.02", "--save-cluster", str(saved),
                         "-o", str(tmp_path / "a.json"))
    assert code == 0, err
    assert "7 nodes (gpu 56)" in out and len(out.splitlines()) < 40  # one line, not the whole cluster
    cfg = load_config(saved)
    assert sum(n.count for n in cfg.nodes) == 7
    code, out, err = cli("simulate", str(saved), "-q", "-o", str(tmp_path / "b.json"))
    assert code == 0, err
    a, b = (yaml.safe_load((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["summary"] == b["summary"]


def test_queue_map_on_the_command_line_and_compare_without_a_config(tmp_path):
    code, out, err = cli("compare", "--trace", str(PHILLY), "--scale-cluster", "0.02", "--model", "none,kueue",
                         "--queue-map", "6214e9=11cb48,*=6c71a0", "-q")
    assert code == 0, err
    assert "40 of 40" in out
    code, out, err = cli("simulate", "--trace", str(PHILLY), "--queue-map", "*=nowhere", "-q")
    assert code == 2 and "unknown queue 'nowhere'" in err
    code, out, err = cli("simulate", "--trace", str(PHILLY), "--scale-cluster", "0", "-q")
    assert code == 2 and "--scale-cluster" in err
    code, out, err = cli("compare", "-q")
    assert code == 2 and "--trace" in err


def test_swf_processors_requested_or_allocated():
    """LANL's CM-5 gave 512 processors to jobs that asked for 256 (and 32 to jobs that asked for less)."""
    got = {}
    for choice in ("requested", "allocated"):
        stats = ImportStats()
        got[choice] = {r["id"]: r["tasks"][0]["resources"]["cpu"] for r in read_trace(LANL, processors=choice, stats=stats)}
        differ = sum(stats.notes.values())
    changed = [j for j in got["requested"] if got["requested"][j] != got["allocated"][j]]
    assert differ == len(changed) == 2
    assert {j: (got["requested"][j], got["allocated"][j]) for j in changed} == {"58": (256, 512), "59": (256, 512)}
    code, out, err = cli("simulate", "--trace", str(PHILLY), "--swf-processors", "allocated", "-q")
    assert code == 2 and "only for SWF traces" in err
