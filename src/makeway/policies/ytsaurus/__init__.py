"""YTsaurus pool-tree scheduling: vector fair share, starvation, preemptible classes, heartbeats."""

from __future__ import annotations


def __getattr__(name: str):
    if name == "YTsaurusModel":
        from makeway.policies.ytsaurus.model import YTsaurusModel
        return YTsaurusModel
    raise AttributeError(name)


__all__ = ["YTsaurusModel"]
