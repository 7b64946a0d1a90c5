"""Tell which scheduler a native config file belongs to, so an importer given the wrong kind says so.

Every importer is lenient about what it skips (a Kubernetes manifest stream holds many kinds), so
without this a YuniKorn ``queues.yaml`` given to the Kueue importer became a placeholder cluster.
Only unmistakable signs count; a file showing none is left to the importer itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from makeway.config import parse_yaml_all
from makeway.errors import ConfigError

_XML = re.compile(r"^\s*(<\?xml|<!--|<Profile[\s>]|<[A-Za-z][\w:.-]*\s+xmlns)")
_YT_SCRIPT = re.compile(r"scheduler_pool|\bcreate_pool\s*\(|update_pool_tree_config|^\s*\|.*\bpool_name\b", re.M)


def _yaml_docs(text: str) -> list[Any]:
    try:
        return parse_yaml_all(text, "")
    except ConfigError:
        return []


def _kind_of_doc(doc: Any) -> tuple[str, str] | None:
    if not isinstance(doc, dict):
        return None
    api = str(doc.get("apiVersion", ""))
    kind = str(doc.get("kind", ""))
    if api.startswith(("kueue.x-k8s.io/", "config.kueue.x-k8s.io/")):
        return "kueue", f"Kueue manifests ({kind or 'apiVersion'} {api})"
    if "partitions" in doc:
        return "yunikorn", "YuniKorn queues.yaml (top-level 'partitions')"
    if kind == "ConfigMap":
        data = doc.get("data") if isinstance(doc.get("data"), dict) else {}
        if "queues.yaml" in data:
            return "yunikorn", "YuniKorn ConfigMap (data 'queues.yaml')"
        if any(isinstance(v, str) and "config.kueue.x-k8s.io/" in v for v in data.values()):
            return "kueue", "Kueue manager ConfigMap (a config.kueue.x-k8s.io Configuration)"
    if "resources" in doc and "nodes" in doc and "queues" in doc:
        return "makeway", "makeway cluster config (resources, nodes, queues)"
    return None


def sniff(path: Path) -> tuple[str, str] | None:
    """(kind, what the file looks like) for a file with an unmistakable sign, else None."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # the importer reports unreadable files in its own words
    if _XML.match(text):
        return "symphony", "XML file (a Symphony application profile is XML)"
    for doc in _yaml_docs(text):
        found = _kind_of_doc(doc)
        if found is not None:
            return found
    if _YT_SCRIPT.search(text):
        return "ytsaurus", "YTsaurus pool script or table"
    return None


def check_kind(kind: str, path: Path) -> None:
    """Refuse ``path`` for the ``kind`` importer when it clearly belongs to another scheduler."""
    found = sniff(path)
    if found is None or found[0] == kind:
        return
    other, what = found
    if other == "makeway":
        raise ConfigError(f"{path}: this looks like a {what}, not {kind} input; use it directly "
                          "(makeway simulate)")
    raise ConfigError(f"{path}: this looks like a {what}; use 'makeway import {other}' (not {kind})")
