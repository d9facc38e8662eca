"""Fixtures of the fault-injection suite (the quick suite of ``load.faultkit``): private
deployments on the real Kafka and PostgreSQL, killed and restarted while they work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, REPO / "tests" / "e2e"):  # load.faultkit, tests.waiting; stackkit, tasks
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from stackkit import require_services  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "faults: kills Headwater's processes mid-work (real Kafka and PostgreSQL)")


@pytest.fixture(scope="session")
def services() -> None:
    """Kafka and PostgreSQL are reachable (fails on CI, skips elsewhere, when not)."""
    require_services()
