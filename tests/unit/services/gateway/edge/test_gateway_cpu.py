"""Where a request's checks run (``edge.cpu``): on the event loop for a small body,
in a worker thread for a large one or one of unknown size."""

from __future__ import annotations

import asyncio
import threading

import pytest

from services.gateway.edge.cpu import INLINE_BODY_BYTES, inline_for, run_check


@pytest.mark.parametrize(("size", "inline"), [
    (0, True), (1, True), (INLINE_BODY_BYTES, True), (INLINE_BODY_BYTES + 1, False),
    (10 * 1024 * 1024, False), (None, False), (-1, False)])
def test_only_a_known_small_body_is_checked_on_the_loop(size: int | None,
                                                         inline: bool) -> None:
    assert inline_for(size) is inline


def _where(tag: str) -> tuple[str, int]:
    return tag, threading.get_ident()


async def test_inline_runs_here_and_otherwise_in_a_thread() -> None:
    here = threading.get_ident()
    assert await run_check(True, _where, "a") == ("a", here)
    tag, ident = await run_check(False, _where, tag="b")
    assert (tag, ident != here) == ("b", True)


def _fail() -> None:
    raise ValueError("bad value")


@pytest.mark.parametrize("inline", [True, False])
async def test_a_check_raises_alike_either_way(inline: bool) -> None:
    with pytest.raises(ValueError, match="bad value"):
        await run_check(inline, _fail)


async def test_a_thread_check_leaves_the_loop_free() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "done"

    task = asyncio.create_task(run_check(False, slow))
    await asyncio.to_thread(started.wait, 5)
    assert not task.done()  # the loop runs on while the check waits
    release.set()
    assert await task == "done"
