"""Kueue's classic admission and preemption compiled with numba (``makeway[fast]``), for the runs
``pack.unsupported`` accepts; the Python model (``policies.kueue.model``) is the reference."""

import os as _os

from makeway.jitcache import by_package as _by_package

_by_package(_os.path.dirname(__file__))  # the loop inlines the kernel: any edit here recompiles it
