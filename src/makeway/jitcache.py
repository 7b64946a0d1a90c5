"""numba's on-disk cache, invalidated by every source file of a compiled package, not one.

numba keeps a compiled function until its own file changes. A loop that inlines helpers from the
files beside it (the Kueue loop inlines its kernel and layout) would otherwise keep the old
helpers after an edit or an upgrade that touched only those files, and run them silently.
``by_package(directory)`` makes the cache of every function defined there stamped with all the
``.py`` files of that directory (those whose name starts with ``prefix``, where the compiled
files share a directory with others), wherever numba would put it (``NUMBA_CACHE_DIR``, beside
the sources, or the user's cache).

Stamping does not import numba: where numba is not loaded yet, the stamps are installed the moment
its cache module is (``_AfterCaching``), which is before any function can be cached. A run that
never compiles (a FIFO replay on the ahead-of-time loop) so never pays numba's import, about
0.12 s of CPU and 55 MiB of peak memory.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from typing import Any

_CACHING = "numba.core.caching"
_done: set[str] = set()
_pending: list[tuple[str, str]] = []


def by_package(directory: str, prefix: str = "") -> None:
    """Stamp the cache of the functions defined in ``directory`` with its ``.py`` files whose name
    starts with ``prefix`` (now if numba's cache module is loaded, else when it is)."""
    directory = os.path.dirname(os.path.abspath(os.path.join(directory, "x")))
    if directory in _done:
        return
    caching = sys.modules.get(_CACHING)
    if caching is None and not _installed("numba"):
        return
    _done.add(directory)
    if caching is not None:
        _stamp(caching, directory, prefix)
        return
    _pending.append((directory, prefix))
    if not any(isinstance(f, _AfterCaching) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterCaching())


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _AfterCaching(importlib.abc.MetaPathFinder):
    """Finds numba's cache module as the path finder does, and has its loader stamp the pending
    packages once the module has run; then leaves ``sys.meta_path``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _CACHING:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenStamp(spec.loader)
        return spec


class _ThenStamp(importlib.abc.Loader):
    """numba's own loader for its cache module, then the pending stamps, in the same import."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        for directory, prefix in _pending:
            _stamp(module, directory, prefix)
        _pending.clear()


def _stamp(caching: Any, directory: str, prefix: str) -> None:
    """Put locators first in numba's list that serve ``directory``'s functions only, stamped with
    its files (numba's cache module ``caching``)."""

    class _Stamped:
        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if os.path.dirname(os.path.abspath(py_file)) != directory:
                return None
            return super().from_function(py_func, py_file)  # type: ignore[misc]

        def get_source_stamp(self) -> str:
            h = hashlib.sha256()
            for name in sorted(os.listdir(directory)):
                if name.endswith(".py") and name.startswith(prefix):
                    path = os.path.join(directory, name)
                    st = os.stat(path)
                    h.update(name.encode())
                    h.update(caching._hash_source_file(path, st.st_mtime, st.st_size))
            return h.hexdigest()

    names = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    bases = [getattr(caching, n, None) or getattr(caching, "_" + n, None) for n in names]
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if None in bases or impl is None or not hasattr(caching, "_hash_source_file"):
        return  # another numba: its own per-file stamps stay
    impl._locator_classes[:0] = [type(f"Package{b.__name__}", (_Stamped, b), {}) for b in bases]
