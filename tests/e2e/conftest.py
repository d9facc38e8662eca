"""Fixtures of the end-to-end suite: a private stack on the real Kafka and PostgreSQL."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # tests.polling, whichever way pytest was started
    sys.path.append(str(REPO))

from stackkit import Stack, private_stack, require_services, set_home, start_stack, stop_stack  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _home_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test leaves ``HEADWATER_HOME`` as it found it. Sandboxes point it at themselves
    (``localstack``'s pid files and logs); a test that leaves it pointing elsewhere
    makes the next test start and look for its processes in another sandbox's home.
    Put back, and the leaking test fails at its teardown, named."""
    before = os.environ.get("HEADWATER_HOME")
    yield
    after = os.environ.get("HEADWATER_HOME")
    if after != before:
        set_home(before)
        pytest.fail(f"{request.node.nodeid} left HEADWATER_HOME at {after} (found {before})")


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


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack for one module, whose workflows and consumer-group members other
    tests must not see (sandboxes set ``HEADWATER_HOME`` for localstack's pid files: put
    back the session's, and set this one's again to stop it)."""
    with private_stack(tmp_path_factory.mktemp("own")) as stack:
        yield stack


