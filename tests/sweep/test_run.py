"""Running a grid on the process pool: the table, a rerun that reuses every cell, and a sweep killed
midway (SIGKILL) whose rerun computes only the cells it had not finished."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from makeway.sweep import load_grid, run_sweep
from tests.sweep.conftest import TINY_CELLS


def csv_rows(outcome):
    return list(csv.reader(io.StringIO(outcome.table_path.read_text())))


def test_process_pool_writes_table_cells_and_report(process_run):
    assert process_run.computed == TINY_CELLS and process_run.reused == 0 and process_run.complete
    rows = csv_rows(process_run)
    header, body = rows[0], rows[1:]
    assert [r[header.index("model")] for r in body] == ["kueue", "yunikorn", "yunikorn", "ytsaurus", "ytsaurus",
                                                         "symphony"]
    col = {name: header.index(name) for name in ("jobs_finished", "preemptions", "wait_p95_s",
                                                 "setting fair_share_starvation_timeout")}
    assert all(r[col["jobs_finished"]] == "5" for r in body)
    assert [r[col["setting fair_share_starvation_timeout"]] for r in body] == ["", "", "", "5", "30", ""]
    by_label = {(r[header.index("model")], r[header.index("setting preemptionEnabled")]): r for r in body}
    assert int(by_label[("yunikorn", "true")][col["preemptions"]]) > 0
    assert by_label[("yunikorn", "false")][col["preemptions"]] == "0"  # the switch reached the model
    out = process_run.table_path.parent
    assert len(list((out / "cells").glob("*.json"))) == TINY_CELLS
    assert "makeway comparison" in (out / "report.html").read_text()
    cell = json.loads(next((out / "cells").glob("*.json")).read_text())
    assert cell["schema"] == "makeway.sweep-cell/1" and cell["results"]["schema"].startswith("makeway.results/")


def test_rerun_reuses_every_finished_cell(process_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(process_run.table_path.parent, out)
    (out / "table.csv").unlink()
    again = run_sweep(process_run.grid, out, "process", jobs=2, report=False)
    assert (again.computed, again.reused) == (0, TINY_CELLS)
    assert again.table_path.read_text() == process_run.table_path.read_text()


def test_damaged_and_partial_cells_are_recomputed(process_run, tmp_path):
    out = tmp_path / "damaged"
    shutil.copytree(process_run.table_path.parent / "cells", out / "cells")
    files = sorted((out / "cells").glob("*.json"))
    files[0].write_text(files[0].read_text()[:100])  # a file cut short (written by hand or a dying disk)
    files[1].unlink()
    (out / "cells" / ".tmp-abc.json").write_text("{")  # what a kill between write and rename leaves
    again = run_sweep(process_run.grid, out, "process", jobs=1, report=False)
    assert (again.computed, again.reused) == (2, TINY_CELLS - 2)
    assert not list((out / "cells").glob(".tmp-*"))
    assert again.table_path.read_text() == process_run.table_path.read_text()


def test_killed_sweep_reruns_only_unfinished_cells(process_run, tiny_grid, tmp_path):
    out = tmp_path / "killed"
    cells = out / "cells"
    proc = subprocess.Popen([sys.executable, "-m", "makeway", "sweep", str(tiny_grid), "--out", str(out),
                             "--jobs", "1", "--no-report", "-q"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    try:
        while not (cells.is_dir() and list(cells.glob("[!.]*.json"))):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no cell finished in 300 s"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its pool's workers, at once
        proc.wait()
    finished = len(list(cells.glob("[!.]*.json")))
    assert 1 <= finished <= TINY_CELLS
    assert not (out / "table.csv").exists()  # it died before the end
    again = run_sweep(load_grid(tiny_grid), out, "process", jobs=1, report=False)
    assert (again.computed, again.reused) == (TINY_CELLS - finished, finished)
    assert again.table_path.read_text() == process_run.table_path.read_text()


def test_max_cells_stops_early_and_the_rest_follow(process_run, tmp_path):
    first = run_sweep(process_run.grid, tmp_path, "process", jobs=1, max_cells=0, report=False)
    assert (first.computed, len(first.records), first.complete) == (0, 0, False)
    assert csv_rows(first)[1:] == []
