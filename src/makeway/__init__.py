"""makeway: a preemptive, multi-tenant cluster scheduler with five preemption models on one core."""

__version__ = "0.1.0"
