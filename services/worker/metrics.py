"""A worker's Prometheus metrics: how long the task code of each attempt ran here.

Who counts what: the outcome of an attempt as the workflow sees it (including timeouts,
lost attempts and cancels) is counted by the coordinator, ``headwater_attempts_total``
(``services.coordinator.metrics``). A worker times the task code it ran, from its first
line to its outcome, by the outcome it reported: ``headwater_task_run_seconds``, whose
``_count`` is the attempts this worker ran (not a second count of the same outcomes: a
lost attempt's worker may never report, and a report may come after a timeout). Dead
letters are ``services.common.metrics.DEAD_LETTERS``.

The task label is the dispatch's task name, capped as the coordinator's are
(``BoundedLabels``: past ``MAX_TASK_SERIES`` names, new ones count as ``other``). A
dispatch does not carry its workflow's name, so this histogram has none; the
coordinator's ``headwater_attempts_total`` has both.
"""

from __future__ import annotations

from prometheus_client import Histogram

from headwater.core import events as ev
from services.common.metrics import DURATION_BUCKETS_S, BoundedLabels

MAX_TASK_SERIES = 100
"""The most task names with series of their own; later new names count as ``other``."""

TASK_RUN_SECONDS = Histogram(
    "headwater_task_run_seconds", "Seconds a worker ran an attempt's task code, by queue, "
    "the outcome it reported (succeeded, failed; cancelled: stopped by the coordinator "
    "without an outcome) and task.", ["queue", "outcome", "task"], buckets=DURATION_BUCKETS_S)
_TASK_LABELS = BoundedLabels(MAX_TASK_SERIES)


def attempt_ran(queue: str, task: str, outcome: ev.TaskSucceeded | ev.TaskFailed | None,
                seconds: float) -> None:
    """Time one attempt's task code.

    Args:
        queue: the queue the worker serves.
        task: the task's name (the dispatch's).
        outcome: the report it ended with; None: it was cancelled.
        seconds: how long it ran, seconds (monotonic clock).
    """
    label = ("cancelled" if outcome is None
             else "succeeded" if isinstance(outcome, ev.TaskSucceeded) else "failed")
    TASK_RUN_SECONDS.labels(queue, label, *_TASK_LABELS(task)).observe(seconds)
