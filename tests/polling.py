"""Polling in the end-to-end and fault tests, and in the fault suite's harness
(``faultsuite/``): poll for the condition itself rather than sleep a fixed time, and
stretch every time limit by one setting.

``HEADWATER_TEST_TIME_SCALE`` (default ``1``) is a positive factor applied to every
timeout, deadline and window of ``tests/e2e``, ``tests/faults`` and ``faultsuite/``:
the waits below scale the limit they are given, and a test that bounds how long
something took compares with ``scaled(seconds)``. Raise it on a slow or busy machine
(``HEADWATER_TEST_TIME_SCALE=3 make test``). A window in which something must *not*
happen (``holds_for``) is scaled as well, so that it stays long enough to see it happen.
Polling intervals, and the work a test asks for (a task that sleeps 3 s), are not.

    doc = await wait_until_async(lambda: status_of(wid), 60, f"{wid} terminal",
                                 until=lambda d: d["status"] in TERMINAL)
    wait_until(marker.exists, 10, "the marker file")
    await holds_for_async(lambda: done_count(), 6, "no stopped task finishing",
                          holds=lambda n: n == 0)
    assert took < scaled(5), took

A wait that runs out raises ``WaitTimeout`` (both an ``AssertionError`` and a
``TimeoutError``); its message names what was awaited, the limit (and how it was scaled)
and the last value observed.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

SCALE_ENV = "HEADWATER_TEST_TIME_SCALE"
"""The environment variable holding the factor of every test time limit."""
POLL_S = 0.1
"""How often a condition is checked by default, seconds (not scaled)."""
SHOWN_CHARS = 1500
"""The most characters of the last observed value a failure message shows."""


class WaitTimeout(TimeoutError, AssertionError):
    """Raised when a condition awaited did not hold within its (scaled) limit, or a
    condition that had to keep holding for a window stopped holding.

    Attributes:
        last: the last value observed (or the last error ignored), for callers that fall
            back on it.
    """

    last: object = None


def time_scale() -> float:
    """The factor of every test time limit: ``HEADWATER_TEST_TIME_SCALE``, 1 when unset.

    Raises:
        ValueError: the variable is set to something other than a positive finite number.
    """
    raw = os.environ.get(SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError as e:
        raise ValueError(f"{SCALE_ENV}={raw!r} is not a number") from e
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{SCALE_ENV}={raw!r} must be a positive finite number")
    return value


def scaled(seconds: float) -> float:
    """``seconds`` (a timeout, deadline or window) times ``time_scale()``."""
    return seconds * time_scale()


def describe_limit(seconds: float) -> str:
    """``seconds`` scaled, for a message: ``"3 s"``, or ``"9 s (3 s x 3)"`` when scaled."""
    factor = time_scale()
    if factor == 1:
        return f"{seconds:g} s"
    return f"{seconds * factor:g} s ({seconds:g} s x {SCALE_ENV}={factor:g})"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"


class _Poll:
    """One wait's bookkeeping: its deadline and the last value (or error) observed."""

    def __init__(self, limit_s: float, what: str) -> None:
        self.limit_s = limit_s
        self.what = what
        self.began = time.monotonic()
        self.deadline = self.began + scaled(limit_s)
        self.last: object = "nothing yet"

    def over(self) -> bool:
        return time.monotonic() >= self.deadline

    def timeout(self) -> WaitTimeout:
        return self._error(f"waited {describe_limit(self.limit_s)} for {self.what}; "
                           f"last observed: {_shown(self.last)}", self.last)

    def broken(self, value: object) -> WaitTimeout:
        return self._error(f"{self.what}: no longer so after "
                           f"{time.monotonic() - self.began:.1f} s of a "
                           f"{describe_limit(self.limit_s)} window; observed: {_shown(value)}",
                           value)

    @staticmethod
    def _error(message: str, last: object) -> WaitTimeout:
        error = WaitTimeout(message)  # one argument: OSError reads two as (errno, strerror)
        error.last = last
        return error


def wait_until(probe: Callable[[], T], timeout_s: float, what: str, *,
               until: Callable[[T], object] = bool,
               ignore: tuple[type[BaseException], ...] = (),
               interval_s: float = POLL_S) -> T:
    """Call ``probe()`` every ``interval_s`` until ``until(value)`` holds; return the value.

    Args:
        probe: observes the thing awaited (a count, a document, a flag).
        timeout_s: the limit, seconds, before scaling (``scaled`` is applied here).
        what: what is awaited, for the failure message ("two workers in the group").
        until: whether an observed value is the one awaited (default: it is truthy).
        ignore: exceptions of ``probe`` that mean "not yet" (kept as the last observation).
        interval_s: seconds between two observations (not scaled).

    Returns:
        The first observed value that ``until`` accepts.

    Raises:
        WaitTimeout: no such value within the scaled ``timeout_s``.
    """
    poll = _Poll(timeout_s, what)
    while True:
        try:
            value = probe()
        except ignore as e:
            poll.last = e
        else:
            if until(value):
                return value
            poll.last = value
        if poll.over():
            raise poll.timeout()
        time.sleep(interval_s)


async def wait_until_async(probe: Callable[[], Awaitable[T]] | Callable[[], T],
                           timeout_s: float, what: str, *,
                           until: Callable[[T], object] = bool,
                           ignore: tuple[type[BaseException], ...] = (),
                           interval_s: float = POLL_S) -> T:
    """``wait_until`` in a coroutine: ``probe`` may be sync or return an awaitable, and the
    pauses between observations are ``asyncio.sleep``.

    Raises:
        WaitTimeout: no accepted value within the scaled ``timeout_s``.
    """
    poll = _Poll(timeout_s, what)
    while True:
        try:
            value = await _observe(probe)
        except ignore as e:
            poll.last = e
        else:
            if until(value):
                return value
            poll.last = value
        if poll.over():
            raise poll.timeout()
        await asyncio.sleep(interval_s)


def holds_for(probe: Callable[[], T], window_s: float, what: str, *,
              holds: Callable[[T], object] = bool, interval_s: float = POLL_S) -> T:
    """Check that ``holds(probe())`` stays true for a whole window (something must *not*
    happen meanwhile); fail at the first observation where it does not.

    Args:
        probe: observes the thing watched.
        window_s: the window, seconds, before scaling (``scaled`` is applied here).
        what: what must keep holding, for the failure message ("no task finished").
        holds: whether an observed value is still acceptable (default: it is truthy).
        interval_s: seconds between two observations (not scaled).

    Returns:
        The last value observed, at the end of the window.

    Raises:
        WaitTimeout: an observation within the window that ``holds`` rejects.
    """
    poll = _Poll(window_s, what)
    while True:
        value = probe()
        if not holds(value):
            raise poll.broken(value)
        if poll.over():
            return value
        time.sleep(min(interval_s, max(0.0, poll.deadline - time.monotonic())))


async def holds_for_async(probe: Callable[[], Awaitable[T]] | Callable[[], T],
                          window_s: float, what: str, *,
                          holds: Callable[[T], object] = bool,
                          interval_s: float = POLL_S) -> T:
    """``holds_for`` in a coroutine (``probe`` sync or returning an awaitable).

    Raises:
        WaitTimeout: an observation within the scaled window that ``holds`` rejects.
    """
    poll = _Poll(window_s, what)
    while True:
        value = await _observe(probe)
        if not holds(value):
            raise poll.broken(value)
        if poll.over():
            return value
        await asyncio.sleep(min(interval_s, max(0.0, poll.deadline - time.monotonic())))


async def _observe(probe: Callable[[], Any]) -> Any:
    value = probe()
    if inspect.isawaitable(value):
        value = await value
    return value
