"""The Celery application the peer benchmark's worker serves: a no-op task and a fan-in.

Celery as its "First steps" start it: Redis as broker and as result backend
(``REDIS_URL``), every other setting its default. That default acknowledges a task
as its worker takes it (``task_acks_late=False``), before it runs: a worker killed
mid-task loses the task. Runs in the Celery peer's own venv.
"""

from __future__ import annotations

import os
import time

from celery import Celery

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
app = Celery("headwater_peers", broker=REDIS_URL, backend=REDIS_URL)


@app.task(name="peers.noop")
def noop(*_: object) -> tuple[float, float]:
    """Does nothing; returns ``(start, end)``, ``time.time()`` seconds."""
    start = time.time()
    return start, time.time()


@app.task(name="peers.fan_in")
def fan_in(results: list[tuple[float, float]]) -> tuple[float, float]:
    """A chord's body: counts the map's results; returns ``(start, end)``."""
    start = time.time()
    if not isinstance(results, list):
        raise TypeError(f"fan-in got {type(results).__name__}, not the map's results")
    return start, time.time()
