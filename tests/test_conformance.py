"""Every anchor case in ../shared/conformance, one test each, through the runner's own dispatch."""

from pathlib import Path

import pytest

from makeway.conformance.runner import find_cases, run_file

SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared").resolve()
CASES = find_cases([SHARED / "conformance"]) if (SHARED / "conformance").is_dir() else []


@pytest.mark.skipif(not CASES, reason="../shared is not beside the checkout")
@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_case_passes(path):
    outcome = run_file(path)
    r = outcome.result
    assert r.ok, f"{outcome.case_id}: expected {r.expected!r}, got {r.got!r} {r.message}"


def test_every_model_folder_has_cases():
    if not CASES:
        pytest.skip("../shared is not beside the checkout")
    assert {p.parent.parent.name for p in CASES} == {"kueue", "yunikorn", "ytsaurus", "symphony"}
