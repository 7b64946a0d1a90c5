"""Named crash points, for fault tests: ``MAKEWAY_CRASH_AT=<name>`` makes the process exit at once
(``os._exit``, no cleanup, as kill -9 would) the first time it reaches that point.

Points: ``event-commit`` (an input is committed, its answer not yet sent), ``pass-commit`` (a pass is
committed, its desired sets not yet published), ``spawn`` (an agent started a task's supervisor, the
start not yet reported), ``exit`` (a task ended, its supervisor has not yet recorded the exit).
``MAKEWAY_CRASH_MARK=<file>``: crash only if the file does not exist, and create it first, so a
restarted process with the same environment runs on.
"""

from __future__ import annotations

import os
import sys

POINTS = ("event-commit", "pass-commit", "spawn", "exit")
EXIT_CODE = 86


def crash_point(name: str) -> None:
    if os.environ.get("MAKEWAY_CRASH_AT") != name:
        return
    mark = os.environ.get("MAKEWAY_CRASH_MARK")
    if mark:
        try:
            fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
    sys.stderr.write(f"makeway: crash point {name} reached (MAKEWAY_CRASH_AT)\n")
    sys.stderr.flush()
    os._exit(EXIT_CODE)
