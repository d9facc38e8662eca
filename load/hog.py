"""A bounded CPU hog: a separate process that keeps one core busy, for benchmarks that
measure Headwater under contention (B6).

It is bounded twice: it ends by itself ``max_s`` seconds after it started (so it stops
even if the benchmark that started it dies), and ``cpu_hog`` kills it by its pid when
the measured phase ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator

log = logging.getLogger("load.hog")

READY = b"hogging\n"
START_TIMEOUT_S = 30.0
# argv: core, seconds. Pins itself, says so, then spins until its own deadline.
HOG_CODE = """\
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
end = time.monotonic() + float(sys.argv[2])
sys.stdout.write("hogging\\n")
sys.stdout.flush()
while time.monotonic() < end:
    pass
"""


def default_core() -> int:
    """The highest-numbered core this process may run on (where the hog goes when no
    core is named)."""
    return max(os.sched_getaffinity(0))


@contextlib.asynccontextmanager
async def cpu_hog(core: int, max_s: float) -> AsyncIterator[int]:
    """Run a busy loop pinned to ``core`` while the body runs.

    Args:
        core: the CPU to keep busy (``os.sched_setaffinity``); -1: ``default_core()``.
        max_s: the hog's own deadline, seconds from its start: it exits then whatever
            happens to this process. Make it longer than the body takes.

    Yields:
        The hog's pid, once it is pinned and spinning.

    Raises:
        RuntimeError: the hog exited or did not start within ``START_TIMEOUT_S``
            (its output is in the message).
        ValueError: ``core`` is not one this process may run on.
    """
    core = default_core() if core < 0 else core
    if core not in os.sched_getaffinity(0):
        raise ValueError(f"core {core} is not among {sorted(os.sched_getaffinity(0))}")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOG_CODE, str(core), str(max_s), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)
    try:
        said = await _first_line(proc)
        if said != READY:
            raise RuntimeError(f"the CPU hog (pid {proc.pid}) did not start: {said!r}")
        log.info("CPU hog pid %d spinning on core %d for at most %.0f s", proc.pid, core, max_s)
        yield proc.pid
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()


async def _first_line(proc: asyncio.subprocess.Process) -> bytes:
    """The hog's first line of output, or a placeholder when it said nothing in time."""
    if proc.stdout is None:
        return b"(no pipe)"
    try:
        return await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
    except TimeoutError:
        return b"(nothing)"
