import json
from pathlib import Path

import pytest

from makeway.conformance.ytsaurus import run_case

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
CASES = SHARED / "conformance" / "ytsaurus" / "cases"


def _cases():
    if not CASES.is_dir():
        return []
    return sorted(CASES.glob("*.json"))


@pytest.mark.skipif(not CASES.is_dir(), reason="../shared is not beside the checkout")
@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.stem)
def test_case(path: Path) -> None:
    res = run_case(json.loads(path.read_text()))
    assert res.ok, f"expected {res.expected}\n got {res.got}"
