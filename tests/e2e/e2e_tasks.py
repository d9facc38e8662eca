"""Tasks used only by the end-to-end suite (the stack's worker imports this module)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from headwater import NonRetryableError, TaskContext, task


@task(name="e2e.flaky", queue="cpu")
def flaky(ctx: TaskContext, succeed_on: int, value: object = None) -> dict[str, object]:
    """Fail every attempt before ``succeed_on``, then return the attempt number."""
    if ctx.attempt < succeed_on:
        raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
    return {"attempt": ctx.attempt, "value": value}


@task(name="e2e.fatal", queue="cpu")
def fatal() -> None:
    """Fail without retry."""
    raise NonRetryableError("this input can never work")


@task(name="e2e.sleep", queue="cpu")
async def sleep(seconds: float) -> float:
    """Sleep, then return how long."""
    await asyncio.sleep(seconds)
    return seconds


@task(name="e2e.big_output", queue="cpu")
def big_output(size: int) -> str:
    """Return a string of ``size`` characters (over the output limit when large)."""
    return "x" * size


@task(name="e2e.surrogate_error", queue="cpu")
def surrogate_error() -> None:
    """Raise with a lone surrogate in the message, which UTF-8 cannot encode."""
    raise RuntimeError("bad \ud800 byte")


@task(name="e2e.surrogate_progress", queue="cpu")
def surrogate_progress(ctx: TaskContext) -> str:
    """Report progress with a lone surrogate in the message, then succeed."""
    ctx.progress(0.5, "half \udc80 way")
    return "done"


@task(name="e2e.exit", queue="cpu")
def exit_(kind: str) -> None:
    """Raise ``SystemExit`` (``kind="exit"``) or ``KeyboardInterrupt`` from task code."""
    if kind == "exit":
        raise SystemExit(1)
    raise KeyboardInterrupt


@task(name="e2e.aexit", queue="cpu")
async def aexit() -> None:
    """Raise ``SystemExit`` from an async task."""
    await asyncio.sleep(0)
    raise SystemExit(2)


@task(name="e2e.marked_sleep", queue="cpu")
async def marked_sleep(ctx: TaskContext, seconds: float, marks: str) -> int | None:
    """Sleep, leaving files in the directory ``marks``: ``started-<index>`` when the
    attempt starts, then one that says how it ended: ``done-<index>`` or
    ``stopped-<index>`` (the worker cancelled it)."""
    where = Path(marks)
    (where / f"started-{ctx.index}").write_text(str(time.time()))
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        (where / f"stopped-{ctx.index}").write_text(str(time.time()))
        raise
    (where / f"done-{ctx.index}").write_text(str(time.time()))
    return ctx.index


@task(name="e2e.hang_first", queue="cpu")
def hang_first(ctx: TaskContext, seconds: float) -> dict[str, int]:
    """Block the first attempt's thread for ``seconds`` (its worker heartbeats meanwhile,
    long enough to be killed); later attempts return at once."""
    if ctx.attempt == 1:
        time.sleep(seconds)
    return {"attempt": ctx.attempt}


GATE_S = 60.0
"""The longest a streaming task waits at its gate, seconds (then it goes on regardless)."""


def _gate_open(gate: str | None) -> bool:
    return gate is None or Path(gate).exists()


@task(name="e2e.stream", queue="cpu")
def stream(words: list[str], pause: float, gate: str | None = None) -> Iterator[str]:
    """Yield ``words`` one by one, ``pause`` seconds apart (a sync generator); with
    ``gate``, the words after the first wait (up to ``GATE_S``) for the file ``gate`` to
    exist: the test creates it once the first word has reached it."""
    for i, word in enumerate(words):
        waited_since = time.monotonic()
        while i and not _gate_open(gate) and time.monotonic() - waited_since < GATE_S:
            time.sleep(0.02)
        time.sleep(pause)
        yield word


@task(name="e2e.astream", queue="cpu")
async def astream(words: list[str], pause: float, gate: str | None = None,
                  ) -> AsyncIterator[str]:
    """``e2e.stream`` as an async generator."""
    for i, word in enumerate(words):
        waited_since = time.monotonic()
        while i and not _gate_open(gate) and time.monotonic() - waited_since < GATE_S:
            await asyncio.sleep(0.02)
        await asyncio.sleep(pause)
        yield word


@task(name="e2e.resume", queue="cpu")
def resume(ctx: TaskContext, total: int, crash_after: int) -> dict[str, object]:
    """Process items ``0..total-1``, checkpointing ``{"done": n}`` after each, from the
    last checkpoint on; the first attempt crashes after ``crash_after`` items."""
    start = ctx.last_checkpoint["done"] if ctx.last_checkpoint else 0
    processed = []
    for i in range(start, total):
        processed.append(i)
        ctx.checkpoint({"done": i + 1})  # returns once Kafka has it
        if ctx.attempt == 1 and i + 1 == crash_after:
            raise RuntimeError(f"crashed after {crash_after} items")
    return {"attempt": ctx.attempt, "resumed_from": start, "processed": processed}


@task(name="e2e.aresume", queue="cpu")
async def aresume(ctx: TaskContext, total: int, crash_after: int) -> dict[str, object]:
    """``e2e.resume`` as async code (its checkpoints are awaited only at the crash)."""
    start = ctx.last_checkpoint["done"] if ctx.last_checkpoint else 0
    processed = []
    for i in range(start, total):
        processed.append(i)
        saved = ctx.checkpoint({"done": i + 1})
        if ctx.attempt == 1 and i + 1 == crash_after:
            await saved
            raise RuntimeError(f"crashed after {crash_after} items")
        await asyncio.sleep(0)
    return {"attempt": ctx.attempt, "resumed_from": start, "processed": processed}


@task(name="e2e.halfway", queue="cpu")
async def halfway(ctx: TaskContext, seconds: float) -> str:
    """Report progress 0.5 "halfway", then sleep ``seconds`` before finishing."""
    ctx.progress(0.5, "halfway")
    await asyncio.sleep(seconds)
    return "done"


@task(name="e2e.q2_marked_sleep", queue="q2")
async def q2_marked_sleep(ctx: TaskContext, seconds: float, marks: str) -> int | None:
    """``e2e.marked_sleep`` for the queue ``q2`` (which has no worker until a test adds one)."""
    return await marked_sleep(ctx, seconds, marks)


@task(name="e2e.digest", queue="cpu")
async def digest(value: object, salt: str = "", seconds: float = 0.0) -> str:
    """Sleep ``seconds``, then return 16 hex digits of SHA-256 over ``salt`` and ``value``
    (JSON, sorted keys): the same input gives the same output on every attempt, so a run
    under injected faults can be compared with a fault-free one (``faultsuite``)."""
    import hashlib
    import json

    await asyncio.sleep(seconds)
    text = json.dumps([salt, value], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@task(name="e2e.inflate", queue="cpu")
async def inflate(value: object, size: int) -> dict[str, object]:
    """A value of about ``size`` bytes of JSON that depends on ``value`` alone: its
    digest, and a text of ``size`` characters made of it. Over the claim check's
    threshold it leaves its worker by reference (``headwater/blobs.py``), and a task
    that digests it gets it back whole."""
    import hashlib
    import json

    seed = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
    return {"seed": seed[:16], "text": (seed * (size // len(seed) + 1))[:size]}


@task(name="e2e.refuse_digest", queue="cpu")
async def refuse_digest(value: object, refuse: object = None, salt: str = "",
                        seconds: float = 0.0) -> str:
    """``e2e.digest``, except that a ``value`` equal to ``refuse`` fails for good (a bad
    input that a rerun with another ``refuse`` gets past)."""
    if value == refuse:
        raise NonRetryableError(f"{value!r} is refused")
    return await digest(value, salt, seconds)


@task(name="e2e.flaky_digest", queue="cpu")
async def flaky_digest(ctx: TaskContext, value: object, succeed_on: int,
                       seconds: float = 0.0) -> str:
    """``e2e.digest`` that fails every attempt before ``succeed_on``: retried, yet with
    an output that does not depend on the attempt that succeeded."""
    if ctx.attempt < succeed_on:
        raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
    return await digest(value, "flaky", seconds)


@task(name="e2e.counted_sleep", queue="cpu")
async def counted_sleep(ctx: TaskContext, seconds: float, runs: str) -> int:
    """Append the attempt's number as a line to the file ``runs`` (every run of the task
    code leaves one), then sleep ``seconds`` (heartbeating meanwhile); return the
    attempt."""
    with open(runs, "a") as f:
        f.write(f"{ctx.attempt}\n")
    await asyncio.sleep(seconds)
    return ctx.attempt


@task(name="e2e.decide", queue="cpu")
def decide(input: dict[str, object], transcript: list[dict[str, object]], step: int,
           tools: list[str], spent: float = 0.0) -> dict[str, object]:
    """A loop's decide task with a fixed policy: call ``input["tool"]`` (default the
    first tool) on the last tool output (the loop's ``input["seed"]`` at first; the tool
    sleeps ``input["seconds"]``, default 0) until
    ``input["steps"]`` tools have run, then finish with the last output. It reports
    ``input["spend"]`` (default 1) per step against the loop's budget."""
    steps = input.get("steps", 3)
    assert isinstance(steps, int)
    spend = input.get("spend", 1)
    last = transcript[-1]["output"] if transcript else input.get("seed")
    if len(transcript) >= steps:
        return {"finish": {"last": last, "steps": len(transcript)}, "spend": spend}
    tool = input.get("tool", tools[0])
    tool_input = {"value": last, "salt": f"step{step}", "seconds": input.get("seconds", 0)}
    return {"tool": tool, "input": tool_input, "spend": spend}


@task(name="e2e.words", queue="cpu")
def words(text: object, marks: str, index: int) -> list[str]:
    """Append ``index`` as a line to the file ``marks`` (every run of the task code leaves
    one), then split ``text`` into words: a text that is not a string raises
    ``AttributeError`` (a bad input a rerun fixes), after 2 s, so that the other items of
    its map have ended first (a map fails fast, cancelling the items still running)."""
    with open(marks, "a") as f:
        f.write(f"{index}\n")
    if not isinstance(text, str):
        time.sleep(2)
    return text.split()  # type: ignore[attr-defined]


def _fields_of(value: object) -> list[str]:
    """Split a comma-separated value (an ``AttributeError`` for a number)."""
    return value.split(",")  # type: ignore[attr-defined]


@task(name="e2e.split_fields", queue="cpu")
def split_fields(value: object) -> list[str]:
    """Return the fields of ``value``; raises inside ``_fields_of`` when it is no string."""
    fields = _fields_of(value)
    return fields


@task(name="e2e.logs_then_fail", queue="cpu")
def logs_then_fail(ctx: TaskContext, lines: int, message: str) -> None:
    """Log ``lines`` numbered lines through ``ctx.log`` and print one, then raise
    ``ValueError(message)`` from a helper (a traceback two frames deep)."""
    for n in range(lines):
        ctx.log.info("step %d of %d", n + 1, lines)
    print("printed before the failure")
    _fail_with(message)


def _fail_with(message: str) -> None:
    raise ValueError(message)


@task(name="e2e.logs_slowly", queue="cpu")
async def logs_slowly(ctx: TaskContext, lines: int, pause: float) -> int:
    """Log ``tick <n>`` through ``ctx.log`` every ``pause`` seconds, ``lines`` times."""
    for n in range(lines):
        ctx.log.info("tick %d", n + 1)
        await asyncio.sleep(pause)
    return lines


@task(name="e2e.call_one", queue="cpu")
async def call_one(ctx: TaskContext, definition: str, input: Any = None) -> Any:
    """Run one child of the stored ``definition`` (``ctx.acall``) and return its output:
    the child is linked to this run, which cancels it when it ends."""
    return await ctx.acall(definition, input)
