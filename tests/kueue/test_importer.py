"""The Kueue manifest importer: shared manifest sets import into configs the simulator accepts."""

from pathlib import Path

import pytest
import yaml

from makeway.adapters.kueue import import_files
from makeway.config import build_state, parse_config
from makeway.registry import load_model
from makeway.errors import ConfigError

from .helpers import CONFIGS

MANIFESTS = sorted(CONFIGS.rglob("*.yaml")) if CONFIGS.is_dir() else []


def _accepts(cfg: dict) -> None:
    c = parse_config(yaml.safe_load(yaml.safe_dump(cfg)))
    state = build_state(c)
    model = load_model(c.preemption.model, c.preemption.settings)
    model.bind(state)
    assert model.schedule(state, 0.0) == []


@pytest.mark.skipif(not MANIFESTS, reason="shared Kueue manifests not available")
@pytest.mark.parametrize("path", MANIFESTS, ids=[str(p.relative_to(CONFIGS)) for p in MANIFESTS])
def test_shared_manifest_imports(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    if not any("kueue.x-k8s.io/" in str(d.get("apiVersion", "")) or d.get("kind") == "ConfigMap" for d in docs):
        with pytest.raises(ConfigError, match="no Kueue object found"):  # e.g. a sample batch Job
            import_files([path])
        return
    cfg, warnings = import_files([path])
    assert cfg["nodes"] and cfg["preemption"]["model"] == "kueue"
    assert any("node" in w for w in warnings)
    _accepts(cfg)


@pytest.mark.skipif(not MANIFESTS, reason="shared Kueue manifests not available")
def test_kueueviz_set_builds_hierarchy():
    folder = CONFIGS / "HEAD" / "cmd" / "kueueviz" / "examples"
    cfg, _ = import_files(sorted(folder.glob("*.yaml")))
    q = cfg["queues"]
    assert q["research"]["parent"] == "organization"
    assert q["emergency-cluster-queue"]["parent"] == "ai-for-humanity-foundation"
    assert q["emergency-cluster-queue"]["settings"]["preemption"]["reclaimWithinCohort"] == "Any"
    assert cfg["preemption"]["settings"]["priorityClasses"]["human-critical"] == 1000000
    _accepts(cfg)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


CQ = """
apiVersion: kueue.x-k8s.io/{api}
kind: ClusterQueue
metadata: {{name: team-a}}
spec:
  {cohort_field}: org
  fairSharing: {{weight: "2"}}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: spot
      resources:
      - {{name: cpu, nominalQuota: {nominal}, borrowingLimit: 2}}
      - {{name: memory, nominalQuota: 8Gi}}
"""


@pytest.mark.parametrize("api, cohort_field", [("v1beta1", "cohort"), ("v1beta2", "cohortName")])
def test_both_api_versions(tmp_path, api, cohort_field):
    cfg, warnings = import_files([_write(tmp_path, CQ.format(api=api, cohort_field=cohort_field, nominal=4))])
    team = cfg["queues"]["team-a"]
    assert team["parent"] == "org" and team["weight"] == 2.0
    assert cfg["nodes"][0]["labels"] == {"flavor": "spot"}
    assert any("Cohort/org is referenced" in w for w in warnings)
    _accepts(cfg)


def test_negative_quota_names_the_object(tmp_path):
    with pytest.raises(ConfigError, match=r"ClusterQueue/team-a: spec\.resourceGroups\[0\].*nominalQuota: negative"):
        import_files([_write(tmp_path, CQ.format(api="v1beta2", cohort_field="cohortName", nominal=-1))])


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1.5", "x", "[1]"])
def test_priority_class_value_that_is_not_an_integer_names_the_object(tmp_path, value):
    """A value YAML reads as infinity once crashed the import (OverflowError; found by the fuzzer)."""
    text = f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: hi}}\nvalue: {value}"
    with pytest.raises(ConfigError, match=r"WorkloadPriorityClass/hi: value: .* is not an integer"):
        import_files([_write(tmp_path, text)])


def test_priority_class_whole_values_are_read(tmp_path):
    text = "\n---\n".join(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: p{i}}}\n"
                           f"value: {v}" for i, v in enumerate(["1000", "2.0", "'7'"]))
    cfg, _ = import_files([_write(tmp_path, text + "\n---\n" + CQ.format(api="v1beta2", cohort_field="cohortName",
                                                                          nominal=4))])
    assert cfg["preemption"]["settings"]["priorityClasses"] == {"p0": 1000, "p1": 2, "p2": 7}


def test_cohort_cycle_names_the_cohort(tmp_path):
    text = "\n---\n".join(
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: {a}}}\nspec: {{parentName: {b}}}"
        for a, b in (("x", "y"), ("y", "x")))
    with pytest.raises(ConfigError, match=r"Cohort/x: spec\.parentName: cohort cycle"):
        import_files([_write(tmp_path, text)])


def test_unknown_kinds_warn_and_configuration_sets_fair_sharing(tmp_path):
    text = CQ.format(api="v1beta2", cohort_field="cohortName", nominal=4) + """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta1
    kind: Configuration
    fairSharing:
      enable: true
      preemptionStrategies: [LessThanInitialShare]
---
apiVersion: batch/v1
kind: Job
metadata: {name: sample}
"""
    cfg, warnings = import_files([_write(tmp_path, text)])
    assert cfg["preemption"]["settings"]["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    assert any("Job/sample" in w and "skipped" in w for w in warnings)


QUEUEING = CQ.format(api="v1beta2", cohort_field="cohortName", nominal=4) + """  queueingStrategy: STRATEGY
  namespaceSelector: {matchLabels: {dep: eng}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
"""


def test_queueing_strategy_selector_and_taints_are_kept(tmp_path):
    cfg, _ = import_files([_write(tmp_path, QUEUEING.replace("STRATEGY", "StrictFIFO"))])
    team = cfg["queues"]["team-a"]["settings"]
    assert team["queueingStrategy"] == "StrictFIFO"
    assert team["namespaceSelector"] == {"matchLabels": {"dep": "eng"}}
    assert cfg["preemption"]["settings"]["resourceFlavors"] == {
        "spot": {"nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}}
    _accepts(cfg)


def test_unknown_queueing_strategy_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"ClusterQueue/team-a: spec\.queueingStrategy: 'Fastest'"):
        import_files([_write(tmp_path, QUEUEING.replace("STRATEGY", "Fastest"))])
