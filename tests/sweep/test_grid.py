"""GRID.yaml: expansion into cells, content addresses, and every bad field named (exit 2 on the CLI)."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from makeway.sweep import GridError, load_grid
from makeway.sweep.cell import cell_key
from tests.sweep.conftest import QUICKSTART, REPO, TINY_CELLS, TINY_GRID

KTH_GRID = REPO / "examples" / "studies" / "kth" / "grid.yaml"


def grid_file(tmp_path, text: str):
    p = tmp_path / "g.yaml"
    p.write_text(text)
    return p


def test_axes_collapse_for_models_that_do_not_read_them(tmp_path):
    g = load_grid(grid_file(tmp_path, TINY_GRID))
    assert len(g.cells) == TINY_CELLS
    labels = [c.label() for c in g.cells]
    assert labels == ["kueue", "yunikorn preemptionEnabled=true", "yunikorn preemptionEnabled=false",
                      "ytsaurus fair_share_starvation_timeout=5", "ytsaurus fair_share_starvation_timeout=30",
                      "symphony"]


def test_acceptance_grid_is_four_models_by_three_settings():
    g = load_grid(KTH_GRID)
    by_model: dict[str, int] = {}
    for c in g.cells:
        by_model[c.model] = by_model.get(c.model, 0) + 1
    assert by_model == {"kueue": 3, "yunikorn": 3, "ytsaurus": 3, "symphony": 3}
    assert len({cell_key(c) for c in g.cells}) == 12
    assert all(c.horizon == 2419200 and c.trace.endswith("KTH-SP2-1996-2.1-cln.swf.gz") for c in g.cells)


def test_axes_multiply_with_variants(tmp_path):
    g = load_grid(grid_file(tmp_path, f"""
configs: [{QUICKSTART}]
models: [ytsaurus]
settings: {{fair_share_starvation_timeout: [5, 30, 300]}}
model_settings:
  ytsaurus:
    - {{enable_preemption: true}}
    - {{enable_preemption: false}}
"""))
    assert len(g.cells) == 6
    assert g.cells[1].settings == {"fair_share_starvation_timeout": 5, "enable_preemption": False}


def test_key_is_content_addressed(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text((REPO / "examples" / "quickstart-trace.jsonl").read_text())
    g = load_grid(grid_file(tmp_path, TINY_GRID + f"traces: [{trace}]\n"))
    a, b = g.cells[3], g.cells[4]
    assert cell_key(a) == cell_key(dataclasses.replace(a, index=99, config_name="elsewhere.yaml"))
    assert cell_key(a) != cell_key(b)  # the setting differs
    assert cell_key(a) != cell_key(dataclasses.replace(a, horizon=100.0))
    assert cell_key(a) != cell_key(dataclasses.replace(a, config_text=a.config_text + "\n# edited\n"))
    before = cell_key(a)
    trace.write_text(trace.read_text() + "\n")
    from makeway.sweep import cell as cellmod

    cellmod._trace_hashes.clear()
    assert cell_key(a) != before  # the trace's bytes, not its name


def test_study_inputs_travel_with_each_cell_and_change_its_key(tmp_path):
    """A grid's queue map, cluster scale and SWF processors choice reach every cell (as data, so a
    remote worker reads no extra file), enter its content address, and change what it runs."""
    from makeway.sweep.cell import run_cell
    from makeway.sweep.grid import cell_config

    (tmp_path / "map.yaml").write_text("by: queue\nmap: {prod: batch}\ndefault: batch\n")
    plain = load_grid(grid_file(tmp_path, f"configs: [{QUICKSTART}]\nmodels: [kueue]\n")).cells[0]
    g = load_grid(grid_file(tmp_path, f"configs: [{QUICKSTART}]\nmodels: [kueue]\nqueue_map: map.yaml\n"
                                      "scale_cluster: 0.5\n"))
    cell = g.cells[0]
    assert cell.queue_map == {"by": "queue", "map": {"prod": "batch"}, "default": "batch"} and cell.scale == 0.5
    assert cell_key(cell) != cell_key(plain)
    assert cell_key(dataclasses.replace(cell, scale=0.25)) != cell_key(cell)
    cap = lambda c: sum(n.count * n.capacity["cpu"] for n in cell_config(c).nodes)  # noqa: E731
    assert cap(cell) == cap(plain) / 2
    inline = load_grid(grid_file(tmp_path, f"configs: [{QUICKSTART}]\nmodels: [kueue]\nqueue_map: '*=batch'\n"))
    assert inline.cells[0].queue_map == "*=batch"
    queues = {w["queue"] for w in run_cell(inline.cells[0])["results"]["workloads"]}
    assert queues == {"batch"} != {w["queue"] for w in run_cell(plain)["results"]["workloads"]}


BAD = [
    ("configs: []\n", "configs: List should have at least 1 item"),
    (f"configs: [{QUICKSTART}]\nmodel: [kueue]\n", "model: unknown field"),
    (f"configs: [{QUICKSTART}]\nmodels: [kueue, kuee]\n", "models[1]: unknown model 'kuee'"),
    ("configs: [nowhere.yaml]\n", "configs[0]:"),
    (f"configs: [{QUICKSTART}]\ntraces: [nowhere.jsonl]\n", "traces[0]:"),
    (f"configs: [{QUICKSTART}]\ntrace_format: csv\n", "trace_format: unknown format 'csv'"),
    (f"configs: [{QUICKSTART}]\nhorizon: -5\n", "horizon:"),
    (f"configs: [{QUICKSTART}]\nmodels: [kueue]\nsettings: {{fair_share_starvation_timeout: [5]}}\n",
     "settings.fair_share_starvation_timeout: no model of the grid reads it"),
    (f"configs: [{QUICKSTART}]\nmodels: [ytsaurus]\nsettings: {{fair_share_starvation_timeout: [5, 5x]}}\n",
     "settings.fair_share_starvation_timeout[1] ("),
    (f"configs: [{QUICKSTART}]\nmodels: [ytsaurus]\nsettings: {{fair_share_starvation_timeout: [5, 5]}}\n",
     "settings.fair_share_starvation_timeout[1]: 5 appears twice"),
    (f"configs: [{QUICKSTART}]\nmodels: [ytsaurus]\nsettings: {{fair_share_starvation_timeout: []}}\n",
     "settings.fair_share_starvation_timeout: give at least one value"),
    (f"configs: [{QUICKSTART}]\nmodels: [kueue]\nmodel_settings: {{yunikorn: [{{preemptionEnabled: false}}]}}\n",
     "model_settings.yunikorn: yunikorn is not one of the grid's models"),
    (f"configs: [{QUICKSTART}]\nmodels: [yunikorn]\nmodel_settings: {{yunikorn: [{{preemptionEnabled: maybe}}]}}\n",
     "model_settings.yunikorn[0] ("),
    (f"configs: [{QUICKSTART}]\nmodels: [yunikorn]\nmodel_settings: {{yunikorn: [{{preemptoinEnabled: true}}]}}\n",
     "model_settings.yunikorn[0].preemptoinEnabled: yunikorn has no model-level setting"),
    (f"configs: [{QUICKSTART}]\nmodels: [kueue]\nmodel_settings: {{kueue: {{fairSharing: [true, 3]}}}}\n",
     "model_settings.kueue.fairSharing[1] ("),
    ("- just a list\n", "the top level must be a mapping"),
    (f"configs: [{QUICKSTART}]\nqueue_map: nowhere.yaml\n", "queue_map:"),
    (f"configs: [{QUICKSTART}]\nqueue_map: '*=nope'\n", "queue 'nope'"),
    (f"configs: [{QUICKSTART}]\nscale_cluster: 0\n", "scale_cluster: 0.0 is not a factor > 0"),
    (f"configs: [{QUICKSTART}]\nswf_processors: most\n", "swf_processors: 'most' is not one of"),
]


@pytest.mark.parametrize("text,expected", BAD, ids=[e.split(":")[0] for _, e in BAD])
def test_bad_grid_names_the_field(tmp_path, text, expected):
    with pytest.raises(GridError) as exc:
        load_grid(grid_file(tmp_path, text))
    assert expected in str(exc.value)
    assert str(tmp_path / "g.yaml") in str(exc.value)


@pytest.mark.parametrize("args,expected", [
    ((), "setings: unknown field"),
    (("--executor", "slurm"), "--executor: unknown executor 'slurm'"),
    (("--jobs", "0"), "--jobs: 0 is not a positive number"),
    (("--address", "x:1"), "--address: only for --executor ray or dask"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, expected):
    from makeway import cli

    g = grid_file(tmp_path, f"configs: [{QUICKSTART}]\nmodels: [kueue]\n"
                  + ("setings: {}\n" if not args else ""))
    monkeypatch.setattr(sys, "argv", ["makeway", "sweep", str(g), "--out", str(tmp_path / "o"), *args])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0]
    assert not (tmp_path / "o").exists()
