"""Kueue's classic admission and preemption compiled with numba (``makeway[fast]``), for the runs
``pack.unsupported`` accepts; the Python model (``policies.kueue.model``) is the reference."""
