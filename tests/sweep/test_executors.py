"""The same grid on Ray and on Dask gives the process pool's table, byte for byte.

Ray and Dask are optional extras (``makeway[ray]``, ``makeway[dask]``): without them these tests
skip, unless ``MAKEWAY_REQUIRE_RAY`` / ``MAKEWAY_REQUIRE_DASK`` is set (CI sets both, after
installing the extras), where a missing package is a failure.
"""

from __future__ import annotations

import importlib
import os

import pytest

from makeway.sweep import run_sweep
from tests.sweep.conftest import TINY_CELLS


def need(module: str, env: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get(env):
            pytest.fail(f"{env} is set but {module!r} is not installed (pip install '.[ray,dask]')")
        pytest.skip(f"{module} is not installed (an optional extra)")


def test_ray_gives_the_process_pools_table(process_run, tmp_path):
    ray = need("ray", "MAKEWAY_REQUIRE_RAY")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        got = run_sweep(process_run.grid, tmp_path, "ray", report=False)
    finally:
        ray.shutdown()
    assert (got.computed, got.reused) == (TINY_CELLS, 0)
    assert got.table_path.read_text() == process_run.table_path.read_text()


def test_dask_gives_the_process_pools_table(process_run, tmp_path):
    need("distributed", "MAKEWAY_REQUIRE_DASK")
    from distributed import LocalCluster

    # an in-process cluster (threads) keeps the test cheap; --address reaches it like any other
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as cluster:
        got = run_sweep(process_run.grid, tmp_path, "dask", address=cluster.scheduler_address, report=False)
    assert (got.computed, got.reused) == (TINY_CELLS, 0)
    assert got.table_path.read_text() == process_run.table_path.read_text()


def test_missing_extra_is_one_line(process_run, tmp_path, monkeypatch):
    import sys

    from makeway.errors import MakewayError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MakewayError, match=r"--executor ray: the 'ray' package is not installed \(pip install 'makeway\[ray\]'\)"):
        run_sweep(process_run.grid, tmp_path, "ray", report=False)
