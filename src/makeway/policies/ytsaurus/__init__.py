"""YTsaurus pool-tree scheduling: vector fair share, starvation, preemptible classes, heartbeats."""

from __future__ import annotations

import os as _os

from makeway.jitcache import by_package as _by_package

# the fair share kernel (``kernel.py``) inlines ``kernel_plf``, ``kernel_closed`` and ``kernel_sweep``
_by_package(_os.path.dirname(__file__), prefix="kernel")


def __getattr__(name: str):
    if name == "YTsaurusModel":
        from makeway.policies.ytsaurus.model import YTsaurusModel
        return YTsaurusModel
    raise AttributeError(name)


__all__ = ["YTsaurusModel"]
