"""Fixtures of the end-to-end suite: a private stack on the real Kafka and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stackkit import Stack, require_services, start_stack, stop_stack


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def services() -> None:
    """Kafka and PostgreSQL are reachable (fails on CI, skips elsewhere, when not)."""
    require_services()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One stack for the session (fresh topic prefix and database)."""
    require_services()
    home: Path = tmp_path_factory.mktemp("headwater")
    s = start_stack(home)
    try:
        yield s
    finally:
        stop_stack(s)
