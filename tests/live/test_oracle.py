"""The live tests' overlap oracle (``harness.overlapping_runs``) on hand-made marker files.

The first row is the storm run that failed CI on 2026-11-29: attempt 2 of batch-25/0/1 was preempted
4 ms after its start line, before its shell had set its trap, so it died of SIGTERM with no end line;
its supervisor recorded the exit 2.5 s before attempt 3 started. That is no overlap, and the oracle
must say so; it must still catch a real one.
"""

from __future__ import annotations

import json

import pytest

from tests.live.harness import overlapping_runs

T = "batch-25/0/1"
START1, END1 = f"start {T} 1 1795937168.803201716 23798", f"end {T} 1 1795937169.057109437 stopped"
START2 = f"start {T} 2 1795937170.730400176 23838"
START3 = f"start {T} 3 1795937173.317263579 23877"
END2 = f"end {T} 2 1795937170.790000000 stopped"


def write(tmp, lines: list[str], exits: dict[str, float]) -> None:
    (tmp / "ck").mkdir()
    (tmp / "ck" / "markers.log").write_text("".join(line + "\n" for line in lines))
    for attempt, ended in exits.items():
        d = tmp / "agent" / "n1" / "attempts" / attempt.replace("/", "_").replace("#", "_")
        d.mkdir(parents=True)
        (d / "spec.json").write_text(json.dumps({"attempt": attempt}))
        (d / "exit.json").write_text(json.dumps({"exit_code": None, "signal": 15, "ended": ended}))


@pytest.mark.parametrize("lines, exits, want", [
    pytest.param([START1, END1, START2, START3], {f"{T}#2": 1795937170.7893867}, [],
                 id="killed-before-its-trap-then-recorded-by-its-supervisor"),
    pytest.param([START1, END1, START2, START3], {}, [f"{T}: attempt 3 started while 2 ran"],
                 id="no-end-line-and-no-exit-record"),
    pytest.param([START1, END1, START2, START3], {f"{T}#2": 1795937174.0}, [f"{T}: attempt 3 started while 2 ran"],
                 id="exit-recorded-after-the-next-start"),
    pytest.param([START1, END1, START2, START3], {f"{T}#1": 1795937169.1}, [f"{T}: attempt 3 started while 2 ran"],
                 id="another-attempts-exit-does-not-count"),
    pytest.param([START1, END1, START2, END2, START3], {}, [], id="end-lines-in-order"),
    pytest.param([START1, START2, END1], {}, [f"{T}: attempt 2 started while 1 ran"], id="plain-overlap"),
])
def test_overlap_oracle(tmp_path, lines, exits, want):
    write(tmp_path, lines, exits)
    assert overlapping_runs(tmp_path) == want
