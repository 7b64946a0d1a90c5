"""``makeway.jitcache``: a compiled function's cache goes stale when any file of its package
changes, not only its own (a loop that inlines a helper from a sibling file must not keep the
old helper after an edit or an upgrade)."""

import importlib.util
import os
import sys

import pytest

numba = pytest.importorskip("numba")

from makeway import jitcache  # noqa: E402


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_a_sibling_edit_recompiles_the_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", "")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "helper.py").write_text("from numba import njit\n\n@njit(cache=True, inline='always')\n"
                                   "def step(x):\n    return x + 1\n")
    (pkg / "loop.py").write_text("import sys\nfrom numba import njit\nfrom helper import step\n\n"
                                 "@njit(cache=True)\ndef run(x):\n    return step(x)\n")
    monkeypatch.syspath_prepend(str(pkg))
    jitcache.by_package(str(pkg))
    first = _load(pkg / "loop.py", "jitcache_loop_a")
    assert first.run(1) == 2
    (pkg / "helper.py").write_text("from numba import njit\n\n@njit(cache=True, inline='always')\n"
                                   "def step(x):\n    return x + 10\n")
    sys.modules.pop("helper", None)
    second = _load(pkg / "loop.py", "jitcache_loop_b")
    assert second.run(1) == 11  # numba's own per-file stamp would load the cached 2


def test_functions_elsewhere_keep_numbas_locators(tmp_path):
    jitcache.by_package(str(tmp_path))
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    mine = [c for c in impl._locator_classes if c.__name__.startswith("Package")]
    assert mine and all(c.from_function(len, os.__file__) is None for c in mine)


def test_a_prefix_leaves_the_other_files_out(tmp_path):
    from numba.core import caching

    (tmp_path / "kernel_a.py").write_text("x = 1\n")
    (tmp_path / "model.py").write_text("y = 1\n")
    jitcache.by_package(str(tmp_path), prefix="kernel")
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    cls = next(c for c in impl._locator_classes if c.__name__ == "PackageInTreeCacheLocator"
               and c.from_function(_plain, str(tmp_path / "kernel_a.py")) is not None)
    stamp = cls.from_function(_plain, str(tmp_path / "kernel_a.py")).get_source_stamp()
    (tmp_path / "model.py").write_text("y = 2\n")
    assert cls.from_function(_plain, str(tmp_path / "kernel_a.py")).get_source_stamp() == stamp
    (tmp_path / "kernel_a.py").write_text("x = 2\n")
    assert cls.from_function(_plain, str(tmp_path / "kernel_a.py")).get_source_stamp() != stamp


def _plain():
    return None


_BEFORE_NUMBA = """
import os, sys
from makeway import jitcache
jitcache.by_package(sys.argv[1])
loaded_early = 'numba' in sys.modules
from numba import njit
from numba.core import caching
impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl
def f():
    return 1
serving = [c.__name__ for c in impl._locator_classes
           if c.__name__.startswith('Package') and c.from_function(f, os.path.join(sys.argv[1], 'loop.py')) is not None]
print(loaded_early, len(serving), any(isinstance(x, jitcache._AfterCaching) for x in sys.meta_path))
"""


def test_stamping_before_numba_loads_waits_for_it(tmp_path):
    """A package stamped before numba is imported (``makeway.sim.fast`` on a run that never
    compiles) does not import it, and gets its locators when numba's cache module loads."""
    import subprocess

    (tmp_path / "loop.py").write_text("x = 1\n")
    out = subprocess.run([sys.executable, "-c", _BEFORE_NUMBA, str(tmp_path)], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out[0] == "False" and int(out[1]) >= 1 and out[2] == "False", out


def test_a_fifo_replay_does_not_import_numba():
    """The first-fit core with the ahead-of-time loop (or the pure core) needs no numba: importing
    it cost a FIFO replay of KTH a quarter of its CPU and half its peak memory (issue 20)."""
    import subprocess

    code = ("import sys, makeway.sim.fast, makeway.sim.engine, makeway.cli; "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False"]
