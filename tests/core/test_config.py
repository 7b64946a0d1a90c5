from pathlib import Path

import pytest
import yaml

from makeway.config import build_state, load_config, parse_config
from makeway.errors import ConfigError

BASE = {
    "resources": ["cpu", "memory"],
    "nodes": [{"name": "n", "count": 2, "capacity": {"cpu": 8, "memory": "32Gi"}}],
    "queues": {"root": {}, "prod": {"parent": "root", "guaranteed": {"cpu": 4}, "max": {"cpu": 8}}},
}


def with_(path: str, value):
    import copy

    cfg = copy.deepcopy(BASE)
    cur = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur.setdefault(k, {})
    cur[keys[-1]] = value
    return cfg


def test_base_is_valid():
    cfg = parse_config(BASE)
    state = build_state(cfg)
    assert sorted(state.nodes) == ["n-0", "n-1"]
    assert state.nodes["n-0"].capacity == {"cpu": 8, "memory": 32 * 2**30}
    assert state.queues["root"].children == ["prod"]


@pytest.mark.parametrize("path, value, message", [
    ("queues.prod.max.memory", "12Qx", "queues.prod.max.memory: '12Qx' is not a quantity"),
    ("queues.prod.max.cpu", "-5", "queues.prod.max.cpu: '-5' is negative"),
    ("nodes.0.capacity.cpu", -1, "nodes.n.capacity.cpu: -1 is negative"),
    ("queues.prod.parent", "nowhere", "queues.prod.parent: unknown queue 'nowhere'"),
    ("queues.root.parent", "prod", "cycle"),
    ("queues.prod.guaranteed", {"cpu": 16}, "queues.prod.guaranteed.cpu: 16 is above max 8"),
    ("queues.prod.max", {"gpu": 1}, "queues.prod.max.gpu: unknown resource"),
    ("nodes.0.capacity", {"cpu": 1, "tpu": 1}, "nodes.n.capacity.tpu: unknown resource"),
    ("resources", ["cpu", "cpu", "memory"], "duplicate resource name"),
    ("queues.prod.weight", -1, "queues.prod.weight: Input should be greater than or equal to 0"),
    ("queues.prod.colour", "blue", "queues.prod.colour: unknown field"),
    ("preemption", {"model": "nonesuch"}, "preemption.model: unknown model 'nonesuch'"),
    ("nodes.0.count", 0, "nodes.n.count"),
])
def test_rejections_name_the_field(path, value, message):
    with pytest.raises(ConfigError) as err:
        parse_config(with_(path, value))
    assert message in str(err.value)


def test_duplicate_node_names():
    cfg = dict(BASE, nodes=[{"name": "a", "capacity": {"cpu": 1}}, {"name": "a", "capacity": {"cpu": 1}}])
    with pytest.raises(ConfigError, match="duplicate node name 'a'"):
        parse_config(cfg)


def test_duplicate_queue_names_in_yaml(tmp_path: Path):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(BASE) + "\n")
    text = p.read_text().replace("queues:\n", "queues:\n  prod: {}\n", 1)
    p.write_text(text)
    with pytest.raises(ConfigError, match="duplicate key 'prod'"):
        load_config(p)


@pytest.mark.parametrize("text, message", [
    ("resources: [cpu\n", "invalid YAML: line 2"),
    ("- a\n- b\n", "top level must be a mapping"),
])
def test_broken_yaml(tmp_path: Path, text, message):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(p)


def test_missing_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "absent.yaml")
