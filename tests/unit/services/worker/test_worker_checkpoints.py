"""Checkpoints (``ctx.checkpoint``, ``ctx.last_checkpoint``): checked before sending, in
order with the other reports, blocking sync code until acknowledged, optional to await
for async code; and the stop flag every ``ctx`` call obeys."""

from __future__ import annotations

import asyncio
import gc
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from worker_fakes import QUEUE, Sent, dispatch, make_attempt

from headwater import AttemptInfo, TaskContext, task
from headwater.core import events as ev
from headwater.errors import AttemptCancelled
from services.worker.lifecycle import live

PROBE: dict[str, Any] = {}
"""What a test shares with its task functions (they run in threads)."""


@task(name="unit.ckpt.sync", queue=QUEUE)
def save_sync(ctx: TaskContext) -> dict[str, Any]:
    ctx.checkpoint({"done": 3})
    sent: Sent = PROBE["sent"]
    # Returned only once acknowledged: the report is already out.
    return {"acknowledged": len(sent.of(ev.TaskCheckpointed)), "last": ctx.last_checkpoint}


@task(name="unit.ckpt.async", queue=QUEUE)
async def save_async(ctx: TaskContext) -> str:
    state = {"i": 1}
    ctx.checkpoint(state)  # not awaited
    state["i"] = 2  # changing it afterwards does not change what is sent
    await ctx.checkpoint(state)
    return "done"


@task(name="unit.ckpt.last", queue=QUEUE)
def last(ctx: TaskContext) -> Any:
    return ctx.last_checkpoint


@task(name="unit.ckpt.bad", queue=QUEUE)
def bad(ctx: TaskContext, kind: str) -> str:
    state = {"set": {1, 2}, "big": "x" * 500, "surrogate": "\ud800",
             "inf": {"at": None, "x": float("inf")}}[kind]
    try:
        ctx.checkpoint(state)
    except (TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return "sent"


@task(name="unit.ckpt.unawaited_failure", queue=QUEUE)
async def unawaited_failure(ctx: TaskContext) -> str:
    ctx.checkpoint({"a": 1})
    await asyncio.sleep(0.05)
    return "done"


async def run(d: ev.TaskDispatched, sent: Sent, max_output_bytes: int = 1024 * 1024) -> None:
    PROBE["sent"] = sent
    with ThreadPoolExecutor(2) as pool:
        await live(make_attempt(d, pool, sent, max_output_bytes), "w1", lambda: None)


def outcome(sent: Sent) -> Any:
    last_report = sent[-1]
    assert isinstance(last_report, ev.TaskSucceeded), sent
    return last_report.output


async def test_a_sync_checkpoint_returns_once_acknowledged() -> None:
    sent = Sent(delay_s=0.05)
    await run(dispatch("unit.ckpt.sync"), sent)
    assert outcome(sent) == {"acknowledged": 1, "last": None}
    assert [type(r).__name__ for r in sent] == ["TaskStarted", "TaskCheckpointed",
                                                 "TaskSucceeded"]
    assert sent.of(ev.TaskCheckpointed)[0].checkpoint == {"done": 3}


async def test_async_checkpoints_are_sent_in_order_before_the_outcome() -> None:
    sent = Sent(delay_s=0.01)
    await run(dispatch("unit.ckpt.async"), sent)
    assert [c.checkpoint for c in sent.of(ev.TaskCheckpointed)] == [{"i": 1}, {"i": 2}]
    assert [type(r).__name__ for r in sent][-1] == "TaskSucceeded"


async def test_the_next_attempt_reads_the_last_checkpoint() -> None:
    sent = Sent()
    await run(dispatch("unit.ckpt.last", attempt=2, checkpoint={"done": 3}), sent)
    assert outcome(sent) == {"done": 3}


@pytest.mark.parametrize(("kind", "says"), [
    ("set", "TypeError: a checkpoint must be JSON"),
    ("surrogate", "TypeError: a checkpoint must be JSON"),
    ("inf", "TypeError: a checkpoint must be JSON: NaN and Infinity are not JSON"),
    ("big", "ValueError: the checkpoint is 502 bytes, over the limit of 100 "
            "(HEADWATER_MAX_OUTPUT_BYTES)"),
])
async def test_a_bad_checkpoint_raises_in_task_code_before_anything_is_sent(
        kind: str, says: str) -> None:
    sent = Sent()
    await run(dispatch("unit.ckpt.bad", {"kind": kind}), sent, max_output_bytes=100)
    assert str(outcome(sent)).startswith(says), outcome(sent)
    assert sent.of(ev.TaskCheckpointed) == []


async def test_an_unawaited_checkpoint_that_fails_makes_no_noise(
        caplog: pytest.LogCaptureFixture) -> None:
    class Refusing(Sent):
        async def __call__(self, report: ev.Report) -> bool:
            if isinstance(report, ev.TaskCheckpointed):
                raise RuntimeError("refused")
            return await super().__call__(report)

    sent = Refusing()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        await run(dispatch("unit.ckpt.unawaited_failure"), sent)
        gc.collect()
    assert outcome(sent) == "done"
    assert "never retrieved" not in caplog.text


async def test_every_ctx_call_raises_once_the_attempt_must_stop() -> None:
    with ThreadPoolExecutor(1) as pool:
        attempt = make_attempt(dispatch("unit.ckpt.last"), pool)
        ctx = attempt.context()
        assert not ctx.stop_requested
        ctx.heartbeat()
        attempt.stop("cancelled (user asked)")
        assert ctx.stop_requested
        for call in (lambda: ctx.progress(0.5), ctx.heartbeat, lambda: ctx.checkpoint(1)):
            with pytest.raises(AttemptCancelled, match="wf/n/1 must stop: cancelled"):
                call()


async def test_a_context_outside_a_worker_checks_checkpoints_and_ignores_them() -> None:
    ctx = TaskContext(AttemptInfo("wf", "n", None, 1), last_checkpoint=[1])
    await ctx.checkpoint({"ok": True})
    with pytest.raises(TypeError):
        ctx.checkpoint({1, 2})
    assert ctx.last_checkpoint == [1] and not ctx.stop_requested
