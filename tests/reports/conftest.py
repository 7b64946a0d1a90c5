import pytest

from tests.reports.helpers import QUICKSTART, SYMPHONY, run


@pytest.fixture(scope="session")
def quickstart():
    return run(QUICKSTART)


@pytest.fixture(scope="session")
def symphony():
    if not SYMPHONY.is_file():
        pytest.skip("examples/symphony is absent")
    return run(SYMPHONY)


@pytest.fixture(scope="session")
def quickstart_page(quickstart):
    from makeway.reports.html import render_report

    return render_report(quickstart)
