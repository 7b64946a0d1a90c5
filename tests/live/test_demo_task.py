"""The demo task's ``--hold``: a first attempt stays alive after its work until stopped or released, and a
restarted attempt does not wait."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def _start(tmp, attempt: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, MAKEWAY_TASK_ID="j/0/0", MAKEWAY_ATTEMPT=attempt)
    return subprocess.Popen([sys.executable, "-m", "makeway.live.demo_task", "--seconds", "0.1",
                             "--checkpoint", str(tmp), *extra], env=env, stdout=subprocess.DEVNULL)


def _markers(tmp) -> list[list[str]]:
    path = tmp / "markers.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def test_a_held_first_attempt_runs_until_its_stop_signal_and_checkpoints_its_finished_work(tmp_path):
    proc = _start(tmp_path, "1", "--hold", "60")
    deadline = time.monotonic() + 30
    while not any(m[0] == "start" for m in _markers(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # past its 0.1 s of work
    assert proc.poll() is None, "the held attempt ended on its own"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    ckpt = json.loads((tmp_path / "j_0_0.json").read_text())
    assert ckpt["done"] >= 0.1 - 1e-6
    assert [m[0] for m in _markers(tmp_path)] == ["start", "checkpoint", "end"]


def test_a_restarted_attempt_is_not_held(tmp_path):
    proc = _start(tmp_path, "2", "--hold", "60")
    assert proc.wait(timeout=30) == 0
    assert [m[0] for m in _markers(tmp_path)][-1] == "end" and _markers(tmp_path)[-1][-1] == "finished"


def test_a_release_file_ends_the_hold(tmp_path):
    proc = _start(tmp_path, "1", "--hold", "60")
    deadline = time.monotonic() + 30
    while not any(m[0] == "start" for m in _markers(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the held attempt ended before its release"
    (tmp_path / "release").touch()
    assert proc.wait(timeout=30) == 0
    assert _markers(tmp_path)[-1][0] == "end" and _markers(tmp_path)[-1][-1] == "finished"
