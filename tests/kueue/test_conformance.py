"""Every transcribed Kueue case through the loader (the same code the simulator model runs)."""

import json

import pytest

from makeway.conformance.kueue import run_case

from .helpers import CASES

FILES = sorted(CASES.glob("*.json")) if CASES.is_dir() else []


@pytest.mark.skipif(not FILES, reason="conformance cases not available")
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_case(path):
    result = run_case(json.loads(path.read_text()))
    assert result.ok, f"expected {result.expected}, got {result.got}"
