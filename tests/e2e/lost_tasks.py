"""Tasks of ``test_lost_worker``, on a queue no other test uses (only that test starts its
worker, and SIGKILLs it)."""

from __future__ import annotations

import time

from headwater import task


@task(name="lw.hold", queue="lw")
def hold(seconds: float) -> float:
    """Sleep ``seconds`` (the worker is killed long before), then return them."""
    time.sleep(seconds)
    return seconds
