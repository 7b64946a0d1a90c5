"""The conformance runner: find case files, dispatch each on its ``model``, compare, report.

Loaders live in ``makeway.conformance.<module>`` and expose ``run_case(case: dict) -> CaseResult``;
the registry (``makeway.registry``, each model's ``cases``) says which loader answers which case
``model``. A case whose model has no loader is a failure, never a skip.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from makeway.conformance.result import CaseResult
from makeway.registry import case_loader

@dataclass(slots=True)
class Outcome:
    path: Path
    case_id: str
    result: CaseResult


def find_cases(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*.json") if q.is_file()))
        else:
            found.append(p)
    return sorted(dict.fromkeys(found))


def run_file(path: Path) -> Outcome:
    try:
        case = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return Outcome(path, str(path), CaseResult(False, None, None, f"unreadable case: {exc}"))
    case_id = str(case.get("id", path.stem)) if isinstance(case, dict) else str(path)
    if not isinstance(case, dict):
        return Outcome(path, case_id, CaseResult(False, None, None, "case is not a JSON object"))
    model = case.get("model")
    try:
        loader = case_loader(str(model))
    except Exception as exc:  # a model whose module is broken fails its cases, not the run
        return Outcome(path, case_id, CaseResult(False, None, None, f"loader for {model!r} failed to import: {exc}"))
    if loader is None:
        return Outcome(path, case_id, CaseResult(False, None, None, f"unknown model {model!r}"))
    try:
        result = loader(case)
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(path, case_id, CaseResult(False, case.get("expected"), None,
                                                 f"error: {type(exc).__name__}: {exc} at {tb.filename}:{tb.lineno}"))
    return Outcome(path, case_id, result)


def run(paths: Iterable[Path]) -> list[Outcome]:
    return [run_file(p) for p in find_cases(paths)]
