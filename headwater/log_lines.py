"""The record of the ``logs`` topic (``Topics.logs``): lines a task attempt logged.

A worker captures what task code logs (``ctx.log``, the ``logging`` module) and prints
while an attempt runs (``services.worker.task_logs``) and sends it in batches, keyed by
workflow id; the projector writes it into ``task_logs`` and the gateway serves it
(``GET /v1/workflows/{id}/tasks/{node}/{index}/logs``). ``headwater.codec`` encodes it
(``schemas/avro/TaskLogLines.avsc``). It is no workflow record: nothing of a run's
history depends on it, and it never passes through the coordinator. Lines are numbered
from 1 per attempt, so a batch sent twice (at-least-once) writes the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

STREAMS = ("log", "stdout", "stderr")
"""Where a line came from: a ``logging`` record (``ctx.log`` included), or a write to
``sys.stdout`` or ``sys.stderr``."""


@dataclass(frozen=True)
class LogLine:
    """One line (the fields of ``TaskLogLines.avsc``'s ``TaskLogLine``).

    Attributes:
        at_ms: when it was logged or written, ms since the epoch (the worker's clock).
        level: the ``logging`` level name (``INFO``, ``WARNING``...); ``INFO`` for
            stdout and ``ERROR`` for stderr.
        stream: one of ``STREAMS``.
        logger: the logger's name (``headwater.task`` for ``ctx.log``); ``""`` for a
            stream.
        message: the text, without its line end; a record's traceback follows its
            message on the next lines of the same text.
    """

    at_ms: int
    level: str
    stream: str
    logger: str
    message: str


@dataclass(frozen=True)
class TaskLogLines:
    """A batch of one attempt's lines, numbered ``first_line`` on (1-based).

    Attributes:
        workflow_id: the run's id; the record's key.
        node: the node id.
        index: the map item or loop step (None: a node without index).
        attempt: the attempt number, 1-based.
        first_line: the number of ``lines[0]`` in the attempt's log.
        lines: the lines, in order.
        last: True on the attempt's last batch (maybe without lines): its log is whole.
    """

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    first_line: int
    lines: tuple[LogLine, ...]
    last: bool = False
