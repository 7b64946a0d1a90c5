"""YTsaurus settings: ``preemption.settings`` (the pool tree's options), ``queues.<q>.settings``
(pool attributes) and workload ``settings`` (operation spec). Names are YTsaurus's own snake_case
attributes; durations are seconds, as numbers or strings with units (``"5s"``, ``"500ms"``, ``"2m"``:
``durations``; ``makeway import ytsaurus`` converts YT's milliseconds); defaults
are SEMANTICS §7's. See ``docs/models/ytsaurus.md``.

A few camelCase pool keys (``fairShareStarvationTolerance``...) are the conformance cases' spelling
of the same attributes; the model reads both, so both are accepted.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BeforeValidator, Field, StrictStr

from makeway.policies.ytsaurus import durations

from makeway.policies.settings_common import Flag, Fraction, ModelSettings, NonNegative, Positive, Seconds, Settings


def _at_least_a_millisecond(v: float) -> float:
    if v < 0.001:
        raise ValueError(f"{v!r} is below 0.001 s (1 ms, YTsaurus's unit)")
    return v


Seconds = Annotated[Seconds, BeforeValidator(durations.seconds)]  # noqa: F811 (also "5s", "500ms", "2m")
Period = Annotated[Positive, BeforeValidator(durations.seconds), AfterValidator(_at_least_a_millisecond)]
Amounts = dict[str, Optional[NonNegative]]  # per resource, plain numbers (cpu cores, bytes, slots)


class IntegralTree(Settings):
    smooth_period: Seconds = 60.0
    pool_capacity_saturation_period: Seconds = 86400.0
    relaxed_share_multiplier_limit: NonNegative = 3.0


class IntegralPool(Settings):
    guarantee_type: Literal["none", "burst", "relaxed"] = "none"
    resource_flow: Optional[Amounts] = None
    burst_guarantee_resources: Optional[Amounts] = None


class YTsaurusSettings(ModelSettings):
    """``preemption.settings`` for ``model: ytsaurus``: the pool tree config."""

    fair_share_update_period: Period = 0.2
    heartbeat_period: Optional[Period] = Field(default=None, description="node heartbeat period (default 5)")
    heartbeat_splay: Optional[Seconds] = Field(default=None, description="heartbeat phase spread (default 1)")
    preemptive_scheduling_backoff: Seconds = 5.0
    preemption_satisfaction_threshold: NonNegative = 1.0
    aggressive_preemption_satisfaction_threshold: NonNegative = 0.2
    enable_preemption: Flag = True
    fair_share_starvation_timeout: Optional[Seconds] = 30.0
    fair_share_preemption_timeout: Optional[Seconds] = Field(default=None, description="legacy name of fair_share_starvation_timeout")
    fair_share_aggressive_starvation_timeout: Optional[Seconds] = 120.0
    fair_share_starvation_tolerance: Optional[Fraction] = 0.8
    enable_aggressive_starvation: Optional[Flag] = False
    enable_pool_starvation: Optional[Flag] = True
    allowAggressivePreemption: Flag = Field(default=True, description="the root pool's allow_aggressive_preemption")
    allow_aggressive_preemption_for_gang_operations: Flag = True
    allocation_count_preemption_timeout_coefficient: Optional[NonNegative] = 1.0
    job_count_preemption_timeout_coefficient: Optional[NonNegative] = Field(
        default=None, description="legacy name of allocation_count_preemption_timeout_coefficient")
    scheduling_preemption_priority_scope: Literal["operation_only", "operation_and_ancestors"] = "operation_and_ancestors"
    non_preemptible_resource_usage_threshold: Optional[Amounts] = None
    max_unpreemptible_running_allocation_count: Optional[NonNegative] = None
    max_unpreemptible_running_job_count: Optional[NonNegative] = Field(default=None, description="legacy name")
    max_unpreemptable_running_job_count: Optional[NonNegative] = Field(default=None, description="legacy name")
    allocation_preemption_timeout: Optional[Seconds] = Field(default=None, description="default: the workload's grace")
    allocation_graceful_preemption_timeout: Seconds = 60.0
    main_resource: StrictStr = "cpu"
    best_allocation_share: Flag = False
    fair_share_kernel: Flag = Field(default=False, description="the compiled fair share update (numba, "
                                    "makeway[fast]) for every tree size; agrees with the Python reference to EPS")
    fair_share_batch_min_pools: Annotated[int, Field(ge=1)] = Field(
        default=8, description="leaf pools per level from which the Python update computes them in arrays")
    fair_share_groups: Flag = Field(default=True, description="equal waiting operations of a pool computed "
                                    "as one group element (the same fair shares bit for bit)")
    fair_share_closed_form: Flag = Field(default=True, description="one-resource trees (fair share pools, no pool "
                                         "limits, no integral or promised guarantees) by water-filling "
                                         "(onedim) instead of the curves: exact, and at the cost of the distinct "
                                         "operations of each pool")
    integral_guarantees: IntegralTree = Field(default_factory=IntegralTree)


class YTsaurusQueueSettings(Settings):
    """``queues.<q>.settings``: pool attributes (weight, strong guarantee and limits are the queue's own fields)."""

    mode: Literal["fair_share", "fifo"] = "fair_share"
    fifo_sort_parameters: list[Literal["weight", "start_time", "pending_allocation_count"]] = Field(
        default_factory=lambda: ["weight", "start_time"])
    fair_share_starvation_tolerance: Optional[Fraction] = Field(default=None, description="default: the parent's")
    fairShareStarvationTolerance: Optional[Fraction] = None
    fair_share_starvation_timeout: Optional[Seconds] = Field(default=None, description="default: the parent's")
    fairShareStarvationTimeout: Optional[Seconds] = None
    fair_share_preemption_timeout: Optional[Seconds] = Field(default=None, description="legacy name")
    enable_aggressive_starvation: Optional[Flag] = Field(default=None, description="default: the parent's")
    enableAggressiveStarvation: Optional[Flag] = None
    allow_aggressive_preemption: Optional[Flag] = Field(default=None, description="default: the parent's")
    allowAggressivePreemption: Optional[Flag] = None
    allow_aggressive_starvation_preemption: Optional[Flag] = Field(default=None, description="legacy name")
    allow_normal_preemption: Optional[Flag] = True
    non_preemptible_resource_usage_threshold: Optional[Amounts] = Field(default=None, description="default: the tree's")
    integral_guarantees: Optional[IntegralPool] = None
    relaxed_share_multiplier_limit: Optional[NonNegative] = Field(default=None, description="default: the tree's")
    compute_promised_guarantee_fair_share: Flag = False
    max_operation_count: Optional[NonNegative] = Field(default=None, description="accepted, not simulated")
    max_running_operation_count: Optional[NonNegative] = Field(default=None, description="accepted, not simulated")
    forbid_immediate_operations: Optional[Flag] = Field(default=None, description="accepted, not simulated")
    create_ephemeral_subpools: Optional[Flag] = Field(default=None, description="accepted, not simulated")


class YTsaurusWorkloadSettings(Settings):
    """Workload ``settings`` in a trace: the operation's spec."""

    weight: Positive = 1.0
    gang: Flag = False
    resource_limits: Optional[Amounts] = None
    preemption_mode: Literal["normal", "graceful"] = "normal"
    allocation_preemption_timeout: Optional[Seconds] = Field(default=None, description="default: the tree's")
    allocation_graceful_preemption_timeout: Optional[Seconds] = Field(default=None, description="default: the tree's")
    fair_share_starvation_tolerance: Optional[Fraction] = Field(default=None, description="may only lower the pool's")
    fair_share_starvation_timeout: Optional[Seconds] = Field(default=None, description="may only lengthen the pool's")
    fair_share_preemption_timeout: Optional[Seconds] = Field(default=None, description="legacy name")
    non_preemptible_resource_usage_threshold: Optional[Amounts] = Field(default=None, description="may only lower the pool's")
