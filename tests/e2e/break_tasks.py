"""Hostile task code of the breakage suite (``test_breakage_*.py``): floods of log lines,
huge and undecodable output, threads that outlive their attempt, a closed ``sys.stdout``,
and exceptions whose traceback or text is hard to render."""

from __future__ import annotations

import sys
import threading
import time

from headwater import TaskContext, task


@task(name="brk.flood", queue="cpu")
def flood(ctx: TaskContext, lines: int, width: int = 10) -> int:
    """Print ``lines`` lines of ``width`` characters each, then succeed."""
    pad = "y" * width
    for n in range(lines):
        print(f"{n} {pad}")
    return lines


def _chatter(seconds: float) -> None:
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        print(f"orphan thread line {n}", flush=True)
        time.sleep(0.05)


@task(name="brk.orphan_thread", queue="cpu")
def orphan_thread(ctx: TaskContext, seconds: float) -> str:
    """Start a thread that keeps printing for ``seconds`` after the task returns."""
    print("task line before the thread")
    threading.Thread(target=_chatter, args=(seconds,), daemon=True).start()
    return "returned"


@task(name="brk.close_stdout", queue="cpu")
def close_stdout(ctx: TaskContext) -> str:
    """Close ``sys.stdout`` (and ``sys.stderr``) from task code, then return."""
    print("before close")
    sys.stdout.close()
    sys.stderr.close()
    return "closed"


@task(name="brk.print_after", queue="cpu")
def print_after(ctx: TaskContext, tag: str) -> str:
    """Print one line and log one (the attempt after a task that closed the streams)."""
    print(f"print {tag}")
    ctx.log.info("log %s", tag)
    return tag


def _recurse(n: int) -> None:
    if n <= 0:
        raise ValueError("bottom of a deep stack")
    _recurse(n - 1)


@task(name="brk.deep", queue="cpu")
def deep(ctx: TaskContext, depth: int) -> None:
    """Raise from ``depth`` frames down."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 200))
    _recurse(depth)


class _BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ refuses")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ refuses")


@task(name="brk.bad_str", queue="cpu")
def bad_str(ctx: TaskContext) -> None:
    """Raise an exception whose ``__str__`` and ``__repr__`` raise."""
    raise _BadStr("hidden")


@task(name="brk.cycle", queue="cpu")
def cycle(ctx: TaskContext) -> None:
    """Raise an exception whose cause chain loops back to itself."""
    a = ValueError("a")
    b = KeyError("b")
    a.__cause__ = b
    b.__cause__ = a
    raise a


@task(name="brk.recursion", queue="cpu")
def recursion(ctx: TaskContext) -> None:
    """Overflow the stack (a ``RecursionError`` with ~1,000 frames)."""
    def down(n: int) -> int:
        return down(n + 1) + 1
    down(0)


@task(name="brk.huge_message", queue="cpu")
def huge_message(ctx: TaskContext, size: int) -> None:
    """Raise with a message of ``size`` characters."""
    raise RuntimeError("m" * size)


@task(name="brk.thread_prints", queue="cpu")
def thread_prints(ctx: TaskContext) -> str:
    """Print and log from a thread the task starts and joins before it returns."""
    import logging

    def work() -> None:
        print("printed by a thread of the task")
        logging.getLogger("brk.thread").warning("logged by a thread of the task")

    print("printed by the task")
    t = threading.Thread(target=work)
    t.start()
    t.join()
    return "joined"


@task(name="brk.surrogate_line", queue="cpu")
def surrogate_line(ctx: TaskContext) -> str:
    """Print a line, a line with a lone surrogate, and a line."""
    print("the line before")
    print("a lone surrogate \udc80 here")
    print("the line after")
    return "printed"


@task(name="brk.awkward_output", queue="cpu")
def awkward_output(ctx: TaskContext) -> dict[str, object]:
    """An output that is valid JSON but that PostgreSQL's jsonb does not keep as it is:
    keys out of jsonb's order, a negative zero, a U+0000."""
    return {"zebra": 1, "apple": -0.0, "mango": "nul \x00 here"}


@task(name="brk.echo_repr", queue="cpu")
def echo_repr(ctx: TaskContext, value: object) -> str:
    """``repr(value)``: what task code sees of its input, key order and all."""
    return repr(value)
