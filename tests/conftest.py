"""Hooks for the whole suite."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


def _utf8(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes: UTF-8 cannot hold
    them, and pytest-xdist sends reports between its processes as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    """Make each report's captured output and failure text sendable (tests of lone
    surrogates in task errors log them; their reports crashed the xdist controller)."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [(title, _utf8(text)) for title, text in report.sections]
    if isinstance(report.longrepr, str):
        report.longrepr = _utf8(report.longrepr)
