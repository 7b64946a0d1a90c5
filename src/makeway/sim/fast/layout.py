"""Where the compiled loop keeps things: column numbers of its per-workload and per-shape rows, slots
of its scalar arrays, status and reason codes (``makeway.sim.fast.kernel`` and ``loop``). Kept apart
from the kernel so the driver (``compiled.py``) can lay out arrays without importing numba."""

# WI columns
Q, S, LEFT, TASKS, ORD, STATE, KILLC, PPREV, PNEXT, CUR, CHILD, SIB, TLAST, POFF, PNUM, KILL, BAD, RAW = range(18)
NWI = 18  # RAW: the driver's (its groups exactly as read), not the loop's
# WF columns
SUB, RUN, NEGP, FIRST, FIN = range(5)
NWF = 5
# SI columns
NG, GOFF, NOWHERE, SINGLE, FITS_EMPTY, FAILED_AT, ROOT, NEWMARK = range(8)
NSI = 8
# IS (integer scalars)
(NSUB, NLOAD, RELEASES, SEQ, EVENTS, FIN_N, NSTARTED, NFINISHED, TRAIL_N, NOTES_N, PHEAD, PTAIL, PCOUNT,
 ROUNDS, SINCE, RELEASED, FIFO, BLOCKED_W, BLOCKED_REL, STAMP, MORE, STOPPED, STRICT, ORDPTR, HEAD, RPD,
 NSHAPES, FRESH_LO, NSAMP, NPLACE, HAS_FIRST, FINAL) = range(32)
NIS = 32
# FS (float scalars)
NOW, LAST_T, END_T, FIRST_T, NEXT_ROUND, RINTERVAL, SINTERVAL, HORIZON = range(8)
NFS = 8
# status
DONE, NEED_INPUT, LOG_FULL, BAD_INPUT = range(4)
# reason codes
C_NOWHERE, C_GANG, C_PRIORITY, C_RESOURCES = range(4)
PAD = -(1 << 62)
