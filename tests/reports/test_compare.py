import re

import pytest

from makeway.errors import MakewayError
from makeway.reports.compare import compare_rows, render_compare
from tests.reports.helpers import full, minimal


def test_rows_have_one_value_per_run(quickstart, symphony):
    rows = compare_rows([quickstart, symphony, minimal()], ["qs", "sym", "tiny"])
    assert rows[0] == ("run", ["qs", "sym", "tiny"])
    assert all(len(vals) == 3 for _, vals in rows)
    table = dict(rows)
    assert table["model"] == ["kueue", "symphony", "kueue"]
    assert table["preemptions"][0] == str(quickstart["summary"]["preemptions"])
    assert table["preemptions"][1] == str(symphony["summary"]["preemptions"])
    assert table["wait p99"][2] == "-"  # absent in an old-style results file
    assert "utilisation cpu" in table and "utilisation slots" in table
    assert table["utilisation slots"][0] == "-"


def test_rows_missing_everywhere_are_dropped():
    names = [n for n, _ in compare_rows([minimal(), minimal()], ["a", "b"])]
    assert "wait p99" not in names
    assert "wait p95" in names
    assert "queue team-a wait p95" in names


def test_label_count_must_match():
    with pytest.raises(MakewayError):
        compare_rows([minimal()], ["a", "b"])
    with pytest.raises(MakewayError):
        render_compare([], [])


def test_html_has_a_column_per_run_and_overlaid_figures(quickstart, symphony):
    page = render_compare([quickstart, symphony, full()], ["qs", "sym", "full"])
    assert "<tr><th>metric</th><th>qs</th><th>sym</th><th>full</th></tr>" in page
    assert len(re.findall(r"<svg\b", page)) >= 3
    assert "qs (n=5)" in page  # overlaid wait CDF legend
    assert "Cumulative preemptions over time" in page
    assert page == render_compare([quickstart, symphony, full()], ["qs", "sym", "full"])
