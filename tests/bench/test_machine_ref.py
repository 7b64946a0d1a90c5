"""Every bench run writes the machine's reference time beside its figures."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from makeway import machine_ref


def test_the_reference_work_is_the_same_on_every_run():
    assert machine_ref._work(2_000) == machine_ref._work(2_000) > 0
    assert machine_ref.reference(1) > 0.0


def test_bench_writes_the_reference_before_and_after(tmp_path, monkeypatch):
    from makeway.cli import app

    times = iter([0.2, 0.1])
    monkeypatch.setattr(machine_ref, "reference", lambda: next(times))
    out = tmp_path / "b.json"
    res = CliRunner().invoke(app, ["bench", "--quick", "--only", "memory", "--out", str(out)])
    assert res.exit_code == 0, res.output
    ref = [f for f in json.loads(out.read_text()) if f["metric"] == "machine_reference_s"]
    assert len(ref) == 1 and ref[0]["value"] == 0.1 and (ref[0]["before"], ref[0]["after"]) == (0.2, 0.1)
