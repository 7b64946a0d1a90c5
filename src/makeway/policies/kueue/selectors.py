"""Kubernetes matching rules Kueue applies before flavor assignment: a ClusterQueue's
``namespaceSelector`` against the workload's namespace labels, and a flavor's node taints against
the pods' tolerations (plus the flavor's own)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector; ``{}`` matches everything, a null selector nothing (``LabelSelectorAsSelector``)."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for ex in selector.get("matchExpressions") or []:
        key, op, values = ex["key"], ex["operator"], list(ex.get("values") or [])
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError(f"namespaceSelector.matchExpressions.operator: {op!r} is not In/NotIn/Exists/DoesNotExist")
        if not ok:
            return False
    return True


def untolerated(taints: Sequence[Mapping[str, Any]],
                tolerations: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates (``FindMatchingUntoleratedTaint``)."""
    for t in taints:
        if t.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(tol, t) for tol in tolerations):
            return t
    return None


def tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    if key and key != taint.get("key"):
        return False
    if (tol.get("operator") or "Equal") == "Exists":
        return True
    return key == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")
