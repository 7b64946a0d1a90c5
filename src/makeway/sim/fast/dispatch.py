"""Which runs the struct-of-arrays core takes (``why_not``), and handing them to it.

The core reproduces the first-fit model exactly only where that model's pass is a plain greedy
walk whose inputs change in two ways: a submission, and a release. Anything else that can move a
decision (a queue ``max``, a config event, a cordoned node, heartbeats or ticks, a preemption) or
that asks for more than the results document (``record_starts``, ``check_invariants``) sends the
run to the general engine, which stays the reference.
"""

from __future__ import annotations

import functools
from typing import Any

ENGINES = ("auto", "general", "fast")


def why_not(state: Any, model: Any, options: Any, has_changes: bool) -> str | None:
    """None when the fast core can run this simulation; else the first reason it cannot."""
    if getattr(options, "engine", "auto") == "general":
        return "the general engine was asked for"
    if core_for(model) is None:
        return f"model {model.name!r} has no fast core (first-fit, and fifo-strict with first-fit placement, do)"
    if options.record_starts or options.check_invariants:
        return "record_starts/check_invariants read the general engine's state"
    if options.heartbeat_period or model.heartbeat_period or model.tick_period:
        return "heartbeats or ticks"
    if has_changes:
        return "config events"
    if not state.resources:
        return "no resources declared"
    if state.workloads or state.allocations or state.pending:
        return "the state is not empty"
    if any(not n.schedulable for n in state.nodes.values()):
        return "a node is cordoned"
    if any(q.max for q in state.queues.values()):
        return "a queue has a max"
    return None


def core_for(model: Any) -> Any:
    """The fast simulation class for this model, or None."""
    from makeway.policies.first_fit.model import PriorityFirstFit
    from makeway.policies.hpc.model import StrictFifo

    if type(model) is PriorityFirstFit:
        from makeway.sim.fast.core import FastSimulation

        return _compiled_or(FastSimulation)
    if type(model) is StrictFifo and model.placement == "first-fit":
        from makeway.sim.fast.strict import FastStrictFifo

        return _compiled_or(FastStrictFifo)
    return None


def _compiled_or(pure: Any) -> Any:
    """The compiled loop (``fast.compiled``) when numba is there and allowed, else ``pure``."""
    from makeway.sim.fast.compiled import CompiledSimulation, enabled

    if not enabled():
        return pure
    return functools.partial(CompiledSimulation, pure=pure)


def eligible(state: Any, model: Any, options: Any, has_changes: bool = False) -> bool:
    return why_not(state, model, options, has_changes) is None
