"""The suite's polling helper (``tests/polling.py``): it polls until the condition holds,
fails naming what it waited for and what it saw last, and scales every limit by
``HEADWATER_TEST_TIME_SCALE``. No broker needed; it is here because the e2e and fault
suites are its users."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from tests.polling import (
    SCALE_ENV,
    WaitTimeout,
    holds_for,
    holds_for_async,
    scaled,
    time_scale,
    wait_until,
    wait_until_async,
)


@pytest.fixture(autouse=True)
def unscaled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCALE_ENV, raising=False)


def test_the_scale_defaults_to_one_and_multiplies_every_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert (time_scale(), scaled(3)) == (1.0, 3)
    monkeypatch.setenv(SCALE_ENV, "2.5")
    assert (time_scale(), scaled(3)) == (2.5, 7.5)
    for bad in ("0", "-1", "inf", "nan", "fast"):
        monkeypatch.setenv(SCALE_ENV, bad)
        with pytest.raises(ValueError, match=SCALE_ENV):
            time_scale()


def test_wait_until_returns_the_first_accepted_value_without_waiting_longer() -> None:
    counter = itertools.count()
    began = time.monotonic()
    assert wait_until(lambda: next(counter), 5, "three", until=lambda n: n >= 3,
                      interval_s=0.01) == 3
    assert time.monotonic() - began < 1


def test_a_wait_that_runs_out_names_what_it_awaited_and_the_last_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCALE_ENV, "2")
    began = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        wait_until(lambda: {"members": 1}, 0.1, "two members",
                   until=lambda v: v["members"] == 2, interval_s=0.01)
    assert time.monotonic() - began >= 0.2  # 0.1 s, scaled by 2
    message = str(caught.value)
    assert "two members" in message and "{'members': 1}" in message, message
    assert f"0.1 s x {SCALE_ENV}=2" in message, message
    assert caught.value.last == {"members": 1}
    assert isinstance(caught.value, AssertionError) and isinstance(caught.value, TimeoutError)


def test_ignored_errors_mean_not_yet_and_others_propagate() -> None:
    answers = iter([ConnectionError("refused"), ConnectionError("refused"), "up"])

    def probe() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(probe, 5, "up", ignore=(ConnectionError,), interval_s=0.01) == "up"
    with pytest.raises(KeyError):
        wait_until(lambda: {}["missing"], 5, "a key")


async def test_the_async_wait_takes_sync_and_async_probes() -> None:
    counter = itertools.count()

    async def later() -> int:
        await asyncio.sleep(0)
        return next(counter)

    assert await wait_until_async(later, 5, "two", until=lambda n: n == 2,
                                  interval_s=0.01) == 2
    assert await wait_until_async(lambda: "now", 5, "now") == "now"
    with pytest.raises(WaitTimeout, match="never; last observed: False"):
        await wait_until_async(lambda: False, 0.05, "never", interval_s=0.01)


def test_holds_for_watches_the_whole_window_and_fails_at_the_first_break() -> None:
    began = time.monotonic()
    assert holds_for(lambda: 0, 0.1, "nothing done", holds=lambda n: n == 0,
                     interval_s=0.01) == 0
    assert time.monotonic() - began >= 0.1
    counter = itertools.count()
    began = time.monotonic()
    with pytest.raises(WaitTimeout, match="nothing done: no longer so") as caught:
        holds_for(lambda: next(counter), 5, "nothing done", holds=lambda n: n < 3,
                  interval_s=0.01)
    assert caught.value.last == 3 and time.monotonic() - began < 1


async def test_holds_for_async_is_the_same_in_a_coroutine() -> None:
    assert await holds_for_async(lambda: [], 0.05, "no marks", holds=lambda m: m == [],
                                 interval_s=0.01) == []
    with pytest.raises(WaitTimeout, match="observed: \\['done-1'\\]"):
        await holds_for_async(lambda: ["done-1"], 5, "no marks", holds=lambda m: m == [])
