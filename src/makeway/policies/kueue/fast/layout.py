"""Column numbers of the arrays the compiled Kueue run shares between ``pack`` and the kernels.

``TI`` holds one row per node of the quota forest (cohorts and ClusterQueues) on the one
flavor-resource the run manages; ``WI`` one row per workload.
"""

# TI: the quota forest on one flavor-resource (Kueue units)
PAR, SUB, LQ, BL, HASBL, NOM, HEIGHT, ROOT, ISCQ, WITHIN, RECLAIM, BW_ALLOWED, BW_NOT_NEVER, HASTH, TH = range(15)
NTI = 15

# preemption policies (``quota.Policy`` strings)
P_NEVER, P_LOWER, P_LOWER_OR_NEWER, P_ANY, P_OTHER = range(5)

# WI: per workload
W_CQ, W_PRIO, W_RANK, W_CNT, W_QV, W_KEY, W_STATE, W_WAIT, W_PARK, W_GEN, W_TOFF = range(11)
# the no-progress watch (``sim.progress.NoProgressWatch``), per workload: ever evicted, times
# preempted since the last progress (0: not a victim now), pods preempted for it, and whether
# it is on the watch's list of workloads to forget at the next progress
W_EVER, W_VN, W_PCNT, W_TOUCH = range(11, 15)
NWI = 15

# workload states
UNSEEN, PENDING, RUNNING, DONE = range(4)

# parked kinds (``parked.QUOTA``/``parked.NODE``)
UNPARKED, QUOTA, NODE = range(3)

# preemption variants (``preemption.WITHIN_CQ``...)
WITHIN_CQ, HIERARCHICAL, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(4)

# flavor assignment modes
NOFIT, PREEMPT, FIT = range(3)

# the decision log; ``L_UNWAIT``: a waiting preemptor found no targets and waits no more (the
# model's ``_waiting`` entry dropped; the replay keeps it as the model does, the queue order reads it)
L_START, L_PREEMPT, L_UNWAIT = range(3)

# IS: the run's scalars
(I_NV, I_GV, I_CHANGED, I_FREED, I_NLOG, I_NLN, I_SEQ, I_HN, I_NSUB, I_CALLS, I_PRIO_PRE, I_NVA, I_NSL,
 I_NVICT, I_FULL, I_EVALS, I_SKIPPED, I_WPRE, I_NTOUCH, I_PRE_NOW, I_STOP, I_CHECK, I_BAD, I_NEV, I_NED, NIS) = range(26)

# the watch's floats: since, cycling since (NaN: not cycling), the longest gap between two
# preemptions of one victim, the time the run was stopped at
X_SINCE, X_CYCLING, X_PERIOD, X_STOPPED = range(4)
