"""Heartbeats (``Attempt.heartbeat`` via ``lifecycle.live``): every third of the heartbeat
timeout while an attempt runs, sync code blocking its thread included; any other report
stands for one; none once the attempt has ended."""

from __future__ import annotations

import asyncio
import itertools
import time
from concurrent.futures import ThreadPoolExecutor

from worker_fakes import QUEUE, Sent, dispatch, make_attempt

from headwater import TaskContext, task
from headwater.core import events as ev
from services.worker.lifecycle import live


@task(name="unit.beat.block", queue=QUEUE)
def block(seconds: float) -> str:
    time.sleep(seconds)  # holds its thread: only the loop can heartbeat
    return "done"


@task(name="unit.beat.chatty", queue=QUEUE)
async def chatty(ctx: TaskContext, seconds: float) -> str:
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        ctx.progress(i / 100, f"step {i}")
        i += 1
        await asyncio.sleep(0.02)
    return "done"


async def run(d: ev.TaskDispatched, sent: Sent) -> None:
    with ThreadPoolExecutor(2) as pool:
        await live(make_attempt(d, pool, sent), "w1", lambda: None)


def kinds(sent: Sent) -> list[str]:
    return [type(r).__name__ for r in sent]


async def test_a_blocked_sync_task_heartbeats_every_third_of_the_timeout() -> None:
    sent = Sent()
    await run(dispatch("unit.beat.block", {"seconds": 1.0}, heartbeat_timeout_s=0.6), sent)
    beats = sent.of(ev.TaskHeartbeated)
    assert 3 <= len(beats) <= 6, kinds(sent)
    gaps = [b.at_ms - a.at_ms for a, b in itertools.pairwise(beats)]
    assert all(100 <= g <= 600 for g in gaps), gaps  # 0.2 s apart
    assert kinds(sent)[0] == "TaskStarted" and kinds(sent)[-1] == "TaskSucceeded"
    assert {(b.workflow_id, b.node, b.index, b.attempt) for b in beats} == {("wf", "n", None, 1)}


async def test_no_heartbeat_without_a_heartbeat_timeout() -> None:
    sent = Sent()
    await run(dispatch("unit.beat.block", {"seconds": 0.5}), sent)
    assert kinds(sent) == ["TaskStarted", "TaskSucceeded"]


async def test_the_interval_is_at_least_a_fifth_of_a_second() -> None:
    sent = Sent()
    await run(dispatch("unit.beat.block", {"seconds": 0.7}, heartbeat_timeout_s=0.03), sent)
    assert 2 <= len(sent.of(ev.TaskHeartbeated)) <= 4, kinds(sent)


async def test_other_reports_stand_for_heartbeats() -> None:
    sent = Sent()
    await run(dispatch("unit.beat.chatty", {"seconds": 1.0}, heartbeat_timeout_s=0.6), sent)
    assert len(sent.of(ev.TaskProgressed)) >= 5
    assert sent.of(ev.TaskHeartbeated) == []  # progress every 0.1 s resets the 0.2 s timer


async def test_heartbeats_stop_when_the_attempt_ends() -> None:
    sent = Sent()
    await run(dispatch("unit.beat.block", {"seconds": 0.5}, heartbeat_timeout_s=0.6), sent)
    count = len(sent)
    await asyncio.sleep(0.5)
    assert len(sent) == count
    assert isinstance(sent[-1], ev.TaskSucceeded)


async def test_a_slow_broker_does_not_pile_heartbeats_up() -> None:
    sent = Sent(delay_s=0.5)  # each report takes half a second to be acknowledged
    await run(dispatch("unit.beat.block", {"seconds": 1.2}, heartbeat_timeout_s=0.3), sent)
    assert len(sent.of(ev.TaskHeartbeated)) <= 3, kinds(sent)
