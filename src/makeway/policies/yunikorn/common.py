"""YuniKorn's partition view: queues with properties, nodes, allocations and asks, plus Go-faithful sorting.

The preemptors (ask-triggered and required-node) work on this view rather than on ``ClusterState``
directly, so the conformance loader (built from YuniKorn unit-test fixtures) and the simulator model
(built from the cluster state) drive exactly the same code. Times are integer microseconds so that
"newer first" and "clock hour" orderings are exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence, TypeVar

from makeway.core.resources import Res, add, add_into
from makeway.policies.yunikorn.resources import component_wise_min

DEFAULT_PREEMPTION_DELAY_US = 30_000_000
PREEMPT_ATTEMPT_FREQUENCY_US = 15_000_000
MAX_PREEMPTION_ATTEMPTS = 10
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

POLICY_DEFAULT = "default"
POLICY_FENCE = "fence"
POLICY_DISABLED = "disabled"

_DURATION_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
_GO_INT = re.compile(r"[+-]?[0-9]+")
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration_us(text: object) -> int | None:
    """A Go ``time.ParseDuration`` string in microseconds; None when it cannot be read."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return int(round(float(text) * 1e6))
    if not isinstance(text, str):
        return None
    s = text  # Go's ParseDuration trims nothing: " 5s" is an error there, so here too
    if not s:
        return None
    sign = 1
    if s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m:
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * int(round(total))


@dataclass(slots=True, frozen=True)
class QueueProps:
    """The preemption-related queue properties after YuniKorn's parsing and inheritance rules."""

    preemption_policy: str = POLICY_DEFAULT
    preemption_delay_us: int = DEFAULT_PREEMPTION_DELAY_US
    priority_fence: bool = False
    priority_offset: int = 0


def _policy(value: object) -> str:
    v = str(value or "").lower()  # Go lower-cases and trims nothing
    return v if v in (POLICY_FENCE, POLICY_DISABLED) else POLICY_DEFAULT


def _go_int32(text: str) -> int:
    """Go's ``strconv.ParseInt(s, 10, 32)`` as YuniKorn uses it: a syntax error gives 0, an
    out-of-range value the nearest int32 (Python's ``int`` would also accept spaces and ``1_000``)."""
    if not _GO_INT.fullmatch(text):
        return 0
    return max(INT32_MIN, min(INT32_MAX, int(text)))


def resolve_props(own: Mapping[str, object] | None, parent_raw: Mapping[str, object] | None,
                  parent: QueueProps | None) -> tuple[QueueProps, dict[str, object]]:
    """Effective properties of a queue and the raw property map its children inherit from.

    Only ``disabled`` preemption policy propagates to children; ``preemption.delay`` reaches
    children through the merged raw map (not filtered); priority settings are never inherited.
    """
    own = dict(own or {})
    merged: dict[str, object] = dict(parent_raw or {})
    merged.pop("priority.policy", None)
    merged.pop("priority.offset", None)
    merged.pop("preemption.policy", None)
    merged.update(own)
    policy = _policy(own.get("preemption.policy"))
    if "preemption.policy" not in own and parent is not None and parent.preemption_policy == POLICY_DISABLED:
        policy = POLICY_DISABLED
    if parent is not None and parent.preemption_policy == POLICY_DISABLED and policy != POLICY_DISABLED \
            and "preemption.policy" not in own:
        policy = POLICY_DISABLED
    delay = parse_go_duration_us(merged.get("preemption.delay")) if "preemption.delay" in merged else None
    if delay is None or delay <= 0:
        delay = DEFAULT_PREEMPTION_DELAY_US
    offset = _go_int32(str(own.get("priority.offset", "0")))
    fence = str(own.get("priority.policy", "")).lower() == POLICY_FENCE
    if policy == POLICY_DISABLED:
        merged["preemption.policy"] = POLICY_DISABLED
    return QueueProps(policy, delay, fence, offset), merged


@dataclass(slots=True)
class YQueue:
    path: str
    parent: str | None
    guaranteed: Res | None = None
    max: Res | None = None
    allocated: Res = field(default_factory=dict)
    preempting: Res = field(default_factory=dict)
    props: QueueProps = field(default_factory=QueueProps)
    leaf: bool = True
    children: list[str] = field(default_factory=list)


@dataclass(slots=True)
class YAlloc:
    """A running allocation as the preemptors see it."""

    key: str
    app: str
    queue: str
    node: str
    resources: Res
    priority: int = 0
    create_us: int = 0
    originator: bool = False
    allow_preemption: bool = True
    required_node: str = ""
    released: bool = False
    preempted: bool = False
    tracked: bool = True
    released_during_preemption: bool = False
    # the resource types whose value is not an int, found on first use (``shortcuts``)
    nonint: frozenset | None = field(default=None, compare=False, repr=False)

    def nonint_types(self) -> frozenset:
        if self.nonint is None:
            self.nonint = frozenset(k for k, v in (self.resources or {}).items() if type(v) is not int)
        return self.nonint


@dataclass(slots=True)
class YAsk:
    key: str
    app: str
    queue: str
    resources: Res
    priority: int = 0
    create_us: int = 0
    allow_preempt_other: bool = True
    allow_preemption: bool = True
    originator: bool = False
    required_node: str = ""
    triggered_preemption: bool = False
    last_check_us: int | None = None
    # the allocation log: message -> times logged, in first-seen order (YuniKorn keeps one entry per
    # message with a count, so a long wait does not grow it with every attempt)
    log: dict[str, int] = field(default_factory=dict)
    # the fast pass's last failed attempt: (world it was made in, log counts it added)
    failed: tuple | None = None


def log_failure(ask: YAsk, *messages: str) -> None:
    """Log ``messages`` on the ask, in order (``YAsk.log``)."""
    log = ask.log
    for m in messages:
        log[m] = log.get(m, 0) + 1


@dataclass(slots=True)
class YNode:
    id: str
    capacity: Res
    used: Res = field(default_factory=dict)
    schedulable: bool = True
    reserved_for: str | None = None

    @property
    def free(self) -> Res:
        return free_of(self.capacity, self.used)


def exact(x: float) -> float:
    """A float difference or sum rounded to 9 decimals, as the core rounds its running totals.

    YuniKorn counts in integers (millicores, bytes); without this, 0.3 - 0.2 cpu of headroom is
    0.09999999999999998 and a 100m pod would not fit where YuniKorn places it.
    """
    return round(x, 9) if type(x) is float else x


def free_of(capacity: Res, used: Res) -> Res:
    out = dict(capacity)
    for k, v in used.items():
        out[k] = exact(out.get(k, 0) - v)
    return out


def plus(used: Res, res: Res) -> Res:
    """Node usage after one more allocation (a new dict: views may share the old one)."""
    return {**used, **{k: exact(used.get(k, 0) + v) for k, v in res.items()}}


class Partition:
    """Queues (by path, parents before children), nodes (in iteration order) and allocations."""

    shortcuts = True  # False: the preemptor's reference path (the model's ``caches: false``)

    def __init__(self, queues: Sequence[YQueue], nodes: Sequence[YNode], allocations: Sequence[YAlloc]):
        self.queues: dict[str, YQueue] = {q.path: q for q in queues}
        for q in self.queues.values():
            q.children = []
        for q in self.queues.values():
            if q.parent is not None:
                self.queues[q.parent].children.append(q.path)
                self.queues[q.parent].leaf = False
        self.nodes: dict[str, YNode] = {n.id: n for n in nodes}
        self.allocs: dict[str, YAlloc] = {a.key: a for a in allocations}
        self.root_max: Res | None = None
        self.events: list[dict] = []  # what YuniKorn's event system would have received (``events``)
        self.sorted_names: list[str] | None = None  # node ids in name order, made on first use

    def names_in_order(self) -> list[str]:
        """Node ids in name order: the order the preemptor's node search tries them."""
        if self.sorted_names is None:
            self.sorted_names = sorted(self.nodes)
        return self.sorted_names

    def ancestors(self, path: str) -> list[str]:
        out, cur = [], path
        while cur is not None:
            out.append(cur)
            cur = self.queues[cur].parent
        return out

    def add_usage(self, queue: str, res: Res, sign: int = 1) -> None:
        for q in self.ancestors(queue):
            add_into(self.queues[q].allocated, res, sign)

    def add_preempting(self, queue: str, res: Res, sign: int = 1) -> None:
        for q in self.ancestors(queue):
            add_into(self.queues[q].preempting, res, sign)

    def cluster_size(self) -> Res:
        out: Res = {}
        for n in self.nodes.values():
            add_into(out, n.capacity)
        return out

    def own_max(self, path: str) -> Res | None:
        q = self.queues[path]
        if q.parent is None and q.max is None:
            return self.root_max if self.root_max is not None else self.cluster_size()
        return q.max

    def effective_max(self, path: str) -> Res | None:
        """ComponentWiseMin of the maxes from the root down (union: limited anywhere = limited here)."""
        out: Res | None = None
        for q in reversed(self.ancestors(path)):
            out = component_wise_min(out, self.own_max(q))
        return out

    def leaf_allocs(self, path: str) -> list[YAlloc]:
        return [a for a in self.allocs.values() if a.queue == path and a.tracked]

    def node_allocs(self, node: str) -> list[YAlloc]:
        return [a for a in self.allocs.values() if a.node == node and a.tracked]

    def headroom(self, path: str) -> Res | None:
        """Minimum over the queue and its ancestors of max - usage, with only the max's types."""
        out: Res | None = None
        for q in self.ancestors(path):
            m = self.own_max(q)
            if m is None:
                continue
            room = {k: exact(v - self.queues[q].allocated.get(k, 0)) for k, v in m.items()}
            out = component_wise_min(out, room)
        return out


T = TypeVar("T")


def go_slice_stable(items: Sequence[T], less: Callable[[T, T], bool]) -> list[T]:
    """Go's ``sort.SliceStable``: insertion sort on blocks of 20, then SymMerge passes.

    Reproduced exactly because two of YuniKorn's comparators answer "less" on full ties, and with
    this algorithm equal runs then come out reversed, which a key-based sort would not do.
    """
    data = list(items)
    n = len(data)

    def insertion(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and less(data[j], data[j - 1]):
                data[j], data[j - 1] = data[j - 1], data[j]
                j -= 1

    def rotate(a: int, m: int, b: int) -> None:
        data[a:b] = data[m:b] + data[a:m]

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if less(data[h], data[a]):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                data[k], data[k + 1] = data[k + 1], data[k]
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not less(data[m], data[h]):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                data[k], data[k - 1] = data[k - 1], data[k]
            return
        mid = (a + b) >> 1
        nn = mid + m
        if m > mid:
            start, r = nn - b, mid
        else:
            start, r = a, m
        p = nn - 1
        while start < r:
            c = (start + r) >> 1
            if not less(data[p - c], data[c]):
                start = c + 1
            else:
                r = c
        end = nn - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    block = 20
    a, b = 0, block
    while b <= n:
        insertion(a, b)
        a, b = b, b + block
    insertion(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        if a + block < n:
            sym_merge(a, a + block, n)
        block *= 2
    return data


__all__ = ["Partition", "YQueue", "YAlloc", "YAsk", "YNode", "QueueProps", "resolve_props", "exact", "free_of", "plus",
           "parse_go_duration_us", "go_slice_stable", "add", "log_failure"]


def sort_allocations_based_on_ask(allocs: Sequence[YAlloc], total: Res | None, ask: Res | None) -> list[YAlloc]:
    """Quota-preemption victim order (SEMANTICS §4.6), ties answered "less" as YuniKorn does."""
    from makeway.policies.yunikorn.resources import comp_usage_ratio_specific_types, type_matching

    types = None if ask is None else list(ask)

    def score(a: YAlloc) -> int:
        return (1 << 33 if a.originator else 0) + (1 << 34 if not a.allow_preemption else 0) \
            + type_matching(a.resources, ask)

    def hour(a: YAlloc) -> int:
        return (a.create_us // 3_600_000_000) % 24

    def less(l: YAlloc, r: YAlloc) -> bool:
        sl, sr = score(l), score(r)
        if sl != sr:
            return sl > sr
        if l.priority != r.priority:
            return l.priority < r.priority
        if hour(l) != hour(r):
            return hour(l) > hour(r)
        return comp_usage_ratio_specific_types(l.resources, r.resources, total, types) <= 0

    return go_slice_stable(allocs, less)
