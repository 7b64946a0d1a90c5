import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()

# run first: the longest single units of work, so that none of them starts last and runs alone
EARLY_GROUPS = ("numba-kernel", "ytsaurus-loop", "yunikorn-loop")
# then the longest tests (5-60 s of CPU each in a cold CI run, measured per test, or a minute of
# waiting on real processes), longest first; xdist hands out single tests in this order, and one of
# these scheduled last ran alone for the final 1.5 minutes of a run. A node id prefix; a renamed test only loses its place in the line.
LONG_TESTS = (
    "tests/yunikorn_queue/test_cache_equivalence.py::test_caches_decide_as_full_evaluation",
    "tests/live/test_state_machine.py::test_live_service_state_machine",
    "tests/live/test_storm.py::test_kill_nine_storm",
    "tests/sim/test_fast_core.py::test_a_fraction_late_in_the_trace_restarts_on_the_pure_core",
    "tests/sweep/test_executors.py::test_ray_gives_the_process_pools_table",
    "tests/ytsaurus/test_cache_equivalence.py::test_caches_decide_as_full_evaluation",
    "tests/kueue/test_memo_equivalence.py::test_caches_decide_as_evaluating_every_head",
    "tests/test_fuzz_inputs.py::test_fuzz_configs",
    "tests/kueue/test_golden.py::test_noop_memo_decides_as_full_evaluation",
    "tests/ytsaurus/test_livelock.py::test_random_small_simulations_end",
    "tests/importers/test_full_traces.py::test_google_task_events",
    "tests/sim/test_no_starvation.py::test_every_workload_starts_and_caches_decide_the_same",
    "tests/test_fuzz_inputs.py::test_fuzz_traces",
    "tests/kueue/test_golden.py::test_grace_period_decides_as_full_evaluation",
)


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the checkout")
    return SHARED


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` is three workers per core: a third of the suite's wall time is live tests waiting
    on real processes (grace periods, leases, restarts, a browser), during which a worker uses no
    CPU; the other workers of a core run CPU-bound tests meanwhile."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return 3 * cores


def _waits(module: str) -> bool:
    """Test files that mostly wait on real processes (servers, agents, tasks, a browser)."""
    return module.startswith("tests/live/")


def pytest_collection_modifyitems(config, items):
    """The groups in ``EARLY_GROUPS`` first: the numba kernel's group compiles for about a minute
    before its tests run, and scheduled last it would be the run's tail. Then ``LONG_TESTS``, in
    that order. Then the test files, those that wait on real processes spread evenly among the
    CPU-bound ones, so that the workers do not all wait at once while a core idles. A file's tests
    stay together, and the order is the same on every worker."""
    def early(item) -> bool:
        return any(m.args and m.args[0] in EARLY_GROUPS for m in item.iter_markers("xdist_group"))

    def long_rank(item) -> int | None:
        return next((k for k, p in enumerate(LONG_TESTS) if item.nodeid.startswith(p)), None)

    files: dict[str, list] = {}
    first, long = [], []
    for item in items:
        if early(item):
            first.append(item)
        elif long_rank(item) is not None:
            long.append(item)
        else:
            files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    waiting = [f for f in files if _waits(f)]
    busy = [f for f in files if not _waits(f)]
    order = busy
    if waiting and busy:
        step = (len(busy) + len(waiting)) / len(waiting)
        slots = {int(k * step) for k in range(len(waiting))}
        w, b = iter(waiting), iter(busy)
        order = [next(w) if k in slots else next(b) for k in range(len(busy) + len(waiting))]
    elif waiting:
        order = waiting
    long.sort(key=long_rank)  # stable: a test's parameters keep their order
    items[:] = first + long + [item for f in order for item in files[f]]


class _GroupsHonoured:
    """On an xdist worker with ``--dist loadgroup``, xdist marks each grouped test's node id
    (``...@group``) so the controller sends a group to one worker. A pytest/xdist pair where that
    mark does not take (pytest 9 with xdist 3.8) would silently compile the numba kernel on every
    worker: stop with a clear message instead."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):
            return
        for item in items:
            if any(item.iter_markers("xdist_group")) and "@" not in item.nodeid:
                raise pytest.UsageError(f"xdist_group is not honoured by this pytest and pytest-xdist "
                                        f"({item.nodeid} has no group suffix): install pytest<9")


def _warm_bytecode(config) -> None:
    """Write every test module's assert-rewritten bytecode (and the helpers' plain bytecode) once,
    in the xdist controller, before the workers start. Each worker otherwise rewrites all ~110
    test modules itself at collection, about 5 s of CPU each, and all at once; where
    ``PYTHONDONTWRITEBYTECODE`` is set (as on our CI machines) nothing is ever cached, so every run
    pays it per worker. Pytest reads a cached rewrite whatever that variable says. Private pytest
    API (pinned below 9): if it moved, the workers rewrite for themselves as before."""
    import compileall
    from fnmatch import fnmatch

    try:
        from _pytest.assertion import rewrite
        state = config.stash[rewrite.assertstate_key]
        patterns = config.getini("python_files")
        for fn in sorted((REPO / "tests").rglob("*.py")):
            if fn.name != "conftest.py" and not any(fnmatch(fn.name, p) for p in patterns):
                continue
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None and rewrite.try_makedirs(pyc.parent):
                source_stat, co = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, co, source_stat, pyc)
    except (AttributeError, ImportError, KeyError, OSError, TypeError):
        return
    compileall.compile_dir(str(REPO / "tests"), quiet=2)


def _warm_compiled_loops() -> None:
    """Compile the Kueue, YuniKorn and YTsaurus loops (``makeway.sim.fast.kueue``, ``.yunikorn``,
    ``.ytsaurus``; numba's cache) once, before any test runs: in a fresh clone each takes 30-40 s,
    and a test that happens to be first to run the model (a fuzzed trace or config under a 60 s
    watchdog) would pay it, in every worker at once. The YTsaurus loop compiles in a child
    process meanwhile, on the other core."""
    import subprocess
    import sys

    try:
        from makeway.sim.fast.kueue import warm as warm_kueue
        from makeway.sim.fast.yunikorn import warm as warm_yunikorn
    except ImportError:
        return
    child = subprocess.Popen([sys.executable, "-c", "from makeway.sim.fast.ytsaurus import warm; warm()"])
    try:
        warm_kueue()
        warm_yunikorn()
    finally:
        child.wait(timeout=600)


def pytest_configure(config):
    config.pluginmanager.register(_GroupsHonoured(), "makeway-groups-honoured")
    workers = getattr(config.option, "numprocesses", None)
    if isinstance(workers, int) and workers > 1 and not hasattr(config, "workerinput"):
        _warm_bytecode(config)
    if not hasattr(config, "workerinput"):
        _warm_compiled_loops()
