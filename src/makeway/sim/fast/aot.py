"""The compiled loop as a built extension module, so a run need not load numba at all.

Loading numba (its import, LLVM and the jit cache) costs about a second of CPU and 150 MB of
memory in every process, more than the whole loop takes on a trace of 100,000 jobs. So the first run
that needs the loop builds it once ahead of time with numba's ``pycc`` into a small extension module
(``_makeway_loop_<key>.so``) beside this file's ``__pycache__`` (or, where that cannot be written,
under ``~/.cache/makeway``); every later process imports that module (numpy only: about 0.03 s and
a few MB). ``key`` hashes the loop's source, the argument types, numba's and Python's versions, so
an edit or an upgrade builds anew. Where the build cannot be done (no C compiler), or with
``MAKEWAY_AOT=0``, the jit-compiled function (``loop.run``, cached by numba) runs instead: the same
code, the same results. ``built`` does the same for other compiled passes that have a numpy path to
fall back on instead (the SWF byte scan, ``importers.swf_bytes``).
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
_loaded: dict[str, Callable[..., Any] | None] = {}


def _code(a: Any) -> str:
    return {"int64": "i8", "int32": "i4", "float64": "f8", "int8": "i1"}[a.dtype.name] + "[" + ":," * (a.ndim - 1) + "::1]"


def signature(args: tuple) -> str:
    """The pycc signature of ``loop.run`` for these arrays, e.g. ``i8(i8[::1], f8[:,::1], ...)``."""
    return "i8(" + ", ".join(_code(a) for a in args) + ")"


def _key(sig: str, sources: tuple[Path, ...] | None = None) -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256(sig.encode())
    for path in sources if sources is not None else tuple(here / name for name in _SOURCES):
        h.update(path.read_bytes())
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


def _build(name: str, sig: str, func: Callable[[], Any] | None = None) -> Path | None:
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
            return _build_in(d, name, sig, func)
    return None


def _build_in(d: Path, name: str, sig: str, func: Callable[[], Any] | None = None) -> Path | None:
    """``func()`` gives the jit function whose Python source is built (default: ``loop.run``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numba.pycc import CC

        if func is None:
            from makeway.sim.fast import loop

            jitted = loop.run
        else:
            jitted = func()
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
            cc.export("run", sig)(jitted.py_func)
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


def built(stem: str, sources: tuple[Path, ...], func: Callable[[], Any], sig: str) -> Callable[..., Any] | None:
    """The function ``func()`` (a jit function defined in ``sources``) as a built module's, built
    now if need be; None where it cannot be built or with ``MAKEWAY_AOT=0``. For code that has a
    numpy path as good as the jit one would be, once numba's import is paid. None too where numba
    is not installed (the optional extra ``makeway[fast]``)."""
    fn = _loaded.get(stem + sig)
    if fn is not None or stem + sig in _loaded:
        return fn
    fn = _find(stem + _key(sig, sources), sig, func) if importlib.util.find_spec("numba") else None
    _loaded[stem + sig] = fn
    return fn


def _find(name: str, sig: str, func: Callable[[], Any] | None) -> Callable[..., Any] | None:
    if os.environ.get("MAKEWAY_AOT", "1") == "0":
        return None
    for d in _dirs():
        path = d / (name + _suffix())
        if path.is_file():
            try:
                return _import(path, name)
            except ImportError:
                continue
    path = _build(name, sig, func)
    return _import(path, name) if path is not None else None


def loop_for(args: tuple) -> Callable[..., Any]:
    """``loop.run`` for arrays like ``args``: the built module's, built now if need be, or the jit one."""
    sig = signature(args)
    fn = _loaded.get(sig)
    if fn is not None:
        return fn
    fn = _find("_makeway_loop_" + _key(sig), sig, None)
    if fn is None:
        from makeway.sim.fast.loop import run

        fn = run
    _loaded[sig] = fn
    return fn
