import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()

# run first: the longest single units of work, so that none of them starts last and runs alone
EARLY_GROUPS = ("numba-kernel",)


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the checkout")
    return SHARED


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` is two workers per core: a third of the suite's wall time is live tests waiting
    on real processes (grace periods, leases, restarts, a browser), during which a worker uses no
    CPU; a second worker per core runs other tests meanwhile."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return 2 * cores


def pytest_collection_modifyitems(config, items):
    """The groups in ``EARLY_GROUPS`` first (stable otherwise): the numba kernel's group compiles
    for about a minute before its tests run, and scheduled last it would be the run's tail."""
    def early(item) -> bool:
        return any(m.args and m.args[0] in EARLY_GROUPS for m in item.iter_markers("xdist_group"))

    items.sort(key=lambda item: not early(item))
