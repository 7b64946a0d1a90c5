"""Durations in YTsaurus settings: seconds as a number, or a string with units (``"5s"``, ``"500ms"``,
``"2m"``, ``"1h30m"``), so a config can say what it means; YTsaurus's own configs write
milliseconds, which ``makeway import ytsaurus`` converts.

The model reads settings as given (the config is only validated), so it converts them itself:
``normalize`` turns every duration of a settings block into seconds once, when the block is read.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
_KEY = re.compile(r"(_timeout|_backoff|_period|Timeout)$|^heartbeat_splay$")


def seconds(value: Any) -> Any:
    """``value`` in seconds when it is a duration string; anything else unchanged (numbers are
    seconds already; the settings validation reports other types)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    total, pos = 0.0, 0
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise ValueError(f"{value!r} is not a duration (seconds as a number, or e.g. '5s', '500ms', '2m', '1h30m')")
    return total


def normalize(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """A settings block with every duration (``*_timeout``, ``*_backoff``, ``*_period``,
    ``heartbeat_splay``, nested blocks too) in seconds."""
    out: dict[str, Any] = {}
    for k, v in (settings or {}).items():
        if isinstance(v, Mapping):
            out[k] = normalize(v)
        elif isinstance(v, str) and _KEY.search(k):
            out[k] = seconds(v)
        else:
            out[k] = v
    return out
