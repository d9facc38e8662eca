"""The coordinator's graceful stop (SIGTERM), on top of faust's.

What faust-streaming 0.15 (mode-streaming 0.7) does on the first SIGTERM or SIGINT, as
observed with an instrumented coordinator (a batch held mid-way for seconds): its
``Worker`` runs ``App.stop``, which pauses every partition and suspends flow control
(events fetched from then on are skipped, not acknowledged), waits until every event a
stream had taken is acknowledged (the batch in hand and the events ``take_events`` had
buffered are applied to the end), commits, then stops the table manager, the agents
(cancelling their tasks), the consumer (committing again and sending ``LeaveGroup``, so
the group rebalances at once) and the producer (flushed); ``app.task`` coroutines (the
projector) are cancelled; the process exits 0 about a second later. A second signal is
ignored.

Two gaps remain, which this module closes:

- ``take_events`` acknowledges its batch in a ``finally`` when its generator is closed,
  also after the agent was cancelled half-way through the batch; the consumer's next
  commit would then commit a batch whose events were not all published or whose
  snapshots were not written. :func:`finish` runs the batch to its end even when the
  agent is cancelled meanwhile; if it cannot, the process exits at once, acknowledging
  nothing (the inputs are delivered again to whoever takes the partitions).
- a batch that fails while the coordinator stops must not ``restart`` it in place: it
  exits (``exit_now``).

:class:`CoordinatorWorker` logs the stop and makes a second signal exit at once.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import NoReturn

import faust

from services.common.finishing import Unfinished, finish

__all__ = ["EXIT_UNFINISHED", "CoordinatorWorker", "Unfinished", "exit_now", "finish"]

log = logging.getLogger("headwater.coordinator")

EXIT_UNFINISHED = 70
"""Exit status when a batch cannot be finished or restarted (sysexits ``EX_SOFTWARE``)."""


def exit_now(reason: str, status: int = EXIT_UNFINISHED) -> NoReturn:
    """End the process at once: no ``finally``, no acknowledgement, no commit. The
    inputs since the last commit are delivered again to the partitions' next owner."""
    log.critical("exiting at once: %s", reason)
    logging.shutdown()
    os._exit(status)


class CoordinatorWorker(faust.Worker):
    """faust's worker, logging the stop; a second SIGTERM or SIGINT exits at once."""

    def _on_sigterm(self) -> None:
        self._on_signal(signal.SIGTERM)

    def _on_sigint(self) -> None:
        self._on_signal(signal.SIGINT)

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._signal_stop_time:
            exit_now(f"a second {sig.name} while stopping", 128 + sig.value)
        log.warning("coordinator stopping (%s): finishing the batch in hand, committing, "
                 "leaving the group; a second signal exits at once", sig.name)
        self._stopping_since = time.monotonic()
        if sig is signal.SIGTERM:
            super()._on_sigterm()
        else:
            super()._on_sigint()

    def stop_and_shutdown(self) -> None:
        """faust's stop, then a line saying how long it took."""
        super().stop_and_shutdown()
        since = getattr(self, "_stopping_since", None)
        if since is not None:
            log.warning("coordinator stopped %.1f s after the signal", time.monotonic() - since)
