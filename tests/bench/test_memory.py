"""The memory figure counts what the run keeps per job, not the compiled core's loading."""

from __future__ import annotations

import json
import subprocess
import sys


def test_memory_alone_in_a_fresh_process_does_not_count_loading_the_compiled_core():
    """``makeway bench --only memory`` ran first in its process once reported 5,113 bytes per job
    at the quick size, numba's import among them; after the other scenarios it was 775."""
    code = "import json; from makeway.benchmarks import bench_memory; print(json.dumps(bench_memory(True)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    fig = json.loads(out.stdout.strip().splitlines()[-1])[0]
    assert fig["metric"] == "bytes_per_job" and 0 < fig["value"] <= 1024, fig
