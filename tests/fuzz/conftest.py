"""Fixtures of the fuzzing suite (the short version of ``python -m fuzzer``) and of
the regression tests of what it found."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, REPO / "tests" / "e2e"):  # fuzzer, tests.polling; stackkit
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from stackkit import require_services  # noqa: E402


@pytest.fixture(scope="session")
def services() -> None:
    """Kafka and PostgreSQL are reachable (fails on CI, skips elsewhere, when not)."""
    require_services()
