"""numba's on-disk cache, invalidated by every source file of a compiled package, not one.

numba keeps a compiled function until its own file changes. A loop that inlines helpers from the
files beside it (the Kueue loop inlines its kernel and layout) would otherwise keep the old
helpers after an edit or an upgrade that touched only those files, and run them silently.
``by_package(directory)`` makes the cache of every function defined there stamped with all the
``.py`` files of that directory (those whose name starts with ``prefix``, where the compiled
files share a directory with others), wherever numba would put it (``NUMBA_CACHE_DIR``, beside
the sources, or the user's cache).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

_done: set[str] = set()


def by_package(directory: str, prefix: str = "") -> None:
    """Stamp the cache of the functions defined in ``directory`` with its ``.py`` files whose name
    starts with ``prefix``."""
    directory = os.path.dirname(os.path.abspath(os.path.join(directory, "x")))
    if directory in _done:
        return
    try:
        from numba.core import caching
    except ImportError:
        return
    _done.add(directory)

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
