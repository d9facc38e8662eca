"""Reading task logs from the projection: a task's lines after a cursor, a run's lines
in (node, index, attempt, line) order, and whether a task's log is complete.

A task's cursor is ``<attempt>:<line>`` (also its SSE event id); a run's is opaque
(base64url of ``[node, index, attempt, line]``). A task's log is *complete* when no line
can come any more: the task has ended (succeeded, failed or cancelled; or the run ended
before it was dispatched) and each attempt asked about either sent its log whole (its
``task_log_ends`` row) or ended more than ``LOST_AFTER_S`` ago (its worker died with
lines unsent: they never come).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from headwater.core.status import TaskStatus, WorkflowStatus
from services.gateway.edge.problems import Problem

NO_INDEX = -1
"""``task_logs.idx`` of a node without index (``services/projector/task_logs.py``)."""
LOST_AFTER_S = 10.0
"""How long after a task ended its log is taken as complete without its end, seconds."""
TASK_CURSOR = re.compile(r"([0-9]{1,9}):([0-9]{1,9})")
TERMINAL_TASK = [s.value for s in TaskStatus if s.terminal]
TERMINAL_RUN = [s.value for s in WorkflowStatus if s.terminal]
_COLUMNS = "attempt, line, at, level, stream, logger, message"


@dataclass(frozen=True)
class TaskRef:
    """One task of a run: ``node`` and ``index`` (None: a node without index)."""

    workflow_id: str
    node: str
    index: int | None

    @property
    def idx(self) -> int:
        """Its ``task_logs.idx``."""
        return NO_INDEX if self.index is None else self.index


def parse_index(text: str) -> int | None:
    """The ``{index}`` path segment: ``-`` (None) or a map item's or loop step's number.

    Raises:
        Problem: 422 for anything else.
    """
    if text == "-":
        return None
    if text.isascii() and text.isdigit() and len(text) <= 9:
        return int(text)
    fault = f"index must be - (a node without index) or a number 0-999999999, got {text[:40]!r}"
    raise Problem(422, "Invalid request", fault, errors=[fault])


def task_cursor(text: str | None, header: bool = False) -> tuple[int, int]:
    """``(attempt, line)`` of a task's cursor (None: before the first line), from
    ``?after=`` or, with ``header``, from ``Last-Event-ID``.

    Raises:
        Problem: 400 (``Bad cursor``, or ``Bad Last-Event-ID``) when it is no
            ``<attempt>:<line>``.
    """
    if not text:
        return 0, 0
    found = TASK_CURSOR.fullmatch(text)
    if found is None:
        detail = "a task log's cursor is <attempt>:<line>, as its lines' ids and next give it"
        if header:
            raise Problem(400, "Bad Last-Event-ID", detail)
        raise Problem(400, "Bad cursor", detail)
    return int(found[1]), int(found[2])


def line_doc(row: Any, with_task: bool = False) -> dict[str, Any]:
    """A line as the API gives it."""
    doc = {"attempt": row["attempt"], "line": row["line"], "at": row["at"].isoformat(),
           "level": row["level"], "stream": row["stream"], "logger": row["logger"],
           "message": row["message"]}
    if with_task:
        idx = row["idx"]
        return {"node": row["node"], "index": None if idx == NO_INDEX else idx, **doc}
    return doc


async def task_lines(pool: asyncpg.Pool, task: TaskRef, attempt: int | None,
                     after: tuple[int, int], limit: int) -> list[Any]:
    """Up to ``limit`` lines of ``task`` after ``after`` (``(attempt, line)``), of
    ``attempt`` alone unless None, in (attempt, line) order."""
    return list(await pool.fetch(
        f"select {_COLUMNS} from task_logs where workflow_id = $1 and node = $2 and idx = $3"
        " and ($4::int is null or attempt = $4) and (attempt, line) > ($5, $6)"
        " order by attempt, line limit $7",
        task.workflow_id, task.node, task.idx, attempt, after[0], after[1], limit))


async def complete(pool: asyncpg.Pool, task: TaskRef, attempt: int | None) -> bool:
    """Whether no line of ``task`` (of ``attempt`` alone unless None) can come any more
    (see the module's docstring)."""
    row = await pool.fetchrow(
        "select t.status, t.attempt, coalesce(t.finished_at, w.updated_at) < now() - "
        "$4::float8 * interval '1 second' as long_ago, w.status as run_status "
        "from workflows w left join tasks t on t.workflow_id = w.workflow_id and t.node = $2"
        " and t.idx is not distinct from $3 where w.workflow_id = $1",
        task.workflow_id, task.node, task.index, LOST_AFTER_S)
    if row is None:
        return True  # no such run (any more)
    if row["status"] is None:
        return bool(row["run_status"] in TERMINAL_RUN)  # never dispatched
    latest = row["attempt"]
    asked = [attempt] if attempt is not None else list(range(1, latest + 1))
    if row["status"] not in TERMINAL_TASK and (attempt is None or attempt >= latest):
        return False
    ended = {r["attempt"] for r in await pool.fetch(
        "select attempt from task_log_ends where workflow_id = $1 and node = $2 and idx = $3"
        " and attempt = any($4::int[])", task.workflow_id, task.node, task.idx, asked)}
    if ended >= set(asked):
        return True
    return row["status"] in TERMINAL_TASK and bool(row["long_ago"])


def run_cursor(text: str | None) -> tuple[str, int, int, int] | None:
    """``(node, idx, attempt, line)`` of a run's cursor (None: from the start).

    Raises:
        Problem: 400 ``Bad cursor`` when it is not one this API returned.
    """
    if not text:
        return None
    try:
        node, idx, attempt, line = orjson.loads(base64.urlsafe_b64decode(text + "=" * (
            -len(text) % 4)))
        if not (isinstance(node, str) and all(type(v) is int for v in (idx, attempt, line))):
            raise ValueError(text)
    except (ValueError, TypeError) as e:
        raise Problem(400, "Bad cursor", "the cursor is not one this API returned") from e
    return node, idx, attempt, line


def encode_run_cursor(row: Any) -> str:
    """The cursor after ``row`` (a line of a run)."""
    data = orjson.dumps([row["node"], row["idx"], row["attempt"], row["line"]])
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


async def run_lines(pool: asyncpg.Pool, workflow_id: str, node: str | None,
                    after: tuple[str, int, int, int] | None, limit: int) -> list[Any]:
    """Up to ``limit`` lines of a run (of ``node`` alone unless None) after ``after``, in
    (node, idx, attempt, line) order."""
    start = after or ("", NO_INDEX - 1, 0, 0)
    return list(await pool.fetch(
        f"select node, idx, {_COLUMNS} from task_logs where workflow_id = $1"
        " and ($2::text is null or node = $2) and (node, idx, attempt, line) > ($3, $4, $5, $6)"
        " order by node, idx, attempt, line limit $7",
        workflow_id, node, *start, limit))
