"""A task of ``test_task_logs.py``'s worker (queue ``logs``): it logs, prints, waits for a
gate file, logs again and fails."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from headwater import task
from headwater.context import TaskContext

QUEUE = "logs"


@task(name="e2e.logs.noisy", queue=QUEUE)
def noisy(ctx: TaskContext, gate: str) -> None:
    """Log with ``ctx.log`` and a logger, print to stdout and stderr, wait (up to 60 s)
    until ``gate`` exists, log once more and raise."""
    ctx.log.info("ctx line %d", 1)
    logging.getLogger("e2e.lib").warning("lib line")
    print("stdout line")
    print("stderr line", file=sys.stderr)
    deadline = time.monotonic() + 60
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ctx.log.info("after the gate")
    raise RuntimeError("as planned")
