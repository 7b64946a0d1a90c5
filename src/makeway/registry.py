"""The one registry of models: name -> policy class, settings classes, conformance loaders, importer.

A model is one package under ``policies/`` plus one entry here (``docs/adding-a-model.md``). Entries
name their parts as ``"module:attribute"`` strings imported on first use, so importing the registry
stays light and one broken model never hides the others. Several names may share an entry (aliases:
``none``, ``first-fit`` and ``fifo`` are one model); a model's settings then belong to the entry, not
the name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from makeway.core.policy import PreemptionModel


@dataclass(frozen=True)
class Entry:
    policy: str
    """The ``PreemptionModel`` subclass, ``"module:Class"``."""
    settings: tuple[str, str, str]
    """Settings classes for ``preemption.settings``, a queue's ``settings`` and a workload's ``settings``."""
    doc: str
    """Its page under ``docs/models/``."""
    cases: Mapping[str, str] = field(default_factory=dict)
    """Conformance case ``model`` field -> loader ``"module:run_case"`` (``makeway conformance``)."""
    importer: str | None = None
    """``"module:import_files"`` converting native config files into a makeway config (``makeway import``)."""


_NO = "makeway.policies.hpc.settings:NoSettings"
_FIRST_FIT = Entry("makeway.policies.first_fit.model:PriorityFirstFit",
                   ("makeway.policies.first_fit.settings:FirstFitSettings", _NO, _NO), "hpc.md")
_BATCH = ("makeway.policies.hpc.settings:BatchSettings", _NO, _NO)

MODELS: dict[str, Entry] = {
    "none": _FIRST_FIT,
    # greedy first fit by priority then submit time: a later job that fits starts before an earlier
    # one that does not, so it is not FCFS (that is `fifo-strict`); `fifo` is its old name
    "first-fit": _FIRST_FIT,
    "fifo": _FIRST_FIT,
    "kueue": Entry(
        "makeway.policies.kueue:KueueModel",
        ("makeway.policies.kueue.settings:KueueSettings", "makeway.policies.kueue.settings:KueueQueueSettings",
         "makeway.policies.kueue.settings:KueueWorkloadSettings"),
        "kueue.md",
        {"kueue-classic": "makeway.conformance.kueue:run_case",
         "kueue-fair-sharing": "makeway.conformance.kueue:run_case",
         "kueue-cycle": "makeway.conformance.kueue_cycle:run_case"},
        "makeway.adapters.kueue:import_files"),
    "yunikorn": Entry(
        "makeway.policies.yunikorn.model:YuniKornModel",
        ("makeway.policies.yunikorn.settings:YuniKornSettings",
         "makeway.policies.yunikorn.settings:YuniKornQueueSettings",
         "makeway.policies.yunikorn.settings:YuniKornWorkloadSettings"),
        "yunikorn.md",
        {"yunikorn-resources": "makeway.conformance.yunikorn_resources:run_case",
         "yunikorn-preemption": "makeway.conformance.yunikorn_preemption:run_case",
         "yunikorn-quota-change": "makeway.conformance.yunikorn_quota:run_case"},
        "makeway.adapters.yunikorn:import_files"),
    "ytsaurus": Entry(
        "makeway.policies.ytsaurus:YTsaurusModel",
        ("makeway.policies.ytsaurus.settings:YTsaurusSettings",
         "makeway.policies.ytsaurus.settings:YTsaurusQueueSettings",
         "makeway.policies.ytsaurus.settings:YTsaurusWorkloadSettings"),
        "ytsaurus.md",
        {"ytsaurus-fair-share": "makeway.conformance.ytsaurus:run_case",
         "ytsaurus-starvation": "makeway.conformance.ytsaurus:run_case",
         "ytsaurus-preemption": "makeway.conformance.ytsaurus:run_case"},
        "makeway.adapters.ytsaurus:import_files"),
    "symphony": Entry(
        "makeway.policies.symphony.model:SymphonyModel",
        ("makeway.policies.symphony.settings:SymphonySettings",
         "makeway.policies.symphony.settings:SymphonyQueueSettings",
         "makeway.policies.symphony.settings:SymphonyWorkloadSettings"),
        "symphony.md",
        {"symphony-rank": "makeway.conformance.symphony:run_case"},
        "makeway.adapters.symphony:import_files"),
    "fifo-strict": Entry("makeway.policies.hpc.model:StrictFifo", _BATCH, "hpc.md"),
    "easy-backfill": Entry("makeway.policies.hpc.model:EasyBackfill", _BATCH, "hpc.md"),
}


def resolve(target: str) -> Any:
    """The attribute a ``"module:attribute"`` string names (imports the module)."""
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)


def entries() -> list[Entry]:
    """Each model once (aliases folded), in registry order."""
    return list({id(e): e for e in MODELS.values()}.values())


def entry(name: str) -> Entry:
    found = MODELS.get(name)
    if found is None:
        raise KeyError(f"unknown preemption model {name!r} (known: {', '.join(sorted(MODELS))})")
    return found


def load_model(name: str, settings: Mapping[str, Any] | None = None) -> PreemptionModel:
    """A fresh policy object of model ``name`` with its ``preemption.settings``."""
    return resolve(entry(name).policy)(settings)


def case_loader(case_model: str) -> Callable[[dict], Any] | None:
    """The loader of a conformance case's ``model`` field, or None when no model claims it."""
    for e in entries():
        target = e.cases.get(case_model)
        if target is not None:
            return resolve(target)
    return None


def case_models() -> list[str]:
    return [c for e in entries() for c in e.cases]


def importers() -> dict[str, str]:
    """``makeway import`` kind (the model's name) -> importer target."""
    return {name: e.importer for name, e in MODELS.items() if e.importer is not None}
