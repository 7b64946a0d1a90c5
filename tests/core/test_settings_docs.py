"""The settings classes agree with the models (defaults) and with docs/models/*.md (every key)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from makeway.registry import MODELS
from makeway.model_settings import BY_CLASS, LEVELS
from makeway.policies.hpc.model import EasyBackfill, StrictFifo
from makeway.policies.hpc.settings import BatchSettings
from makeway.policies.kueue import KueueModel
from makeway.policies.kueue.quota import Policy
from makeway.policies.kueue.settings import KueueSettings, Preemption
from makeway.policies.kueue.setup import parse_policy
from makeway.policies.settings_common import field_names
from makeway.policies.symphony.model import SymphonyModel
from makeway.policies.symphony.rules import DEFAULT_RANK
from makeway.policies.symphony.settings import SessionType, SymphonySettings
from makeway.policies.ytsaurus import starvation
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.policies.ytsaurus.settings import YTsaurusSettings
from makeway.policies.yunikorn.common import DEFAULT_PREEMPTION_DELAY_US, QueueProps, parse_go_duration_us, resolve_props
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.policies.yunikorn.quota import parse_quota_delay
from makeway.policies.yunikorn.settings import Properties, YuniKornSettings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models"
DOC_OF = {"makeway.policies.kueue:KueueModel": "kueue.md", "makeway.policies.yunikorn.model:YuniKornModel": "yunikorn.md",
          "makeway.policies.ytsaurus:YTsaurusModel": "ytsaurus.md", "makeway.policies.symphony.model:SymphonyModel": "symphony.md",
          "makeway.policies.hpc.model:StrictFifo": "hpc.md", "makeway.policies.hpc.model:EasyBackfill": "hpc.md",
          "makeway.policies.first_fit.model:PriorityFirstFit": "hpc.md"}


def _classes(cls: type[BaseModel], seen: list) -> list:
    if cls not in seen:
        seen.append(cls)
        for f in cls.model_fields.values():
            stack = [f.annotation]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and issubclass(t, BaseModel):
                    _classes(t, seen)
                stack.extend(typing.get_args(t))
    return seen


@pytest.mark.parametrize("target", sorted(BY_CLASS))
def test_every_setting_is_documented(target):
    text = (DOCS / DOC_OF[target]).read_text()
    spans = " ".join(re.findall(r"`([^`]+)`", text))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", spans))
    missing = []
    for level in LEVELS:
        for cls in _classes(BY_CLASS[target].at(level), []):
            missing += [f"{cls.__name__}.{k}" for k in field_names(cls) if k not in words]
    assert not missing, f"{DOC_OF[target]} does not mention {missing}"


def test_every_model_has_a_doc():
    assert {e.policy for e in MODELS.values()} == set(DOC_OF)


def test_kueue_defaults_are_the_models():
    m, s = KueueModel({}), KueueSettings()
    assert (m.fair, m.flavor_label, m.default_flavor, m.prioritize_preemptors) == \
        (s.fairSharing is not None, s.flavorLabel, s.defaultFlavor, s.prioritizePreemptorWorkloads)
    p = Preemption()
    assert parse_policy({}) == Policy(p.withinClusterQueue, p.reclaimWithinCohort, "Never", None) == parse_policy(None)


def test_yunikorn_defaults_are_the_models():
    m, s = YuniKornModel({}), YuniKornSettings()
    assert (m.preemption_enabled, m.quota.enabled) == (s.preemptionEnabled, s.quotaPreemptionEnabled)
    p = Properties()
    assert parse_go_duration_us(p.preemption_delay) == DEFAULT_PREEMPTION_DELAY_US
    assert parse_quota_delay(p.quota_preemption_delay) == 0.0
    assert resolve_props({}, None, None)[0] == QueueProps(p.preemption_policy, DEFAULT_PREEMPTION_DELAY_US,
                                                          p.priority_policy == "fence", int(p.priority_offset))


def test_ytsaurus_defaults_are_the_models():
    m, s = YTsaurusModel({}), YTsaurusSettings()
    assert (m.update_period, m.backoff.period, m.threshold, m.aggressive_threshold, m.enabled) == \
        (s.fair_share_update_period, s.preemptive_scheduling_backoff, s.preemption_satisfaction_threshold,
         s.aggressive_preemption_satisfaction_threshold, s.enable_preemption)
    assert (m.integral.smooth_period, m.integral.saturation_period, m.integral.relaxed_multiplier) == \
        (s.integral_guarantees.smooth_period, s.integral_guarantees.pool_capacity_saturation_period,
         s.integral_guarantees.relaxed_share_multiplier_limit)
    assert (m.heartbeat_period, m.heartbeat_splay) == (5.0, 1.0)  # the documented defaults of the two unset keys
    for key, value in starvation.TREE_DEFAULTS.items():
        assert getattr(s, key) == value, key


def test_symphony_and_hpc_defaults_are_the_models():
    m, s = SymphonyModel({}), SymphonySettings()
    assert (m.scope, m.criteria) == (s.preemptionScope, s.preemptionCriteria)
    assert SessionType().preemptionRank == DEFAULT_RANK
    assert EasyBackfill({}).placement == StrictFifo({}).placement == BatchSettings().placement
