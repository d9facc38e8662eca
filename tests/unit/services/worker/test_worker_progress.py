"""Progress from task code (``ProgressReporter``): cleaned, coalesced, never fatal."""

from __future__ import annotations

import asyncio

from headwater import codec
from headwater.core import events as ev
from services.worker.progress import ProgressReporter

BASE = ("wf", "n", None, 1)


async def test_a_lone_surrogate_in_a_message_is_replaced_before_sending() -> None:
    sent: list[ev.TaskProgressed] = []

    async def send(report: ev.TaskProgressed) -> None:
        codec.encode(report)  # raised UnicodeEncodeError before the fix
        sent.append(report)

    reporter = ProgressReporter(asyncio.get_running_loop(), BASE, send)
    await asyncio.to_thread(reporter.report, 0.5, "half \ud800 way")
    await reporter.drain()
    assert [(p.fraction, p.message) for p in sent] == [(0.5, "half ? way")]


async def test_a_progress_report_that_cannot_be_sent_does_not_fail_the_attempt() -> None:
    calls: list[str] = []

    async def send(report: ev.TaskProgressed) -> None:
        calls.append(report.message)
        raise RuntimeError("broker refused")

    reporter = ProgressReporter(asyncio.get_running_loop(), BASE, send)
    reporter.report(0.1, "first")
    await reporter.drain()  # does not raise
    assert calls == ["first"]


async def test_the_last_of_a_burst_is_sent() -> None:
    sent: list[str] = []

    async def send(report: ev.TaskProgressed) -> None:
        sent.append(report.message)

    reporter = ProgressReporter(asyncio.get_running_loop(), BASE, send)
    for i in range(5):
        reporter.report(i / 5, f"step {i}")
    await reporter.drain()
    assert sent[-1] == "step 4" and len(sent) <= 2
