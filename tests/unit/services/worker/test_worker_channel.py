"""One attempt's reports (``ReportChannel``): in order, one at a time, never lost silently."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from headwater.core import events as ev
from services.worker.channel import ReportChannel

BASE = ("wf", "n", None, 1)


def beat(at_ms: int) -> ev.TaskHeartbeated:
    return ev.TaskHeartbeated(*BASE, at_ms)


class Recorder:
    """A ``send`` that records what it sends and how many were in flight at once."""

    def __init__(self, fail_on: int | None = None, drop_on: int | None = None) -> None:
        self.sent: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail_on = fail_on
        self.drop_on = drop_on
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, report: ev.Report) -> bool:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
            await asyncio.sleep(0.001)
            if report.at_ms == self.fail_on:
                raise RuntimeError("refused for good")
            self.sent.append(report.at_ms)
            return report.at_ms != self.drop_on
        finally:
            self.in_flight -= 1


async def test_reports_go_out_in_order_one_at_a_time() -> None:
    send = Recorder()
    channel = ReportChannel(send)
    futures = [channel.put(beat(i)) for i in range(20)]
    assert channel.busy
    await channel.close()
    assert send.sent == list(range(20))
    assert send.most_in_flight == 1
    assert [f.result() for f in futures] == [True] * 20
    assert not channel.busy


async def test_a_dropped_report_resolves_false_and_a_failed_one_raises() -> None:
    send = Recorder(fail_on=1, drop_on=2)
    channel = ReportChannel(send)
    ok, failed, dropped, after = (channel.put(beat(i)) for i in range(4))
    assert await ok is True
    with pytest.raises(RuntimeError, match="refused for good"):
        await failed
    assert await dropped is False
    assert await after is True  # the next ones still go


async def test_unawaited_failures_are_not_reported_as_never_retrieved(
        caplog: pytest.LogCaptureFixture) -> None:
    channel = ReportChannel(Recorder(fail_on=0))
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        channel.put(beat(0))
        await channel.close()
        gc.collect()
    assert "never retrieved" not in caplog.text


async def test_put_after_close_is_refused() -> None:
    channel = ReportChannel(Recorder())
    await channel.close()
    assert await channel.put(beat(1)) is False


async def test_abort_resolves_queued_and_in_flight_reports_as_dropped() -> None:
    send = Recorder()
    send.gate.clear()  # the first send hangs
    channel = ReportChannel(send)
    futures = [channel.put(beat(i)) for i in range(3)]
    await asyncio.sleep(0.01)
    channel.abort()
    assert [await f for f in futures] == [False, False, False]
    assert send.sent == []


async def test_put_wait_waits_while_too_many_are_queued() -> None:
    send = Recorder()
    send.gate.clear()
    channel = ReportChannel(send, max_queued=2)
    channel.put(beat(0))
    await asyncio.sleep(0.01)  # 0 in flight
    channel.put(beat(1))
    channel.put(beat(2))  # two queued: full
    waiting = asyncio.create_task(channel.put_wait(beat(3)))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    send.gate.set()
    await asyncio.wait_for(waiting, 1)
    await channel.close()
    assert send.sent == [0, 1, 2, 3]


async def test_last_activity_moves_with_puts_and_acknowledgements() -> None:
    channel = ReportChannel(Recorder())
    before = channel.last_activity
    await asyncio.sleep(0.01)
    future = channel.put(beat(0))
    queued = channel.last_activity
    assert queued > before
    await future
    await asyncio.sleep(0)
    assert channel.last_activity >= queued
