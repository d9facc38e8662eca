"""Tasks of ``test_priorities``, on queues no other test uses (only that test starts
their workers)."""

from __future__ import annotations

import time

from headwater import task


@task(name="prio.nap", queue="prio-q")
def nap(s: float) -> float:
    """Sleep ``s`` seconds."""
    time.sleep(s)
    return s


@task(name="prio.nap_aged", queue="prio-age-q")
def nap_aged(s: float) -> float:
    """Sleep ``s`` seconds (on the queue whose worker ages fast)."""
    time.sleep(s)
    return s
