from pathlib import Path

import pytest

from makeway.adapters.ytsaurus import import_files, parse_yson
from makeway.errors import ConfigError

SNIPPETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "configs" / "ytsaurus"


@pytest.mark.parametrize("text,want", [
    ("{cpu=100}", {"cpu": 100}),
    ('{guarantee_type=burst; resource_flow={cpu=1000}; burst_guarantee_resources={cpu=2000}}',
     {"guarantee_type": "burst", "resource_flow": {"cpu": 1000}, "burst_guarantee_resources": {"cpu": 2000}}),
    ('<weight=2.5;mode=fifo>{}', {"$attributes": {"weight": 2.5, "mode": "fifo"}, "$value": {}}),
    ('[%true; #; "a b"; 1u]', [True, None, "a b", 1]),
    ('{"json": [1, 2], "x": {"y": 0.5}}', {"json": [1, 2], "x": {"y": 0.5}}),
])
def test_yson(text, want):
    assert parse_yson(text) == want


def test_nested_yson_tree(tmp_path):
    f = tmp_path / "tree.yson"
    f.write_text('{prod = <weight=3; strong_guarantee_resources={cpu=40}; mode=fifo;'
                 ' fair_share_starvation_timeout=15000> {etl = <resource_limits={cpu=10}> {}}; dev = <> {}}')
    cfg, warnings = import_files([f])
    q = cfg["queues"]
    assert q["prod"] == {"parent": "root", "weight": 3, "guaranteed": {"cpu": 40},
                         "settings": {"mode": "fifo", "fair_share_starvation_timeout": 15.0}}
    assert q["etl"]["parent"] == "prod" and q["etl"]["max"] == {"cpu": 10}
    assert q["dev"]["parent"] == "root"
    assert cfg["preemption"]["model"] == "ytsaurus"
    assert any("synthesised" in w for w in warnings)


def test_json_pool_list_and_tree_settings(tmp_path):
    f = tmp_path / "pools.json"
    f.write_text('{"tree": {"preemptive_scheduling_backoff": 5000}, "pools": ['
                 '{"name": "a", "weight": 2}, {"name": "b", "parent": "a", "strong_guarantee_resources": {"cpu": 4}}]}')
    cfg, _ = import_files([f])
    assert cfg["preemption"]["settings"] == {"preemptive_scheduling_backoff": 5.0}
    assert cfg["queues"]["b"] == {"parent": "a", "guaranteed": {"cpu": 4}}


@pytest.mark.parametrize("body,fragment", [
    ('{a = <weight=-1> {}}', "Pool/a: weight"),
    ('{a = <strong_guarantee_resources={cpu=fast}> {}}', "strong_guarantee_resources.cpu"),
    ('{a = <weight=1', "YSON"),
    ("just some text", "no pool tree"),
    ('{a = <strong_guarantee_resources={cpu=%inf}> {}}', "strong_guarantee_resources.cpu: must be finite"),
])
def test_invalid(tmp_path, body, fragment):
    f = tmp_path / "bad.yson"
    f.write_text(body)
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        import_files([f])


@pytest.mark.skipif(not SNIPPETS.is_dir(), reason="../shared is not beside the checkout")
def test_shared_snippets_import():
    files = sorted(p for p in SNIPPETS.iterdir() if p.name != "LICENSE")
    cfg, warnings = import_files(files)
    q = cfg["queues"]
    assert q["burst"]["settings"]["integral_guarantees"]["guarantee_type"] == "burst"
    assert q["project-subpool1"]["guaranteed"] == {"cpu": 50}
    assert q["project-batch"]["weight"] == 10
    assert q["p3"]["settings"]["fair_share_starvation_tolerance"] == 0.5 and q["p2"]["parent"] == "p1"
    assert cfg["preemption"]["settings"]["fair_share_starvation_timeout"] == 1.0
    assert any("shell wrapper" in w for w in warnings)
