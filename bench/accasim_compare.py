"""makeway against AccaSim 1.1.3 on the KTH and LANL logs under FIFO: CPU and peak memory, paired.

    python bench/accasim_compare.py [--logs KTH,LANL] [--repeats 1] [--out bench/accasim-results.json]

AccaSim is not a makeway dependency: install it beside makeway (``pip install accasim==1.1.3``);
without it this script says so and exits 0. Each run is a fresh process (imports, trace reading,
simulation and output included), measured by ``os.wait4``: user + system CPU and peak RSS of that
process alone. Runs are paired: AccaSim, then makeway in both layouts, for each repeat, so machine
load drifts over the pair rather than between the two sides. The ratio of a pair is AccaSim's CPU
over makeway's; the figure kept is the median over repeats.

Both sides replay the same strict FIFO: AccaSim's ``FirstInFirstOut`` dispatcher with its
``FirstFit`` allocator (a job that cannot be allocated stops the pass) on one single-core node per
processor, as AccaSim's SWF reader asks for one node per processor; makeway's ``fifo-strict`` on the
cluster the SWF header describes, with ``--swf-layout nodes`` (the same machine: one node per
processor, a job a gang of one-cpu tasks) and ``--swf-layout pool`` (one pool of every processor,
a job one task). makeway writes its full results (``--out``), AccaSim its dispatching plan.

makeway runs each layout once on the log's first day before any measured run: the first run on a
machine builds the compiled event loop as an extension module (``sim/fast/aot.py``: about 14 s of
CPU and 200 MiB more peak memory), once, as an installed package does on its first use. Both
packages' modules are byte-compiled before the first run (``compileall``), as an installed wheel's
are: where ``PYTHONDONTWRITEBYTECODE`` is set and makeway is an editable checkout, every makeway
process would otherwise compile its edited modules from source (about 0.2 s of CPU).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOGS = {"KTH": "KTH-SP2-1996-2.1-cln.swf.gz", "LANL": "LANL-CM5-1994-4.1-cln.swf.gz"}

ACCASIM_CHILD = r"""
import collections, collections.abc, sys
for _name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):  # 1.1.3 predates Python 3.10
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import FirstInFirstOut
from accasim.base.allocator_class import FirstFit
workload, sys_config, results = sys.argv[1:4]
sim = Simulator(workload, sys_config, FirstInFirstOut(FirstFit()), RESULTS_FOLDER_PATH=results,
                show_statistics=False, LOG_LEVEL="ERROR")
sim.start_simulation(system_status=False)
"""


def _header_int(path: Path, key: str) -> int | None:
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            if not line.startswith(";"):
                break
            if line[1:].strip().startswith(key + ":"):
                return int(line.split(":", 1)[1].split()[0])
    return None


def _measure(cmd: list[str], cwd: Path) -> dict:
    """CPU seconds (user + system) and peak RSS of one child process, plus its wall time."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... exited {proc.returncode}: {err[-600:]}")
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "wall_s": round(time.monotonic() - t0, 3)}


def run(logs: list[str], repeats: int, dest: Path | None = None) -> dict:
    shared = HERE.parent / ".." / "shared" / "traces" / "swf"
    work = Path(tempfile.mkdtemp(prefix="accasim-compare-"))
    for mod in ("makeway", "accasim"):
        spec = importlib.util.find_spec(mod)
        if spec is not None and spec.submodule_search_locations:
            subprocess.run([sys.executable, "-m", "compileall", "-q", *spec.submodule_search_locations],
                           stdout=subprocess.DEVNULL, check=False)
    out: dict = {"accasim": "1.1.3", "python": sys.version.split()[0], "repeats": repeats, "logs": {}}
    if dest is not None and dest.is_file():  # logs not measured this time keep their last figures
        try:
            out["logs"] = {k: v for k, v in json.loads(dest.read_text()).get("logs", {}).items() if k not in logs}
        except (ValueError, AttributeError):
            pass
    try:
        for name in logs:
            gz = (shared / LOGS[name]).resolve()
            if not gz.is_file():
                print(f"{name}: {gz} not found; skipped")
                continue
            swf = work / gz.name[:-3]
            with gzip.open(gz, "rb") as src, open(swf, "wb") as dst:
                shutil.copyfileobj(src, dst)
            procs = _header_int(gz, "MaxProcs")
            sys_config = work / f"{name}-sys.json"
            # memory never binds (makeway's SWF import reads none), but AccaSim must know the resource:
            # 1.1.3 drops an unknown one from the first job's request and then fails on a job without it
            sys_config.write_text(json.dumps({"groups": {"g0": {"core": 1, "mem": 2**50}}, "resources": {"g0": procs}}))
            runs: dict[str, list[dict]] = {"accasim": [], "makeway_nodes": [], "makeway_pool": []}
            for layout in ("nodes", "pool"):  # the first compiled run builds the loop's module, once
                _measure([sys.executable, "-m", "makeway", "simulate", "--trace", str(gz), "--model", "fifo-strict",
                          "--swf-layout", layout, "-q", "--horizon", "86400"], work)
            for r in range(repeats):
                res_dir = work / f"acc-{name}-{r}"
                runs["accasim"].append(_measure([sys.executable, "-c", ACCASIM_CHILD, str(swf), str(sys_config),
                                                 str(res_dir)], work))
                for layout in ("nodes", "pool"):
                    runs[f"makeway_{layout}"].append(_measure(
                        [sys.executable, "-m", "makeway", "simulate", "--trace", str(gz), "--model", "fifo-strict",
                         "--swf-layout", layout, "-q", "--out", str(work / f"mw-{name}-{layout}.json")], work))
                print(f"{name} #{r + 1}: accasim {runs['accasim'][-1]}, nodes {runs['makeway_nodes'][-1]}, "
                      f"pool {runs['makeway_pool'][-1]}", flush=True)
            doc = json.loads((work / f"mw-{name}-pool.json").read_text())
            entry: dict = {"trace": gz.name, "processors": procs, "jobs": doc["summary"]["jobs_submitted"], "runs": runs}
            for layout in ("nodes", "pool"):
                pairs = [a["cpu_s"] / m["cpu_s"] for a, m in zip(runs["accasim"], runs[f"makeway_{layout}"])]
                entry[f"cpu_ratio_{layout}"] = round(statistics.median(pairs), 2)
                entry[f"peak_rss_mib_{layout}"] = max(m["peak_rss_mib"] for m in runs[f"makeway_{layout}"])
            entry["peak_rss_mib_accasim"] = max(a["peak_rss_mib"] for a in runs["accasim"])
            out["logs"][name] = entry
            if dest is not None:  # after every log: a long run stopped midway keeps what it measured
                dest.write_text(json.dumps(out, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", default="KTH,LANL")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "accasim-results.json")
    args = ap.parse_args()
    if importlib.util.find_spec("accasim") is None:
        print("accasim is not installed (pip install accasim==1.1.3): comparison skipped")
        return 0
    run([s.strip() for s in args.logs.split(",") if s.strip()], args.repeats, args.out)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
