"""A benchmark's measured window (``load.window``): watches entered around it, in order,
only while given."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from load import window
from ops.sandbox import Sandbox

SANDBOX = Sandbox("p", "dsn", "http://gw", Path("/nowhere"), {}, [])


def test_watches_are_entered_around_a_window_only_while_given() -> None:
    seen: list[str] = []

    def watch(tag: str) -> window.Watch:
        @contextlib.contextmanager
        def around(sandbox: Sandbox, label: str) -> Iterator[None]:
            assert sandbox is SANDBOX
            seen.append(f"{tag} in {label}")
            yield
            seen.append(f"{tag} out {label}")
        return around

    with (window.watching(watch("a")), window.watching(watch("b")),
          window.measured(SANDBOX, "B3-light")):
        seen.append("load")
    with window.measured(SANDBOX, "B3-loaded"):
        seen.append("unwatched")
    assert seen == ["a in B3-light", "b in B3-light", "load", "b out B3-light",
                    "a out B3-light", "unwatched"]


def test_a_watch_is_left_when_the_load_fails() -> None:
    left: list[str] = []

    @contextlib.contextmanager
    def around(sandbox: Sandbox, label: str) -> Iterator[None]:
        try:
            yield
        finally:
            left.append(label)

    with (window.watching(around), pytest.raises(TimeoutError),
          window.measured(SANDBOX, "B2-spec-1-coordinator")):
        raise TimeoutError("chains did not finish")
    assert left == ["B2-spec-1-coordinator"]
