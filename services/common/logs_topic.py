"""The ``logs`` topic (``Topics.logs``): task attempts' log lines, created by the workers
that write it and the projector that reads it, with its own retention.

``HEADWATER_LOGS_RETENTION_MS`` is its ``retention.ms`` when it is created (7 days by
default; -1: for ever; an existing topic keeps its own). The projection's copy of the
lines (``task_logs``) stays until the run's rows go (``projector/retention.py``).
"""

from __future__ import annotations

from services.common.kafka.client import ensure_topics
from services.common.settings import CommonSettings, env_int

LOGS_RETENTION_MS = 7 * 24 * 3600 * 1000
"""The logs topic's default ``retention.ms``: a week."""


def logs_retention_ms() -> int:
    """``HEADWATER_LOGS_RETENTION_MS``: -1 or a number of ms > 0.

    Raises:
        ValueError: another number, or none (the message names the variable).
    """
    value = env_int("LOGS_RETENTION_MS", LOGS_RETENTION_MS)
    if value == 0 or value < -1:
        raise ValueError(f"HEADWATER_LOGS_RETENTION_MS must be -1 (for ever) or a number of "
                         f"ms above 0, got {value}")
    return value


async def ensure_logs_topic(settings: CommonSettings, timeout_s: float = 60.0) -> None:
    """Create the logs topic if it does not exist, with its retention."""
    await ensure_topics(settings, [settings.topics.logs], timeout_s=timeout_s,
                        configs={"retention.ms": str(logs_retention_ms())})
