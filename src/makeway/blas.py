"""numpy's OpenBLAS kept to one thread in makeway's own processes, never in the tasks they run.

makeway multiplies no matrices, but OpenBLAS starts a worker thread per core when numpy loads,
and each spins before it sleeps: about 0.1 s of CPU per command on a 2-core machine (a sixth of a
KTH replay). The command line asks for one thread before anything imports numpy, unless the user
chose a number, and marks that it did; a live task's environment (``live.supervisor.task_env``)
drops what makeway set, so a user's job gets the environment its submitter had.
"""

from __future__ import annotations

import os
from typing import MutableMapping

VAR = "OPENBLAS_NUM_THREADS"
MARK = "MAKEWAY_SET_OPENBLAS_THREADS"


def one_thread(environ: MutableMapping[str, str] = os.environ) -> None:
    """One OpenBLAS thread for this process and its makeway children, unless ``VAR`` is set."""
    if VAR not in environ:
        environ[VAR] = "1"
        environ[MARK] = "1"


def as_the_user_set_it(env: MutableMapping[str, str]) -> None:
    """Take out of ``env`` what ``one_thread`` set (a value the user set stays)."""
    if env.pop(MARK, None) is not None:
        env.pop(VAR, None)
