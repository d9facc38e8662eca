"""Fixtures of the fault-injection suite (the quick suite of ``faultsuite``): private
deployments on the real Kafka and PostgreSQL, killed and restarted while they work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, REPO / "tests" / "e2e"):  # faultsuite, tests.polling; stackkit, tasks
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from faultcheck import assert_schedule_ran, explain  # noqa: E402
from stackkit import require_services  # noqa: E402

from faultsuite import bulk  # noqa: E402
from faultsuite.audit import EndState  # noqa: E402
from faultsuite.batch import ALL_SHAPES, Submission  # noqa: E402
from faultsuite.run import Plan, run  # noqa: E402
from faultsuite.suite import QUICK  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "faults: kills Headwater's processes mid-work (real Kafka and PostgreSQL)")


@pytest.fixture(scope="session")
def services() -> None:
    """Kafka and PostgreSQL are reachable (fails on CI, skips elsewhere, when not)."""
    require_services()


@pytest.fixture(scope="session")
def batch() -> list[Submission]:
    """The quick suite's batch, the same in every fault run."""
    return QUICK.batch()


@pytest.fixture(scope="session")
def expected(services: None, batch: list[Submission]) -> dict[str, EndState]:
    """The outcome of each workflow of ``batch`` in a fault-free run (one for the
    session: the fault points' and the infrastructure faults' runs compare with it)."""
    base = run(Plan("baseline"), batch)
    assert base.violations == [], explain(base)
    # One workflow per shape, the rerun of the rerun shape's, the bulk cancel's labelled
    # workflows, the child shape's 3 children and the code shape's child; "failing"
    # fails, and so do the rerun shape's first run and the deadline shape's run (its
    # child workflow cancelled); the bulk cancel cancels its labelled ones.
    assert len(batch) == len(ALL_SHAPES) + 1 + bulk.RUNS
    assert base.figures["statuses"] == {"succeeded": len(ALL_SHAPES) - 3 + 1 + 3 + 1,
                                        "failed": 3, "cancelled": 1 + bulk.RUNS}, explain(base)
    # Two runs by definition name (version 1 pinned, and the latest: 2), the children
    # of the kind: workflow node that names fault-child-inner, and the code shape's
    # child (a @workflow called by the function: its name, no version).
    assert base.figures["definitions_run"] == {
        "fault-diamond@1": 1, "fault-diamond@2": 1, "fault-child-inner@1": 3,
        "fault.code_child@?": 1}, explain(base)
    assert base.figures["code"]["replayed"] == 2, explain(base)  # the run and its child
    assert_schedule_ran(base)
    return base.outcomes()
