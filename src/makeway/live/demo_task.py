"""A task that makes way gracefully, for the examples and the end-to-end tests.

It works through ``--seconds`` of work in small steps and keeps its progress in a checkpoint file
(``--checkpoint DIR``, one file per task). On its stop signal it reads the preemption notice, writes
the checkpoint and exits; the next attempt resumes from the checkpoint. ``--ignore-stop`` makes it
ignore SIGTERM (and start a grandchild that does the same), to show the SIGKILL at the deadline.
Every start and end is appended to ``DIR/markers.log`` so a test can prove no task ran twice at once.
``--hold S`` keeps a first attempt alive up to ``S`` seconds after its work is done, still answering its
stop signal: a demo (or a test) whose victim must still be running when the preemptor arrives, however
slow the machine, without a long restarted attempt. A file ``DIR/release`` ends every hold at once (the
test creates it once the preemption it waited for has happened).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _append(path: Path, line: str) -> None:
    with path.open("a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="makeway-demo-task")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--checkpoint", default=os.environ.get("DEMO_CHECKPOINTS", "."))
    ap.add_argument("--ignore-stop", action="store_true")
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--hold", type=float, default=0.0)
    args = ap.parse_args(argv)
    job = os.environ.get("MAKEWAY_JOB_ID", "job")
    task = os.environ.get("MAKEWAY_TASK_ID", "task")
    attempt = os.environ.get("MAKEWAY_ATTEMPT", "1")
    d = Path(args.checkpoint)
    d.mkdir(parents=True, exist_ok=True)
    ckpt = d / (task.replace("/", "_") + ".json")
    markers = d / "markers.log"
    done = json.loads(ckpt.read_text())["done"] if ckpt.exists() else 0.0
    stop = {"now": False}

    def on_stop(signum, frame):
        stop["now"] = True

    # the handlers come before the start line: a stop landing in between would leave a start without an end
    if args.ignore_stop:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen([sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          "time.sleep(3600)"])
    else:
        for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
            signal.signal(s, on_stop)
    _append(markers, f"start {task} {attempt} {time.time():.6f} {os.getpid()}")
    print(f"{task} attempt {attempt}: resuming at {done:.1f}/{args.seconds:.1f} s", flush=True)
    step = 0.05
    held = 0.0
    hold = args.hold if attempt == "1" else 0.0
    release = d / "release"
    while done < args.seconds or (held < hold and not release.exists()):
        if stop["now"]:
            notice_path = os.environ.get("MAKEWAY_PREEMPT_NOTICE")
            notice = json.loads(Path(notice_path).read_text()) if notice_path and Path(notice_path).exists() else {}
            ckpt.write_text(json.dumps({"done": done, "attempt": attempt, "notice": notice}))
            _append(markers, f"checkpoint {task} {attempt} {time.time():.6f} {done:.2f}")
            _append(markers, f"end {task} {attempt} {time.time():.6f} stopped")
            print(f"{task} attempt {attempt}: stopped at {done:.1f} s, checkpoint written", flush=True)
            return 143
        time.sleep(step)
        if done < args.seconds:
            done += step
        else:
            held += step
    ckpt.write_text(json.dumps({"done": done, "attempt": attempt, "finished": True}))
    _append(markers, f"end {task} {attempt} {time.time():.6f} finished")
    print(f"{task} attempt {attempt}: finished", flush=True)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
