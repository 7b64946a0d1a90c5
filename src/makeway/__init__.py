"""makeway: a preemptive, multi-tenant cluster scheduler with five preemption models on one core.

The public API, for use as a library (imported on first use, so ``import makeway`` stays light)::

    import makeway
    rec = makeway.run_file("examples/quickstart.yaml")          # config + its trace -> Recorder
    print(rec.summary()["preemptions"])
    cfg = makeway.load_config("cluster.yaml")
    rec = makeway.run(cfg, "trace.jsonl", horizon=3600)          # any trace, any horizon
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "run": "makeway.sim.run", "run_file": "makeway.sim.run", "RunInterrupted": "makeway.sim.run",
    "load_config": "makeway.config", "parse_config": "makeway.config", "build_state": "makeway.config",
    "ClusterConfig": "makeway.config",
    "Simulation": "makeway.sim.engine", "SimOptions": "makeway.sim.engine", "simulate": "makeway.sim.engine",
    "Recorder": "makeway.sim.metrics",
    "ClusterState": "makeway.core.state",
    "Node": "makeway.core.objects", "Queue": "makeway.core.objects", "Workload": "makeway.core.objects",
    "TaskGroup": "makeway.core.objects",
    "Decision": "makeway.core.decisions", "Start": "makeway.core.decisions", "Preempt": "makeway.core.decisions",
    "Note": "makeway.core.decisions", "Reason": "makeway.core.decisions",
    "PreemptionModel": "makeway.core.policy", "load_model": "makeway.registry", "MODELS": "makeway.registry",
    "MakewayError": "makeway.errors", "ConfigError": "makeway.errors", "TraceError": "makeway.errors",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'makeway' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
