"""Ending the coordinator process when it must not go on: at once (``exit_now``), or
replaced by a fresh coordinator (``restart``).

Neither acknowledges the batch in hand nor commits: the inputs since the last commit
are delivered again, to this process's successor or to whoever takes the partitions
(docs/operating.md, "When a process crashes"). Both are called where a batch failed half-way, an
input offset was skipped, or intents could not be carried out; the graceful stop on
SIGTERM and why a batch must not be acknowledged half-applied are the faust seam's
(``faust_seam.CoordinatorWorker``, ``faust_seam.add_input_agent``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

log = logging.getLogger("headwater.coordinator")

EXIT_UNFINISHED = 70
"""Exit status when a batch cannot be finished or restarted (sysexits ``EX_SOFTWARE``)."""


def exit_now(reason: str, status: int = EXIT_UNFINISHED) -> NoReturn:
    """End the process at once: no ``finally``, no acknowledgement, no commit. The
    inputs since the last commit are delivered again to the partitions' next owner."""
    log.critical("exiting at once: %s", reason)
    logging.shutdown()
    os._exit(status)


def restart(reason: str) -> NoReturn:
    """Replace this process with a fresh one started as it was (same pid, same command
    line: ``python -m services.coordinator``, or ``headwater serve`` with every part it
    runs), without acknowledging the current batch: it resumes from the last committed
    offsets."""
    log.critical("restarting: %s", reason)
    logging.shutdown()
    try:
        os.execv(sys.executable, relaunch_argv())
    finally:
        os._exit(EXIT_UNFINISHED)  # exec failed: exit, so that a supervisor restarts us


def relaunch_argv() -> list[str]:
    """The command line that started this process (``sys.orig_argv``: the interpreter's
    options and ``-m`` included), with this interpreter first; ``python -m
    services.coordinator`` when it is unknown."""
    given = list(getattr(sys, "orig_argv", []))
    if len(given) < 2:
        return [sys.executable, "-m", "services.coordinator"]
    return [sys.executable, *given[1:]]
