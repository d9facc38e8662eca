"""Hostile ``@workflow`` code of the breakage suite (``test_breakage_code_*.py``): a
function that never awaits, steps whose results or whose decision outgrow the record
limits, typed inputs a caller can get wrong, and a parent with a child and a sleep in
flight to cancel."""

from __future__ import annotations

from typing import Any

from headwater import WorkflowContext, task, workflow


@task(name="bf.echo", queue="cpu")
def echo(x: Any = None) -> Any:
    """``x`` back."""
    return x


@task(name="bf.blob", queue="cpu")
def blob(kib: int, tag: int = 0) -> str:
    """A string of ``kib`` KiB (the output's size, near the worker's 1 MiB limit)."""
    return str(tag % 10) * (kib * 1024)


@workflow(name="bf.spin", queue="cpu", timeout=5)
async def spin(wf: WorkflowContext) -> int:
    """Never awaits: loops on the worker for ever (the activation's timeout is 5 s)."""
    n = 0
    while True:
        n += 1


@workflow(name="bf.add", queue="cpu", path="/bf/add")
async def add(wf: WorkflowContext, a: int, b: int = 1) -> int:
    """``a + b`` through a task."""
    return int(await wf.run(echo, x=a + b))


@workflow(name="bf.blobs", queue="cpu")
async def blobs(wf: WorkflowContext, n: int, kib: int = 1000) -> int:
    """``n`` tasks one after another, each returning ``kib`` KiB: every activation carries
    every result so far."""
    total = 0
    for i in range(n):
        total += len(await wf.run(blob, kib=kib, tag=i))
    return total


@workflow(name="bf.wide", queue="cpu")
async def wide(wf: WorkflowContext, n: int) -> int:
    """A gather of ``n`` tasks in one activation."""
    got = await wf.gather(*(wf.run(echo, x=i) for i in range(n)))
    return sum(got)


@workflow(name="bf.nap", queue="cpu")
async def nap(wf: WorkflowContext, seconds: float) -> float:
    """A child that sleeps."""
    await wf.sleep(seconds)
    return seconds


@workflow(name="bf.parent", queue="cpu")
async def parent(wf: WorkflowContext) -> list[Any]:
    """A child workflow (sleeping an hour) and a sleep of an hour in flight at once."""
    return await wf.gather(wf.call(nap, {"seconds": 3600}), wf.sleep(3600))


@workflow(name="bf.waiter", queue="cpu")
async def waiter(wf: WorkflowContext, n: int = 1) -> list[Any]:
    """Waits for the signal ``go`` ``n`` times; the fields of each."""
    return [await wf.signal("go", timeout=600) for _ in range(n)]


@workflow(name="bf.steps", queue="cpu")
async def steps(wf: WorkflowContext, n: int) -> int:
    """``n`` tasks one after another (``n`` activations)."""
    total = 0
    for i in range(n):
        total += int(await wf.run(echo, x=i))
    return total


@workflow(name="bf.deep", queue="cpu")
async def deep(wf: WorkflowContext, depth: int) -> int:
    """Calls itself ``depth`` levels down: each child's id is its parent's and more."""
    if depth <= 0:
        return 0
    return 1 + int(await wf.call(deep, {"depth": depth - 1}))


@workflow(name="bf.oversleep", queue="cpu")
async def oversleep(wf: WorkflowContext) -> str:
    """Sleeps 10^12 s (about 31,700 years), more than a step may ask for."""
    await wf.sleep(10 ** 12)
    return "woke"


@task(name="bf.nap_task", queue="cpu")
def nap_task(x: int, seconds: float) -> int:
    """``x`` back after ``seconds``."""
    import time

    time.sleep(seconds)
    return x


@workflow(name="bf.slow_steps", queue="cpu")
async def slow_steps(wf: WorkflowContext, n: int, seconds: float = 0.2) -> int:
    """``n`` tasks of ``seconds`` each, one after another."""
    total = 0
    for i in range(n):
        total += int(await wf.run(nap_task, x=i, seconds=seconds))
    return total


@workflow(name="bf.capped", queue="cpu", max_events=40)
async def capped(wf: WorkflowContext, n: int) -> int:
    """``n`` tasks one after another, in a history of at most 40 events."""
    total = 0
    for i in range(n):
        total += int(await wf.run(echo, x=i))
    return total
