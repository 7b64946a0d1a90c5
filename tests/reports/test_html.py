import copy
import re

import pytest

from makeway.reports.html import render_report
from tests.reports.helpers import full, minimal


def svgs(page: str) -> int:
    return len(re.findall(r"<svg\b", page))


def no_external_assets(page: str) -> None:
    assert "<link" not in page
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']https?:""", page)


def test_quickstart_report_embeds_figures_and_key_numbers(quickstart, quickstart_page):
    page = quickstart_page
    assert page.startswith("<!DOCTYPE html>")
    assert svgs(page) >= 5
    no_external_assets(page)
    s = quickstart["summary"]
    assert "makeway report: quickstart" in page
    from makeway.reports.derive import fmt_seconds

    assert fmt_seconds(s["wait_p95_s"]) in page
    assert f"{s['utilisation']['cpu']:.1%}" in page
    for q in ("prod", "batch"):
        assert f"<td>{q}</td>" in page


def test_report_is_deterministic(quickstart, quickstart_page):
    assert render_report(copy.deepcopy(quickstart)) == quickstart_page


def test_symphony_report_lists_preemptions_with_rules(symphony):
    page = render_report(symphony)
    assert "rank-preemption" in page
    assert "symphony/rank-preemption" in page
    assert "no preemptions" not in page


def test_minimal_results_render_with_fallbacks():
    page = render_report(minimal())
    assert "Mean utilisation (no time series in results)" in page
    assert "No per-queue time series" in page
    assert "InCohortReclamation" in page
    assert "Quota convergence" not in page
    # wasted work per queue is derived from evicted x preempt resources when the queue block is absent
    assert "cpu 200 x s" in page


def test_full_results_render_optional_blocks():
    page = render_report(full())
    assert "Quota convergence" in page
    assert "Fairness over time" in page
    assert "Dominant share (solid) vs fair share (dashed)" in page
    assert "wait p99" in page
    assert "0.875" in page  # Jain mean
    assert svgs(page) == 8  # the preemption matrix too


def test_last_n_decisions_limits_the_table():
    r = minimal()
    page = render_report(r, last_decisions=1)
    assert "Last 1 of 3 decisions" in page
    assert "queue team-a is at its max" not in page


@pytest.mark.parametrize("results", [{}, {"workloads": [], "events": []}, {"summary": {}, "timeseries": {"t": []}}])
def test_empty_results_still_render(results):
    page = render_report(results)
    assert "No preemptions, notes or config changes" in page


def test_text_is_escaped():
    r = minimal()
    r["events"][1]["message"] = "<script>alert(1)</script>"
    page = render_report(r)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page
