"""A struct-of-arrays event core for the models that never preempt and place greedily.

``makeway.sim.engine.simulate`` hands a run here when the model is the first-fit one (``none``,
``first-fit``, ``fifo``) and nothing in the run needs the general engine (``fast.eligible`` says
what). Workloads become integer indexes into parallel lists, nodes' free capacity lives in one max
segment tree per resource, the backlog is one heap per request shape, and the recorder adds into
lists: the same decisions and the same results document as the general engine, at a fraction of
its cost per job. ``SimOptions.engine = "general"`` (``simulation.engine`` in a config) forces the
reference path.

Where numba is installed (``makeway[fast]``), quantities are integers and the run has at least
``CompiledSimulation.MIN_JOBS`` workloads, the loop runs compiled (``compiled.py`` packs the arrays,
``loop.py``/``kernel.py`` are the loop, ``aot.py`` builds it once into a cached extension module);
otherwise the pure-Python core (``core.py``, ``strict.py``) runs. ``MAKEWAY_JIT=0`` forces the pure
one. Both give the general engine's results document, byte for byte.
"""

import os as _os

from makeway.jitcache import by_package as _by_package

_by_package(_os.path.dirname(__file__))  # the jit loop (no AOT build) inlines the kernel: any edit recompiles it

from makeway.sim.fast.dispatch import eligible, why_not  # noqa: E402

__all__ = ["eligible", "why_not"]
