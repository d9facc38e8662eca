"""Giving freed memory back: on Linux (glibc) the pages of freed allocations leave
the process's RSS."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from services.common import heap

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc_trim, /proc")


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def held_then_freed(count: int, size: int) -> bytes:
    """Allocate ``count`` blocks of ``size`` bytes from malloc's heap (past CPython's
    small-object allocator, under glibc's mmap threshold), free all but the last: the
    last keeps the heap's top where it is, so only a trim gives the pages back."""
    blocks = [bytes([i % 251]) * size for i in range(count)]
    last = blocks[-1]
    del blocks
    return last


def test_freed_pages_leave_the_rss_after_a_release() -> None:
    heap.release_free_memory()
    last = held_then_freed(60_000, 1_000)  # about 60 MiB
    before = rss_kib()
    assert heap.release_free_memory() is True
    assert before - rss_kib() > 30 * 1024
    assert len(last) == 1_000


def test_the_async_release_runs_and_never_raises(monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def trim(pad: int) -> int:
        calls.append(pad)
        return 1

    monkeypatch.setattr(heap, "_malloc_trim", lambda: trim)
    asyncio.run(heap.release_in_thread())
    assert calls == [0]

    def broken() -> None:
        raise OSError("no heap")

    monkeypatch.setattr(heap, "release_free_memory", broken)
    with caplog.at_level(logging.WARNING, logger=heap.__name__):
        asyncio.run(heap.release_in_thread())  # logged, not raised
    assert "cannot give free memory back: OSError: no heap" in caplog.text
