"""Per-model settings are typed: typos and wrong types are errors naming the field path, at config
load and in trace records; every shipped example and every importer's output still validates."""

from __future__ import annotations

import copy
import glob
import importlib
from pathlib import Path

import pytest

from tests.example_files import example_configs

from makeway.config import load_config, load_yaml, parse_config
from makeway.registry import MODELS, load_model
from makeway.errors import ConfigError, TraceError
from makeway.policies.settings_common import ModelSettings, field_names
from makeway.model_settings import BY_CLASS, LEVELS, TRACE_METADATA, _owners, settings_classes, trace_settings_problem
from makeway.sim.trace import change_from_record, workload_from_record

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def config(model: str, model_settings=None, queue_settings=None) -> dict:
    return {"resources": ["cpu", "memory", "slots"],
            "nodes": [{"name": "n", "capacity": {"cpu": 8, "memory": "32Gi", "slots": 8}}],
            "queues": {"root": {}, "a": {"parent": "root", "settings": queue_settings or {}}},
            "preemption": {"model": model, "settings": model_settings or {}}}


def error_of(model: str, model_settings=None, queue_settings=None) -> str:
    with pytest.raises(ConfigError) as exc:
        parse_config(config(model, model_settings, queue_settings), "c.yaml")
    return str(exc.value)


# (model, model-level settings, queue-level settings, expected text: path and problem)
BAD = [
    # Kueue
    ("kueue", None, {"preemption": {"withinClusterQeue": "Any"}},
     "c.yaml: queues.a.settings.preemption.withinClusterQeue: unknown field (did you mean withinClusterQueue?)"),
    ("kueue", None, {"preemption": {"withinClusterQueue": "Sometimes"}},
     "queues.a.settings.preemption.withinClusterQueue: Input should be 'Never', 'LowerPriority' or "
     "'LowerOrNewerEqualPriority' (got 'Sometimes')"),
    ("kueue", None, {"kind": "Clusterqueue"}, "queues.a.settings.kind: Input should be 'ClusterQueue' or 'Cohort'"),
    ("kueue", None, {"resourceGroups": [{"flavors": [{"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "12Qx"}]}]}]},
     "queues.a.settings.resourceGroups.0.flavors.spot.resources.cpu.nominalQuota: '12Qx' is not a quantity"),
    ("kueue", None, {"resourceGroups": [{"flavors": [{"name": "spot", "resource": []}]}]},
     "queues.a.settings.resourceGroups.0.flavors.spot.resource: unknown field (did you mean resources?)"),
    ("kueue", None, {"flavorFungibility": {"whenCanBorrow": "Never"}}, "queues.a.settings.flavorFungibility.whenCanBorrow"),
    ("kueue", None, {"preemption": {"borrowWithinCohort": {"maxPriorityThreshold": "high"}}},
     "queues.a.settings.preemption.borrowWithinCohort.maxPriorityThreshold: Input should be a valid integer"),
    ("kueue", {"fairSharing": {"preemptionStrategie": []}}, None,
     "preemption.settings.fairSharing.preemptionStrategie: unknown field (did you mean preemptionStrategies?)"),
    ("kueue", {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}}, None,
     "preemption.settings.fairSharing.preemptionStrategies: ['LessThanInitialShare', 'LessThanOrEqualToFinalShare'] "
     "is not one of Kueue's allowed lists"),
    ("kueue", {"prioritizePreemptorWorkloads": "false"}, None,
     "preemption.settings.prioritizePreemptorWorkloads: Input should be a valid boolean (got 'false')"),
    ("kueue", {"priorityClasses": {"high": 1.5}}, None, "preemption.settings.priorityClasses.high: Input should be a valid integer"),
    ("kueue", {"defaultFlavour": "spot"}, None, "preemption.settings.defaultFlavour: unknown field (did you mean defaultFlavor?)"),
    # YuniKorn
    ("yunikorn", None, {"properties": {"preemption.dealy": "10s"}},
     "queues.a.settings.properties.preemption.dealy: unknown field (did you mean preemption.delay?)"),
    ("yunikorn", None, {"properties": {"preemption.delay": "0s"}},
     "queues.a.settings.properties.preemption.delay: '0s' must be above 0"),
    ("yunikorn", None, {"properties": {"quota.preemption.delay": "10x"}},
     "queues.a.settings.properties.quota.preemption.delay: '10x' is not a Go duration"),
    ("yunikorn", None, {"properties": {"quota.preemption.delay": "-5s"}},
     "queues.a.settings.properties.quota.preemption.delay: '-5s' is negative"),
    ("yunikorn", None, {"properties": {"preemption.delay": float("inf")}},
     "queues.a.settings.properties.preemption.delay: inf is not a Go duration"),
    ("yunikorn", None, {"properties": {"priority.offset": "high"}}, "queues.a.settings.properties.priority.offset: 'high' is not an integer"),
    ("yunikorn", None, {"properties": {"priority.offset": "9999999999"}}, "priority.offset: '9999999999' is outside the int32 range"),
    ("yunikorn", None, {"properties": {"preemption.policy": "fenced"}},
     "queues.a.settings.properties.preemption.policy: 'fenced' is not one of , default, fence, disabled"),
    ("yunikorn", None, {"properties": {"custom": {"a": 1}}}, "queues.a.settings.properties.custom: a property value must be a string"),
    ("yunikorn", None, {"propertes": {}}, "queues.a.settings.propertes: unknown field (did you mean properties?)"),
    ("yunikorn", {"preemptionEnabled": "false"}, None,
     "preemption.settings.preemptionEnabled: Input should be a valid boolean (got 'false')"),
    ("yunikorn", {"quotaPreemptionEnabled": "maybe"}, None, "preemption.settings.quotaPreemptionEnabled: Input should be a valid boolean"),
    ("yunikorn", {"preemptionEnable": True}, None, "preemption.settings.preemptionEnable: unknown field (did you mean preemptionEnabled?)"),
    # YTsaurus
    ("ytsaurus", {"fair_share_update_perod": 1}, None,
     "c.yaml: preemption.settings.fair_share_update_perod: unknown field (did you mean fair_share_update_period?)"),
    ("ytsaurus", {"fair_share_update_period": 0}, None, "preemption.settings.fair_share_update_period: Input should be greater than 0"),
    ("ytsaurus", {"heartbeat_period": 1e-300}, None, "preemption.settings.heartbeat_period: 1e-300 is below 0.001 s"),
    ("ytsaurus", {"fair_share_starvation_timeout": float("inf")}, None,
     "preemption.settings.fair_share_starvation_timeout: inf is not a finite number"),
    ("ytsaurus", {"fair_share_starvation_tolerance": 1.5}, None,
     "preemption.settings.fair_share_starvation_tolerance: Input should be less than or equal to 1"),
    ("ytsaurus", {"scheduling_preemption_priority_scope": "pool"}, None, "preemption.settings.scheduling_preemption_priority_scope"),
    ("ytsaurus", {"integral_guarantees": {"smooth_perod": 1}}, None,
     "preemption.settings.integral_guarantees.smooth_perod: unknown field (did you mean smooth_period?)"),
    ("ytsaurus", {"enable_preemption": "no"}, None, "preemption.settings.enable_preemption: Input should be a valid boolean"),
    ("ytsaurus", None, {"mode": "fifoo"}, "queues.a.settings.mode: Input should be 'fair_share' or 'fifo' (got 'fifoo')"),
    ("ytsaurus", None, {"fifo_sort_parameters": ["age"]}, "queues.a.settings.fifo_sort_parameters.0: Input should be 'weight'"),
    ("ytsaurus", None, {"integral_guarantees": {"guarantee_type": "strong"}}, "queues.a.settings.integral_guarantees.guarantee_type"),
    ("ytsaurus", None, {"non_preemptible_resource_usage_threshold": {"cpu": -1}},
     "queues.a.settings.non_preemptible_resource_usage_threshold.cpu: Input should be greater than or equal to 0"),
    ("ytsaurus", None, {"fair_share_starvation_tolerance": "x"}, "queues.a.settings.fair_share_starvation_tolerance: Input should be a valid number"),
    ("ytsaurus", None, {"allow_agressive_preemption": False},
     "queues.a.settings.allow_agressive_preemption: unknown field (did you mean allow_aggressive_preemption?)"),
    # Symphony
    ("symphony", {"preemptionCriteria": "Random"}, None,
     "preemption.settings.preemptionCriteria: preemptionCriteria 'Random' is not one of MostOverAllocatedSession, MostRecentTask"),
    ("symphony", {"slotSharing": "rack"}, None, "preemption.settings.slotSharing: String should match pattern"),
    ("symphony", {"slotResourse": "slots"}, None, "preemption.settings.slotResourse: unknown field (did you mean slotResource?)"),
    ("symphony", None, {"preemptionScope": "All"}, "queues.a.settings.preemptionScope: preemptionScope 'All' is not one of"),
    ("symphony", None, {"sessionTypes": {"batch": {"preemptionRank": 0}}},
     "queues.a.settings.sessionTypes.batch.preemptionRank: Input should be greater than or equal to 1"),
    ("symphony", None, {"sessionTypes": {"batch": {"preemptve": True}}},
     "queues.a.settings.sessionTypes.batch.preemptve: unknown field (did you mean preemptive?)"),
    ("symphony", None, {"sessionTypes": {"batch": {"preemptive": "maybe"}}}, "queues.a.settings.sessionTypes.batch.preemptive: 'maybe' is not a boolean"),
    ("symphony", None, {"sessionTypes": ["batch"]}, "queues.a.settings.sessionTypes: Input should be a valid dictionary"),
    # HPC and the default model
    ("easy-backfill", {"placement": "worst-fit"}, None, "preemption.settings.placement: Input should be 'first-fit' or 'best-fit'"),
    ("fifo-strict", {"placment": "best-fit"}, None, "preemption.settings.placment: unknown field (did you mean placement?)"),
    ("easy-backfill", None, {"partition": "big"}, "queues.a.settings.partition: unknown field"),
    ("none", {"backfill": True}, None, "preemption.settings.backfill: unknown field"),
    ("fifo", None, {"max_jobs": 3}, "queues.a.settings.max_jobs: unknown field"),
]


@pytest.mark.parametrize("model,model_settings,queue_settings,expected", BAD,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD)])
def test_bad_settings_name_the_field(model, model_settings, queue_settings, expected):
    assert expected in error_of(model, model_settings, queue_settings)


def test_every_bad_key_is_reported_at_once():
    msg = error_of("ytsaurus", {"fair_share_update_perod": 1, "preemptive_scheduling_backof": 2}, {"mode": "x"})
    assert "fair_share_update_perod" in msg and "preemptive_scheduling_backof" in msg and "queues.a.settings.mode" in msg


GOOD = [
    ("kueue", {"fairSharing": None}, {"kind": "ClusterQueue", "preemption": {"withinClusterQueue": None}}),
    ("kueue", {"fairSharing": True, "priorityClasses": {"high": 100}}, {"localQueues": ["ns/q"]}),
    ("kueue", {"fairSharing": {"enable": False}}, {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}}),
    ("yunikorn", {"quotaPreemptionEnabled": "TRUE", "quotapreemptionenabled": False},
     {"properties": {"preemption.delay": 30, "priority.offset": -5, "preemption.policy": "Fence", "custom.label": "x"}}),
    ("yunikorn", None, {"properties": {"quota.preemption.delay": 0, "application.sort.policy": "fair"}, "parent": True}),
    ("ytsaurus", {"fair_share_update_period": 0.001, "non_preemptible_resource_usage_threshold": {"cpu": None, "user_slots": 3},
                  "integral_guarantees": {"relaxed_share_multiplier_limit": 2}},
     {"fairShareStarvationTolerance": 0.5, "integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 1}},
      "max_operation_count": 10}),
    ("symphony", {"slotResource": "cpu", "preemptionScope": "lowerrankedsessions"},
     {"preemptionCriteria": "most recent task", "sessionTypes": {"t": {"preemptive": "yes", "priority": 10000}}}),
    ("easy-backfill", {"placement": "best-fit"}, None),
]


@pytest.mark.parametrize("model,model_settings,queue_settings", GOOD, ids=[f"{c[0]}-{i}" for i, c in enumerate(GOOD)])
def test_every_form_the_models_read_is_accepted(model, model_settings, queue_settings):
    cfg = parse_config(config(model, model_settings, queue_settings))
    load_model(model, cfg.preemption.settings)  # and the model takes them


# -- a config written for one model, run under another ---------------------------------------------

@pytest.mark.parametrize("path", example_configs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_validates_under_every_model(path):
    load_config(path)
    data = load_yaml(path)
    for model in MODELS:
        d = copy.deepcopy(data)
        d.setdefault("preemption", {})["model"] = model
        parse_config(d, str(path))


def test_another_models_settings_are_still_checked_by_their_owner():
    """A Kueue block in a config run under yunikorn is ignored by the run, but a typo in it is still an error."""
    parse_config(config("yunikorn", {"fairSharing": {}}, {"preemption": {"withinClusterQueue": "LowerPriority"}}))
    msg = error_of("yunikorn", None, {"preemption": {"withinClusterQeue": "Any"}})
    assert "queues.a.settings.preemption.withinClusterQeue: unknown field" in msg
    msg = error_of("none", {"fair_share_update_period": -1})
    assert "preemption.settings.fair_share_update_period: Input should be greater than 0" in msg


def test_no_key_means_two_things():
    """Keys of different models never collide, so a foreign key's owner is never ambiguous; the
    common model-level keys (``ModelSettings``: ``caches``) mean the same in every model."""
    common = set(field_names(ModelSettings))
    for level in LEVELS:
        assert {k: [c.__name__ for c in cs] for k, cs in _owners(level).items()
                if len(cs) > 1 and k not in common} == {}
    assert all(issubclass(c, ModelSettings) for cs in (_owners("model")[k] for k in common) for c in cs)
    assert len(_owners("model")["caches"]) == len({c.model for c in BY_CLASS.values()})


@pytest.mark.parametrize("model", ["none", "kueue", "yunikorn", "ytsaurus", "symphony", "easy-backfill"])
def test_caches_is_a_model_setting_of_every_model(model):
    assert load_model(model, {"caches": False}).options()["caches"] is False
    assert load_model(model, {}).options()["caches"] is True


def test_every_model_name_has_settings_classes():
    for name, found in MODELS.items():
        assert found.policy in BY_CLASS, name
        assert settings_classes(name).model is BY_CLASS[found.policy].model


# -- importers ---------------------------------------------------------------------------------------

def _shared_inputs() -> list[tuple[str, Path]]:
    out = []
    for kind, pattern in (("kueue", "configs/kueue/**/*.yaml"), ("yunikorn", "configs/yunikorn/**/*.yaml"),
                          ("ytsaurus", "configs/ytsaurus/ytsaurus-*")):
        out += [(kind, Path(p)) for p in sorted(glob.glob(str(SHARED / pattern), recursive=True))]
    out += [("symphony", p) for p in sorted((ROOT / "tests" / "symphony" / "data").glob("*.xml"))]
    return out


@pytest.mark.skipif(not (SHARED / "configs").is_dir(), reason="needs ../shared/configs")
def test_every_importer_output_validates():
    from makeway.errors import ConfigError

    validated = refused = 0
    for kind, path in _shared_inputs():
        try:  # files with no object of the importer's kind (a sample Job manifest) are refused by name
            cfg, _ = importlib.import_module(f"makeway.adapters.{kind}").import_files([path])
        except ConfigError as exc:
            assert "found" in str(exc) or "looks like" in str(exc), exc
            refused += 1
            continue
        parse_config(cfg, str(path))
        validated += 1
    assert validated > 40 and refused < validated


# -- trace records --------------------------------------------------------------------------------

WL = {"id": "j", "queue": "a", "submit": 0, "duration": 1, "tasks": [{"resources": {"cpu": 1}}]}


@pytest.mark.parametrize("settings,expected", [
    ({"priorityClasName": "high"}, "settings.priorityClasName: unknown field (did you mean priorityClassName?)"),
    ({"allowPreemption": "no"}, "settings.allowPreemption: Input should be a valid boolean (got 'no')"),
    ({"allowPreemption": 1}, "settings.allowPreemption: Input should be a valid boolean (got 1)"),
    ({"preemption_mode": "soft"}, "settings.preemption_mode: Input should be 'normal' or 'graceful'"),
    ({"weight": 0}, "settings.weight: Input should be greater than 0"),
    ({"preemptionRank": 10001}, "settings.preemptionRank: Input should be less than or equal to 10000"),
    ({"sessionType": "b", "sesionType": "b"}, "settings.sesionType: unknown field (did you mean sessionType?)"),
])
def test_bad_workload_settings_in_a_trace(settings, expected):
    with pytest.raises(TraceError) as exc:
        workload_from_record({**WL, "settings": settings})
    assert expected in str(exc.value)


def test_workload_settings_of_every_model_and_importer_metadata_are_read():
    s = {"priorityClassName": "high", "allowPreemption": False, "requiredNode": "n", "gang": True,
         "resource_limits": {"cpu": 2}, "sessionType": "batch", "preemptive": "true",
         **{k: 1 for k in TRACE_METADATA}}
    assert workload_from_record({**WL, "settings": s}).settings == s
    assert trace_settings_problem("workload", {"allowPreemption": True}) is None
    assert trace_settings_problem("workload", {"allowPreemption": 1}) is not None  # not the cached True


@pytest.mark.parametrize("settings,expected", [
    ({"properties": {"preemption.dealy": "1s"}}, "settings.properties.preemption.dealy: unknown field"),
    ({"mode": "fifoo"}, "settings.mode: Input should be 'fair_share' or 'fifo'"),
    ({"preemption": {"withinClusterQeue": "Any"}}, "settings.preemption.withinClusterQeue: unknown field"),
    ({"sessionTypes": {"t": {"preemptionRank": "x"}}}, "settings.sessionTypes.t.preemptionRank: Input should be a valid integer"),
])
def test_bad_config_event_settings(settings, expected):
    with pytest.raises(TraceError) as exc:
        change_from_record({"event": "config", "time": 5, "queue": "a", "settings": settings})
    assert expected in str(exc.value)


def test_good_config_event_settings():
    ch = change_from_record({"event": "config", "time": 5, "queue": "a",
                             "settings": {"properties": {"quota.preemption.delay": "5s"}, "mode": "fifo"}})
    assert ch.changes["settings"]["mode"] == "fifo"


def test_a_block_of_the_models_own_keys_reads_no_other_model(monkeypatch):
    """Start-up: checking a config whose settings the selected model reads builds no other model's
    classes (``_owners`` is where every model's are built); an unknown key still consults them."""
    import makeway.model_settings as ms

    def boom(level):
        raise AssertionError("every model's settings classes were built")

    monkeypatch.setattr(ms, "_owners", boom)
    assert ms.settings_problems("model", {"placement": "first-fit"}, "fifo-strict", "preemption.settings") == []
    assert ms.settings_problems("queue", {}, "fifo-strict", "queues.a.settings") == []
    with pytest.raises(AssertionError, match="every model"):
        ms.settings_problems("model", {"plaecment": "first-fit"}, "fifo-strict", "preemption.settings")
    fresh = ms._ByClass()
    assert list(fresh) == list(ms.BY_CLASS) and len(fresh) == len(ms.BY_CLASS)
    assert fresh[next(iter(fresh))].model is ms.BY_CLASS[next(iter(fresh))].model
