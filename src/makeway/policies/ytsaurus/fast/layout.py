"""What the compiled YTsaurus loop (``fast.loop``) hands to what reads its results: the decision
log's codes and columns (``docs/plans/ytsaurus-compiled-loop.md`` §5).

One row of ``LOG`` (int64, ``NLOG_COLS`` columns) per decision or refresh, in the order the model
makes them within an instant; ``LT`` (float64) holds the row's instant and ``LV`` (float64,
``NLV`` columns) its values. Operations are numbered by their index in the trace (submit order,
which is also the pool tree's order of a pool's operations), tasks by their index in the
operation's one task group, nodes by their index in the state's node order, pools by their index
in ``Packed.pools`` (the tree's pool postorder, ``<Root>`` last).

* ``L_UPDATE``: a refresh that computed the fair share (its inputs moved); ``A`` is its row in
  ``UPD``, which holds per pool its fair share, usage share and level over the total
  (``UPD[k, 3p + U_FAIR]`` and so on; ``<Root>``'s fair share is the sum of its children's, as
  ``onedim`` reports it);
* ``L_REFRESH``: a refresh where only the snapshot's time moved (and clocks may have passed their
  deadline); logged only when the run asks for every refresh (``trace``), since a long run makes
  millions of them;
* ``L_NOTE``: operation ``A``'s starvation note, kind ``B`` (``N_STARTS``, ``N_STOPS``,
  ``N_FINISHED``), its clock's status ``C`` after it; ``LV`` the fair share and usage share of the
  snapshot the note reads, and ``below_fair_share_since`` (NaN where the note has none);
* ``L_PCLOCK``: pool ``A``'s clock changed to status ``B``, since ``LV[0]`` (NaN: idle). Pools
  get no notes; the row lets a test follow their clocks, which the preemptive stages read;
* ``L_START``: task ``B`` of operation ``A`` starts on node ``C`` (``Start``);
* ``L_PREEMPT``: the normal preemptive stage on node ``C`` takes task ``B`` of operation ``A`` for
  operation ``D``; ``E`` the victim's class (``S_P``); ``LV`` the reason's values: the preemptor's
  published fair share and usage share, its live satisfaction, and the victim operation's live
  satisfaction after the earlier victims of the stage left (``V_PFAIR`` ...). The victim leaves
  at once and its task is pending again, last in its operation's order;
* ``L_SHARE`` (with ``trace`` only, after each ``L_UPDATE``'s notes): operation ``A`` of the new
  tree, its clock's status ``C``; ``LV`` its fair share, usage share and clock start (NaN: idle),
  so that a test sees every operation's share and clock, not only those a note shows.

``PUBT[w]`` is the time of the first computed update whose tree held operation ``w`` (inf:
never), from which on its pending reason reads the snapshot. ``IS`` holds the run's counts and the instant it stopped at (``last_t``, what the general engine's
``Simulation.now`` is at its end).
"""

L_UPDATE, L_REFRESH, L_NOTE, L_PCLOCK, L_START, L_SHARE, L_PREEMPT = range(7)
C_KIND, C_A, C_B, C_C, C_D, C_E = range(6)
NLOG_COLS = 6
NLV = 4
V_FAIR, V_USAGE, V_SINCE = range(3)
V_PFAIR, V_PUSAGE, V_PSAT, V_VSAT = range(4)
S_NP, S_AP, S_P = range(3)  # ``classify.NP``, ``AP``, ``P``

N_STARTS, N_STOPS, N_FINISHED = range(3)
ST_NON, ST_STARVING = range(2)  # ``starvation.NON``, ``starvation.STARVING`` (aggressive is outside the class)

U_FAIR, U_USAGE, U_LEVEL = range(3)
NUPD = 3  # UPD columns per pool

# IS: the run's counts
(I_NLOG, I_NUPD, I_INSTANTS, I_REFRESH, I_COMPUTED, I_STARTS, I_STOP, I_PREEMPTS, I_STAGES, I_QUIET,
 NIS) = range(11)
# I_QUIET: the instants of those walked as quiet stretches (``loop._quiet``)
# STOP_WATCH: an instant that preempted with no submission left, half a no-progress window after
# the last progress: the engine's watch might stop the run there, which the loop does not follow
STOP_IDLE, STOP_HORIZON, STOP_WATCH = 1, 2, 3
# XS: the run's floats
X_LAST_T, NXS = 0, 1
