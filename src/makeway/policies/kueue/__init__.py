"""Kueue: quota tree of ClusterQueues and Cohorts, classic and fair-sharing preemption."""

from makeway.policies.kueue.model import KueueModel

__all__ = ["KueueModel"]
