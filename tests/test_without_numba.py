"""Without numba (a plain ``pip install .``, as the README's first command does) every model runs:
the compiled paths are skipped, never imported. The import is blocked in a fresh interpreter."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
sys.modules["numba"] = None  # import numba now fails, as where it is not installed
from makeway.cli import main
sys.argv = ["makeway", "compare", sys.argv[1], "--model", "none,kueue,yunikorn,ytsaurus", "-q"]
main()
"""


def test_compare_runs_every_model_without_numba():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO / "examples" / "quickstart.yaml")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "numba" not in out.stderr
    for model in ("kueue", "yunikorn", "ytsaurus"):
        assert model in out.stdout
