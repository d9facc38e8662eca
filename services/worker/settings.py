"""Worker settings, from ``HEADWATER_*`` variables and the command line."""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass, field

from headwater.client.http import default_url
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.selectors import parse_tag_list
from headwater.workflows.instances import DEFAULT_CACHE_SIZE
from services.common import metrics
from services.common.settings import CommonSettings, env_float, env_int, env_str
from services.worker.task_logs.attempt_log import Limits

MAX_OUTPUT_BYTES = 1024 * 1024
MAX_POLL_INTERVAL_MS = 300_000
FETCH_WAIT_MS = 500
"""The default ``HEADWATER_FETCH_WAIT_MS``: how long the broker may hold a worker's fetch
for records while none of its partitions is paused, ms (Kafka's ``fetch.max.wait.ms``,
500 by default too). While one is, the worker's fetches wait
``fetch_wait.PAUSED_FETCH_WAIT_MS`` (``fetch_wait``: why, and the figures)."""
FETCH_WAIT_RANGE_MS = (1, 500)
"""The fetch waits taken, ms."""
DRAIN_S = 30.0
ANNOUNCE_S = 1.5
"""The default ``HEADWATER_ANNOUNCE_S``, seconds: a SIGKILLed worker stops counting as
live 3 intervals (4.5 s) after its last announcement, within a task's heartbeat
interval (a third of its ``heartbeat_timeout``: 10 s by default); one record per worker
every 1.5 s is nothing for a compacted topic."""
ANNOUNCE_RANGE_S = (0.1, 60.0)
"""The announce intervals taken, seconds: below, the announcer spins (0 sends without
pause); above, liveness would lapse between two announcements (it counts 3 intervals of
at most 60 s: ``announce.MAX_LIVE_INTERVAL_MS``, which bounds a forged record's)."""


def seconds_from_env(name: str, default: float) -> float:
    """``HEADWATER_<name>``: a finite number of seconds in ``ANNOUNCE_RANGE_S`` (how
    often a worker announces itself, or looks for lanes).

    Raises:
        ValueError: not a number, or not such one (the message names the variable).
    """
    value = env_float(name, default)
    low, high = ANNOUNCE_RANGE_S
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"HEADWATER_{name} must be a number of seconds from {low:g} to "
                         f"{high:g}, got {os.environ.get(f'HEADWATER_{name}')!r}")
    return value


def announce_s_from_env() -> float:
    """``HEADWATER_ANNOUNCE_S`` (``seconds_from_env``)."""
    return seconds_from_env("ANNOUNCE_S", ANNOUNCE_S)


LANES_S = 2.0
"""The default ``HEADWATER_LANES_S``, seconds: how often a worker serving code
workflows looks for lanes to adopt or leave (``services.worker.lanes``)."""


def lanes_s_from_env() -> float:
    """``HEADWATER_LANES_S`` (``seconds_from_env``)."""
    return seconds_from_env("LANES_S", LANES_S)


def fetch_wait_ms_from_env() -> int:
    """``HEADWATER_FETCH_WAIT_MS``: a whole number of ms in ``FETCH_WAIT_RANGE_MS``.

    Raises:
        ValueError: not a whole number, or out of range (the message names the variable).
    """
    value = env_int("FETCH_WAIT_MS", FETCH_WAIT_MS)
    low, high = FETCH_WAIT_RANGE_MS
    if not low <= value <= high:
        raise ValueError(f"HEADWATER_FETCH_WAIT_MS must be a number of ms from {low} to "
                         f"{high}, got {os.environ.get('HEADWATER_FETCH_WAIT_MS')!r}")
    return value


PRIORITY_AGING_S = 60.0
"""The default ``HEADWATER_PRIORITY_AGING_S``, seconds: a dispatch that waited this long
counts one band higher (``headwater.core.priority.effective``), so a ``low`` one (2)
goes before a ``high`` one (8) just sent after 6 minutes of waiting."""
PRIORITY_AGING_RANGE_S = (0.01, 86_400.0)
"""The aging intervals taken, seconds."""


def priority_aging_s_from_env() -> float:
    """``HEADWATER_PRIORITY_AGING_S``: a finite number of seconds in
    ``PRIORITY_AGING_RANGE_S``.

    Raises:
        ValueError: not a number, or not such one (the message names the variable).
    """
    value = env_float("PRIORITY_AGING_S", PRIORITY_AGING_S)
    low, high = PRIORITY_AGING_RANGE_S
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"HEADWATER_PRIORITY_AGING_S must be a number of seconds from "
                         f"{low:g} to {high:g}, got "
                         f"{os.environ.get('HEADWATER_PRIORITY_AGING_S')!r}")
    return value


def task_log_limits_from_env() -> Limits:
    """``HEADWATER_TASK_LOG_LINE_BYTES``, ``_MAX_LINES`` and ``_MAX_BYTES``: the bounds
    of an attempt's log, each a number above 0.

    Raises:
        ValueError: one is not such a number (the message names it).
    """
    default = Limits()
    values = {}
    for attr, name in (("line_bytes", "LINE_BYTES"), ("max_lines", "MAX_LINES"),
                       ("max_bytes", "MAX_BYTES")):
        value = env_int(f"TASK_LOG_{name}", getattr(default, attr))
        if value <= 0:
            raise ValueError(f"HEADWATER_TASK_LOG_{name} must be above 0, got {value}")
        values[attr] = value
    return Limits(**values)


def checked_queue(queue: str, source: str) -> str:
    """``queue`` if it names a queue (``ids.QUEUE_PATTERN``: it is part of a topic name).

    Args:
        queue: the queue name.
        source: where it came from (``"--queue"``, ``"HEADWATER_QUEUE"``), for the message.

    Raises:
        ValueError: it does not (the message names ``source`` and the pattern).
    """
    if not QUEUE_PATTERN.fullmatch(queue):
        raise ValueError(f"{source} must be 1-64 letters, digits, _ and - "
                         f"({QUEUE_PATTERN.pattern}), got {queue[:100]!r}")
    return queue


@dataclass(frozen=True)
class Settings(CommonSettings):
    """Worker settings.

    Attributes:
        queue: the queue (worker pool) served (``HEADWATER_QUEUE``, ``--queue``; 1-64
            letters, digits, ``_`` and ``-``, ``ids.QUEUE_PATTERN``).
        task_modules: modules to import so that their ``@task`` functions register
            (``HEADWATER_TASKS``, comma-separated; ``--tasks``).
        concurrency: attempts run at once (``HEADWATER_CONCURRENCY``).
        worker_id: this process's name in reports and announcements
            (``HEADWATER_WORKER_ID``; unset: ``<HEADWATER_WORKER_NAME or the host
            name>-<pid>``, so the local stack's ``worker-cpu-1`` runs as
            ``worker-cpu-1-<pid>``).
        max_output_bytes: largest encoded ``TaskSucceeded`` report, bytes
            (``HEADWATER_MAX_OUTPUT_BYTES``, 1 MiB by default). A task whose output makes
            a larger report fails without retry ("output is N bytes, over the limit of
            M"): large results belong in object storage, with their address as output.
            Also the largest checkpoint and streamed chunk (as JSON). Keep it below
            ``max_message_bytes``.
        max_poll_interval_ms: Kafka's ``max.poll.interval.ms`` for the worker's consumer
            (``HEADWATER_MAX_POLL_INTERVAL_MS``, Kafka's default of 300 000). The worker
            keeps polling (with its partitions paused) while every slot is busy, so long
            tasks do not count against it; it only bounds how long the poll loop itself
            may stall before the group rebalances this worker's partitions away. Running
            attempts are not affected (their dispatches are committed once started).
        fetch_wait_ms: how long the broker may hold the worker's fetch while no record
            comes and none of its partitions is paused, ms (``HEADWATER_FETCH_WAIT_MS``,
            500 by default, from 1 to 500; ``FETCH_WAIT_MS``): what an idle worker's
            empty fetches cost (while one is paused: ``fetch_wait``).
        drain_s: the drain window, seconds (``HEADWATER_DRAIN_S``, 30 by default): on
            SIGTERM or SIGINT the worker stops taking dispatches and leaves its group at
            once, lets its running attempts end and report as usual for up to this long,
            then stops those still running (``TaskFailed``, ``WorkerStopped``, retried
            at once). A second signal stops them at once. Give the process manager (a
            Kubernetes ``terminationGracePeriodSeconds``) a few seconds more than this.
        announce_s: how often the worker announces itself on the workers topic, seconds
            (``HEADWATER_ANNOUNCE_S``, 1.5 by default, from 0.1 to 60); it counts as live
            for 3 intervals after its last announcement.
        gateway_url: the gateway that task code's ``ctx.call`` submits child runs to
            (``HEADWATER_GATEWAY_URL``; by default the local gateway,
            ``http://127.0.0.1:$HEADWATER_GATEWAY_PORT``).
        metrics_port: the port of this process's Prometheus endpoint, ``/metrics``
            (``HEADWATER_METRICS_PORT``, 9183 by default; 0: none: give each worker on a
            machine its own, as the local stack does), on ``metrics_host``
            (``HEADWATER_METRICS_HOST``, ``127.0.0.1``).
        task_log: the bounds of an attempt's log (``HEADWATER_TASK_LOG_LINE_BYTES``,
            ``_MAX_LINES``, ``_MAX_BYTES``: 4 KiB a line, 2,000 lines and 512 KiB an
            attempt by default).
        code_version: the version of the code it runs, named in its announcements of
            the ``@workflow``s it serves (``HEADWATER_CODE_VERSION``; unset: a digest of
            each function's source, ``services.worker.workflows``).
        lanes_s: how often a worker serving ``@workflow``s looks for lanes of other
            code versions to adopt, or to leave (``HEADWATER_LANES_S``, 2 by default,
            from 0.1 to 60; ``services.worker.lanes``): a run whose code's last worker
            stopped waits about this long, and a rebalance, before another takes it.
        tags: the tags it announces (``HEADWATER_WORKER_TAGS``, comma-separated, e.g.
            ``gpu,a100``; ``headwater.core.selectors``): it also reads the selector
            topics of its queue for every set of them (``Topics.needs_of``), so it runs
            the tasks of nodes that require them (``requires: [gpu]``).
        priority_aging_s: the wait worth one priority band, seconds
            (``HEADWATER_PRIORITY_AGING_S``, 60 by default, from 0.01 to 86,400): a free
            slot takes the waiting dispatch of the highest band plus waits
            (``services.worker.held``), so low ones are never starved.
        workflow_cache_size: the code workflow runs whose instance it keeps
            (``HEADWATER_WORKFLOW_CACHE_SIZE``, read by ``headwater.workflows.activation``:
            checked here, so that a value that is no number stops the worker naming it).
    """

    queue: str = "cpu"
    task_modules: tuple[str, ...] = ()
    concurrency: int = 8
    worker_id: str = ""
    max_output_bytes: int = MAX_OUTPUT_BYTES
    max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS
    fetch_wait_ms: int = FETCH_WAIT_MS
    drain_s: float = DRAIN_S
    announce_s: float = ANNOUNCE_S
    gateway_url: str = "http://127.0.0.1:8080"
    metrics_port: int = metrics.DEFAULT_PORTS["worker"]
    metrics_host: str = metrics.DEFAULT_HOST
    task_log: Limits = field(default_factory=Limits)
    code_version: str | None = None
    lanes_s: float = LANES_S
    tags: tuple[str, ...] = ()
    priority_aging_s: float = PRIORITY_AGING_S
    workflow_cache_size: int = DEFAULT_CACHE_SIZE

    @classmethod
    def from_env(cls, queue: str | None = None, tasks: list[str] | None = None,
                 concurrency: int | None = None) -> Settings:
        """Read the environment; explicit arguments (from the command line) win.

        Raises:
            ValueError: a numeric variable is not a number, ``HEADWATER_ANNOUNCE_S`` is
                out of range, the queue is no queue name, or a tag of
                ``HEADWATER_WORKER_TAGS`` is no tag (the message names it).
        """
        modules = tasks or [m for m in env_str("TASKS", "").split(",") if m]
        return cls(
            **cls.common_from_env(),
            queue=checked_queue(queue, "--queue") if queue else checked_queue(
                env_str("QUEUE", "cpu"), "HEADWATER_QUEUE"),
            task_modules=tuple(modules),
            concurrency=concurrency or env_int("CONCURRENCY", 8),
            worker_id=env_str("WORKER_ID",
                              f"{env_str('WORKER_NAME', socket.gethostname())}-{os.getpid()}"),
            max_output_bytes=env_int("MAX_OUTPUT_BYTES", MAX_OUTPUT_BYTES),
            max_poll_interval_ms=env_int("MAX_POLL_INTERVAL_MS", MAX_POLL_INTERVAL_MS),
            fetch_wait_ms=fetch_wait_ms_from_env(),
            drain_s=env_float("DRAIN_S", DRAIN_S),
            announce_s=announce_s_from_env(),
            gateway_url=default_url(),
            metrics_port=metrics.port_from_env("worker"),
            metrics_host=metrics.host_from_env(),
            task_log=task_log_limits_from_env(),
            code_version=env_str("CODE_VERSION", "") or None,
            lanes_s=lanes_s_from_env(),
            tags=parse_tag_list(env_str("WORKER_TAGS", ""), "HEADWATER_WORKER_TAGS"),
            priority_aging_s=priority_aging_s_from_env(),
            workflow_cache_size=env_int("WORKFLOW_CACHE_SIZE", DEFAULT_CACHE_SIZE),
        )
