"""Every anchor case in ../shared/conformance passes through the real core and models."""

import pytest

from makeway.conformance.runner import find_cases, run


@pytest.mark.parametrize("model", ["kueue", "yunikorn", "ytsaurus", "symphony"])
def test_all_cases_of_model_pass(shared, model):
    folder = shared / "conformance" / model
    cases = find_cases([folder])
    assert cases, f"no cases under {folder}"
    failed = [(o.case_id, o.result.message or (o.result.expected, o.result.got)) for o in run([folder]) if not o.result.ok]
    assert not failed, f"{len(failed)} of {len(cases)} failed: {failed[:5]}"
