"""The compiled loop as a built extension module, so a run need not load numba at all.

Loading numba (its import, LLVM and the jit cache) costs about a second of CPU and 150 MB of
memory in every process, more than the whole loop takes on a trace of 100,000 jobs. So the first run
that needs the loop builds it once ahead of time with numba's ``pycc`` into a small extension module
(``_makeway_loop_<key>.so``) beside this file's ``__pycache__`` (or, where that cannot be written,
under ``~/.cache/makeway``); every later process imports that module (numpy only: about 0.03 s and
a few MB). ``key`` hashes the loop's source, the argument types, numba's and Python's versions, so
an edit or an upgrade builds anew. Where the build cannot be done (no C compiler), or with
``MAKEWAY_AOT=0``, the jit-compiled function (``loop.run``, cached by numba) runs instead: the same
code, the same results.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

_SOURCES = ("layout.py", "kernel.py", "loop.py")
_loaded: dict[str, Callable[..., Any]] = {}


def _code(a: Any) -> str:
    return {"int64": "i8", "int32": "i4", "float64": "f8", "int8": "i1"}[a.dtype.name] + "[" + ":," * (a.ndim - 1) + "::1]"


def signature(args: tuple) -> str:
    """The pycc signature of ``loop.run`` for these arrays, e.g. ``i8(i8[::1], f8[:,::1], ...)``."""
    return "i8(" + ", ".join(_code(a) for a in args) + ")"


def _key(sig: str) -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256(sig.encode())
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    spec = importlib.util.find_spec("numba")
    version = "none"
    if spec is not None and spec.origin:
        version = Path(spec.origin).parent.name + str(Path(spec.origin).stat().st_mtime_ns)
    h.update(f"{version}{sys.version}{sys.platform}".encode())
    return h.hexdigest()[:16]


def _dirs() -> list[Path]:
    return [Path(__file__).resolve().parent / "__pycache__", Path.home() / ".cache" / "makeway"]


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def _import(path: Path, name: str) -> Callable[..., Any]:
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    loader.exec_module(mod)
    return mod.run


def _build(name: str, sig: str) -> Path | None:
    """Build the module into the first writable cache directory; its path, or None. Processes
    starting together (test workers, a sweep's pool) build it once: the others wait on a lock in
    that directory and import what the first one built (the build is half a minute of CPU)."""
    for d in _dirs():
        try:
            d.mkdir(parents=True, exist_ok=True)
            lock = open(d / (name + ".lock"), "a")
        except OSError:
            continue
        with lock:
            try:
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)
            except (ImportError, OSError):  # no advisory locks here: build beside the others
                pass
            final = d / (name + _suffix())
            if final.is_file():
                return final
            return _build_in(d, name, sig)
    return None


def _build_in(d: Path, name: str, sig: str) -> Path | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numba.pycc import CC

        from makeway.sim.fast import loop
    try:
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=d))
    except OSError:
        return None
    try:
        cc = CC(name)
        cc.output_dir = str(tmp)
        cc.verbose = False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc.export("run", sig)(loop.run.py_func)
            cc.compile()
        built = next(tmp.glob(name + "*"))
        final = d / (name + _suffix())
        os.replace(built, final)  # atomic: a process reading beside this one sees all or nothing
        return final
    except Exception:  # no compiler, a read-only place ...: the jit function stands in
        return None
    finally:
        for p in tmp.glob("**/*"):
            if p.is_file():
                p.unlink()
        for p in sorted(tmp.glob("**/"), reverse=True):
            p.rmdir()


def loop_for(args: tuple) -> Callable[..., Any]:
    """``loop.run`` for arrays like ``args``: the built module's, built now if need be, or the jit one."""
    sig = signature(args)
    fn = _loaded.get(sig)
    if fn is not None:
        return fn
    name = "_makeway_loop_" + _key(sig)
    aot = os.environ.get("MAKEWAY_AOT", "1") != "0"
    for d in _dirs() if aot else ():
        path = d / (name + _suffix())
        if path.is_file():
            try:
                fn = _import(path, name)
                break
            except ImportError:
                continue
    if fn is None and aot:
        path = _build(name, sig)
        if path is not None:
            fn = _import(path, name)
    if fn is None:
        from makeway.sim.fast.loop import run

        fn = run
    _loaded[sig] = fn
    return fn
