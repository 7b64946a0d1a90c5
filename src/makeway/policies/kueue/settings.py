"""Kueue settings: ``preemption.settings`` (model), ``queues.<q>.settings`` (a ClusterQueue or a
Cohort), workload ``settings`` in the trace. Shapes and values are Kueue's own (v1beta1/v1beta2),
as ``makeway import kueue`` writes them; see ``docs/models/kueue.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, StrictInt, StrictStr, field_validator

from makeway.policies.settings_common import Flag, ModelSettings, Quantity, Settings

Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
_ALLOWED_STRATEGIES = (["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
                       ["LessThanOrEqualToFinalShare", "LessThanInitialShare"])


class BorrowWithinCohort(Settings):
    policy: Optional[Literal["Never", "LowerPriority"]] = "Never"
    maxPriorityThreshold: Optional[StrictInt] = None


class Preemption(Settings):
    """ClusterQueue ``spec.preemption``; a missing or null field is ``Never`` (Kueue's default)."""

    withinClusterQueue: Optional[Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]] = "Never"
    reclaimWithinCohort: Optional[Literal["Never", "LowerPriority", "Any"]] = "Never"
    borrowWithinCohort: Optional[BorrowWithinCohort] = None


class FlavorFungibility(Settings):
    whenCanBorrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = "MayStopSearch"
    whenCanPreempt: Literal["TryNextFlavor", "MayStopSearch", "Preempt"] = "TryNextFlavor"
    preference: Optional[Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"]] = None


class SelectorRequirement(Settings):
    key: StrictStr = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] = Field(default_factory=list)


class LabelSelector(Settings):
    """A Kubernetes label selector (ClusterQueue ``namespaceSelector``); ``{}`` matches everything."""

    matchLabels: dict[str, StrictStr] = Field(default_factory=dict)
    matchExpressions: list[SelectorRequirement] = Field(default_factory=list)


class Taint(Settings):
    key: StrictStr = Field(min_length=1)
    value: StrictStr = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(Settings):
    key: StrictStr = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: StrictStr = ""
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None


class ResourceFlavor(Settings):
    """ResourceFlavor ``spec``: the taints of its nodes and the tolerations it adds to pods."""

    nodeTaints: list[Taint] = Field(default_factory=list)
    tolerations: list[Toleration] = Field(default_factory=list)


class FlavorResource(Settings):
    name: StrictStr = Field(min_length=1)
    nominalQuota: Quantity = 0
    borrowingLimit: Optional[Quantity] = None
    lendingLimit: Optional[Quantity] = None


class Flavor(Settings):
    name: StrictStr = Field(min_length=1)
    resources: list[FlavorResource] = Field(default_factory=list)


class ResourceGroup(Settings):
    coveredResources: list[StrictStr] = Field(default_factory=list)
    flavors: list[Flavor] = Field(default_factory=list)


class FairSharing(Settings):
    """Kueue Configuration ``fairSharing``; present (and not ``enable: false``) turns fair sharing on."""

    enable: Optional[Flag] = None
    preemptionStrategies: Optional[list[Strategy]] = None

    @field_validator("preemptionStrategies")
    @classmethod
    def _allowed(cls, v: list[str] | None) -> list[str] | None:
        if v and list(v) not in _ALLOWED_STRATEGIES:
            raise ValueError(f"{v!r} is not one of Kueue's allowed lists {list(_ALLOWED_STRATEGIES)}")
        return v


def _fair_sharing_flag(v: Any) -> Any:
    """``fairSharing: true/false`` is a shorthand for ``{}`` / ``{enable: false}``."""
    return {"enable": False} if v is False else {} if v is True else v


class KueueSettings(ModelSettings):
    """``preemption.settings`` for ``model: kueue``."""

    fairSharing: Annotated[Optional[FairSharing], BeforeValidator(_fair_sharing_flag)] = None
    defaultPreemption: Optional[Preemption] = None
    priorityClasses: dict[str, StrictInt] = Field(default_factory=dict)
    prioritizePreemptorWorkloads: Flag = True
    flavorLabel: StrictStr = "flavor"
    defaultFlavor: StrictStr = "default"
    resourceFlavors: dict[str, ResourceFlavor] = Field(default_factory=dict)
    namespaces: dict[str, dict[str, StrictStr]] = Field(default_factory=dict)  # namespace -> labels


class KueueQueueSettings(Settings):
    """``queues.<q>.settings``: a leaf queue is a ClusterQueue, an inner one a Cohort, unless ``kind`` says."""

    kind: Optional[Literal["ClusterQueue", "Cohort"]] = None
    resourceGroups: Optional[list[ResourceGroup]] = None
    preemption: Optional[Preemption] = None
    flavorFungibility: Optional[FlavorFungibility] = None
    queueingStrategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    namespaceSelector: Optional[LabelSelector] = None
    localQueues: list[StrictStr] = Field(default_factory=list)


class KueueWorkloadSettings(Settings):
    """Workload ``settings`` in a trace."""

    priorityClassName: Optional[StrictStr] = None
    namespace: StrictStr = "default"
    tolerations: list[Toleration] = Field(default_factory=list)
