"""Following a task's log as Server-Sent Events: ``event: log``, ``id: <attempt>:<line>``,
``data:`` the line as JSON; resumable with ``Last-Event-ID``; ``event: end`` (data
``{"complete": true}``) and the stream closes once the task's log is complete
(``reads.complete``) and every line was sent.

The projector's ``NOTIFY`` on ``headwater_task_logs`` (new lines) and on
``headwater_events`` (the task's end) wakes a waiting stream; a periodic re-read covers
a missed notification. As the history's stream does (``runs.stream``), it ends when
PostgreSQL stops answering, and with ``CLOSING`` when the gateway shuts down.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import orjson

from services.common.db import LOGS_NOTIFY_CHANNEL, NOTIFY_CHANNEL
from services.gateway.edge.problems import DATABASE_UNAVAILABLE
from services.gateway.logs.reads import TaskRef, complete, line_doc, task_lines
from services.gateway.metrics import SSE_SUBSCRIBERS
from services.gateway.runs.stream import CLOSING, RECHECK_S, Notifier

PAGE = 500
log = logging.getLogger("headwater.gateway")


async def follow_task(pool: asyncpg.Pool, notifier: Notifier, task: TaskRef,
                      attempt: int | None, after: tuple[int, int]) -> AsyncIterator[dict[str, Any]]:
    """Yield SSE messages of ``task``'s lines after ``after`` (``(attempt, line)``), of
    ``attempt`` alone unless None, until its log is complete (then ``end``), until
    PostgreSQL stops answering, or until ``notifier`` is closing (then ``CLOSING``)."""
    SSE_SUBSCRIBERS.inc()
    try:
        while True:
            # Read whether it is complete before the lines: a line written between the two
            # reads is then sent before the end, never lost after it.
            done = await complete(pool, task, attempt)
            rows = await task_lines(pool, task, attempt, after, PAGE)
            for row in rows:
                after = (row["attempt"], row["line"])
                yield {"id": f"{row['attempt']}:{row['line']}", "event": "log",
                       "data": orjson.dumps(line_doc(row)).decode()}
            if len(rows) == PAGE:
                continue
            if done:
                yield {"event": "end", "data": '{"complete":true}'}
                return
            if notifier.closing:
                yield CLOSING
                return
            await notifier.wait(task.workflow_id, RECHECK_S,
                                (LOGS_NOTIFY_CHANNEL, NOTIFY_CHANNEL))
    except DATABASE_UNAVAILABLE as e:
        log.warning("ending the log stream of %s/%s at %s: PostgreSQL unavailable: %r",
                    task.workflow_id, task.node, after, e)
    finally:
        SSE_SUBSCRIBERS.dec()
