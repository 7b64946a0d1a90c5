"""What the compiled YuniKorn loop (``fast.loop``) hands to what records its results
(``sim.fast.yunikorn_record``): the decision log's codes and columns.

One row of ``LOG`` (int64, ``NLOG_COLS`` columns) per decision, in the order the model makes
them within a call; ``LT`` (float64) holds the instant of the row's call. Tasks are numbered in
the packed trace's workload order and, within a workload, in task-id order (``Packed.TOFF``,
``TW``, ``T_IX``); nodes by their index in the state's node order.

* ``L_START``: task ``A`` starts on node ``B`` (``Start``);
* ``L_PREEMPT``: running task ``A`` is preempted for the ask ``B``, which reserves node ``C``
  (``Preempt`` with rule ``inter-queue-preemption``); the ask's reservation is set by its first
  such row and is cleared by its start or by ``L_UNRESERVE``;
* ``L_UNRESERVE``: the ask ``A``'s reservation timed out (``_drop_stale`` at a call's start).

Column ``CALL`` numbers the model's ``schedule`` calls from 1. ``CT[k-1]`` is call ``k``'s
instant and ``WK[k-1]`` what ``next_wakeup`` answers after it (NaN for None).
"""

L_START, L_PREEMPT, L_UNRESERVE = range(3)
C_KIND, C_A, C_B, C_C, C_CALL = range(5)
NLOG_COLS = 5

RULE = "inter-queue-preemption"

# ``pack.run(state, model, workloads, horizon, window) -> Packed``, what the recording reads of it:
#   wls (the workloads, in submit order), TW/TOFF/NT/T_IX (task -> workload, each workload's first
#   task, its task count, each task's index in its group), node_names (state order),
#   LOG[:nlog], LT[:nlog], calls, CT[:calls], WK[:calls], and stopped (the no-progress watch
#   stopped the run: it is then recorded by the general engine).

# -- the loop's own arrays (``pack.Packed`` fills them, ``fast.loop`` reads them) ------------------

# TI: per task (T_RANK is its workload's rank in the model's walk, T_W its workload)
(T_Q, T_PRIO, T_PLEV, T_RANK, T_SHAPE, T_SUBUS, T_STATE, T_STARTUS, T_SEQ, T_NODE, T_GEN, T_TRIG, T_CHK,
 T_LAST, T_RESAT, T_VICT, T_RESV, T_HGEN, T_NPOS, T_LPOS, T_DUE, T_EVER, T_VN, T_TOUCH, T_MARK, T_W) = range(26)
NTI = 26
# WC: per workload, counts of its pending tasks (W_NP; W_NPS of them in their shape's stream, that is
# not holding a reservation; W_NDUE due for an attempt): its rank's bit in a stream is set while
# the matching count is positive
W_NP, W_NPS, W_NDUE = range(3)
NWC = 3
# TF: per task, floats: submit, duration, start, and the watch's last preemption and longest gap
F_SUB, F_DUR, F_START, F_VLAST, F_VGAP = range(5)
NTF = 5
# task states
S_UNSEEN, S_PENDING, S_RUNNING, S_DONE = range(4)

# QI: per leaf (in the root's child order, which is the candidates' leaf order)
Q_HASG, Q_DELAY, Q_BUDGET, Q_LN, Q_LIVE = range(5)
NQI = 5

# NI: per node (state order)
N_RANK, N_RESV, N_OFF, N_CNT, N_CAPN = range(5)
NNI = 5
