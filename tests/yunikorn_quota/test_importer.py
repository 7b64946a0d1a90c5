"""The YuniKorn importer: ConfigMap or bare queues.yaml, units, properties, nodes, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from makeway.adapters.yunikorn import import_files, import_workloads
from makeway.config import build_state, parse_config
from makeway.errors import ConfigError

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()
CONFIGS = SHARED / "configs" / "yunikorn"

BARE = """
partitions:
  - name: default
    preemption: {enabled: false, quotapreemptionenabled: true}
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        queues:
          - name: tenants
            resources:
              guaranteed: {vcore: 500m, memory: 1Gi}
              max: {vcore: 2, memory: 4G, nvidia.com/gpu: 2}
            properties: {quota.preemption.delay: 10s, preemption.policy: fence, custom: x}
            queues:
              - name: a
                resources: {guaranteed: {vcore: 1, memory: 1G}}
  - name: gpu
    queues: [{name: root}]
"""


def _write(tmp_path: Path, text: str, name: str = "queues.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bare_queues_yaml(tmp_path):
    cfg, warnings = import_files([_write(tmp_path, BARE)])
    q = cfg["queues"]
    assert set(q) == {"root", "root.tenants", "root.tenants.a"}
    assert q["root.tenants"]["max"] == {"cpu": "2", "memory": "4G", "nvidia.com/gpu": "2"}
    assert q["root.tenants"]["guaranteed"] == {"cpu": "500m", "memory": "1Gi"}
    assert q["root.tenants"]["settings"]["properties"]["quota.preemption.delay"] == "10s"
    assert q["root.tenants"]["settings"]["properties"]["custom"] == "x"
    assert q["root.tenants.a"]["parent"] == "root.tenants"
    assert cfg["preemption"] == {"model": "yunikorn",
                                 "settings": {"preemptionEnabled": False, "quotaPreemptionEnabled": True}}
    assert any("partitions" in w and "'default'" in w for w in warnings)
    assert any("placementrules" in w for w in warnings)
    assert any("node" in w for w in warnings)
    state = build_state(parse_config(cfg))
    assert state.total_capacity()["cpu"] == 2 and state.total_capacity()["memory"] == 4 * 10**9


def test_configmap_wrapping(tmp_path):
    inner = "\n".join("    " + line for line in BARE.strip().splitlines())
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: yk}}\ndata:\n  queues.yaml: |\n{inner}\n"
    cfg, _ = import_files([_write(tmp_path, text, "cm.yaml")])
    assert "root.tenants.a" in cfg["queues"]


def test_choose_partition(tmp_path):
    cfg, _ = import_files([_write(tmp_path, BARE)], partition="gpu")
    assert set(cfg["queues"]) == {"root"}


@pytest.mark.parametrize("bad,where", [
    ("max: {vcore: lots}", "queues.root.x.resources.max.vcore"),
    ("max: {memory: 500m}", "queues.root.x.resources.max.memory"),
    ("guaranteed: {vcore: 4}\n          max: {vcore: 2}", "queues.root.x.resources.guaranteed.cpu"),
])
def test_errors_name_the_field(tmp_path, bad, where):
    text = f"partitions:\n  - name: p\n    queues:\n    - name: root\n      queues:\n      - name: x\n        resources:\n          {bad}\n"
    with pytest.raises(ConfigError) as err:
        import_files([_write(tmp_path, text)])
    assert "Partition/p" in str(err.value) and where in str(err.value)


def test_every_shared_yunikorn_file_imports():
    if not CONFIGS.is_dir():
        pytest.skip("../shared is not beside the checkout")
    files = [p for p in sorted(CONFIGS.rglob("*")) if p.is_file() and p.name != "LICENSE"]
    assert len(files) >= 20
    for p in files:
        cfg, _ = import_files([p])
        state = build_state(parse_config(cfg, str(p)))
        assert "root" in state.queues and state.nodes


def test_workload_manifests_become_trace_records():
    if not CONFIGS.is_dir():
        pytest.skip("../shared is not beside the checkout")
    dep = CONFIGS / "yunikorn-k8shim/test/e2e/testdata/quota-preemption/deployments/deployment1.yaml"
    (rec,) = import_workloads([dep])
    assert rec["queue"] == "root.parent.queue-a"
    assert rec["tasks"] == [{"count": 3, "resources": {"cpu": "100m", "memory": "100Mi"}, "name": "deployment"}]
