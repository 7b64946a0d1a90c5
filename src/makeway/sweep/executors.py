"""Where cells run: a local process pool (default), a Ray cluster or a Dask cluster.

Each executor maps ``run_cell`` over cell specs and yields ``(spec, record)`` as cells finish, in
whatever order they finish; the caller stores each at once, so a sweep stopped midway keeps every
cell finished so far. Ray and Dask are optional extras, imported only when asked for.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

from makeway.errors import MakewayError
from makeway.sweep.cell import run_cell
from makeway.sweep.grid import CellSpec

EXECUTORS = ("process", "ray", "dask")


def _missing(extra: str, module: str) -> MakewayError:
    return MakewayError(f"--executor {extra}: the '{module}' package is not installed "
                        f"(pip install 'makeway[{extra}]')")


def run_process(cells: list[CellSpec], jobs: int) -> Iterator[tuple[CellSpec, dict]]:
    """A ``ProcessPoolExecutor`` of ``jobs`` spawned workers (spawn: no state forked from a parent
    that may hold threads, such as the progress bar's)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if not cells:
        return
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(cells))),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_cell, c): c for c in cells}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def run_ray(cells: list[CellSpec], address: Optional[str], jobs: int) -> Iterator[tuple[CellSpec, dict]]:
    """One Ray task per cell. An already initialised Ray (``ray.init`` by the caller) is used as it
    is; otherwise ``ray.init(address)`` joins a cluster, or starts a local one of ``jobs`` CPUs."""
    try:
        import ray
    except ImportError:
        raise _missing("ray", "ray") from None
    started = not ray.is_initialized()
    if started:
        kwargs = {"address": address} if address else {"num_cpus": jobs, "include_dashboard": False}
        ray.init(log_to_driver=False, **kwargs)
    remote = ray.remote(num_cpus=1)(run_cell)
    pending = {remote.remote(c): c for c in cells}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            ref = done[0]
            yield pending.pop(ref), ray.get(ref)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


def run_dask(cells: list[CellSpec], address: Optional[str], jobs: int) -> Iterator[tuple[CellSpec, dict]]:
    """One Dask task per cell on the scheduler at ``address``, or on a local cluster of ``jobs``
    single-threaded worker processes (the simulator holds the GIL: threads would not help)."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise _missing("dask", "distributed") from None
    client = Client(address) if address else Client(n_workers=jobs, threads_per_worker=1, processes=True,
                                                    dashboard_address=None)
    try:
        futures = [client.submit(run_cell, c, key=f"makeway-cell-{c.key}", pure=False) for c in cells]
        by_key = {f.key: c for f, c in zip(futures, cells)}
        for fut in as_completed(futures):
            yield by_key[fut.key], fut.result()
    finally:
        client.close()


def execute(cells: Iterable[CellSpec], executor: str = "process", jobs: int = 1,
            address: Optional[str] = None) -> Iterator[tuple[CellSpec, dict]]:
    cells = list(cells)
    if executor == "process":
        if address:
            raise MakewayError("--address: only for --executor ray or dask")
        return run_process(cells, jobs)
    if executor == "ray":
        return run_ray(cells, address, jobs)
    if executor == "dask":
        return run_dask(cells, address, jobs)
    raise MakewayError(f"--executor: unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")
