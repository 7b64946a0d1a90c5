"""Large arrays go back to the system when freed, so a run's peak memory is what it holds.

glibc's malloc serves a request above its mmap threshold (128 KiB at start) with a mapping of its
own, unmapped on free; but every such free raises the threshold to the freed size (up to 32 MiB),
and from then on arrays of that size come from the heap, where a freed one leaves a hole that a
larger one cannot reuse. A run grows arrays, reads the log in pieces and makes numpy temporaries of
every size: on the LANL log with one node per processor those holes were a fifth of the peak
(151 MiB against 118 MiB with it held at 4 MiB). ``hold()`` sets the threshold explicitly, which
also stops glibc moving it; elsewhere (not glibc, no ctypes) it does nothing.
"""

from __future__ import annotations

import sys

THRESHOLD = 4 << 20  # above it, a request is its own mapping (lower: more page faults, ~0.4 s of system CPU on LANL)
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_held: list[bool] = []


def hold() -> bool:
    """Fix glibc's mmap threshold at ``THRESHOLD`` for this process (tried once); whether it is set."""
    if not _held:
        _held.append(_set())
    return _held[0]


def _set() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
        return bool(mallopt(_M_MMAP_THRESHOLD, THRESHOLD))
    except (ImportError, OSError, AttributeError):
        return False


__all__ = ["THRESHOLD", "hold"]
