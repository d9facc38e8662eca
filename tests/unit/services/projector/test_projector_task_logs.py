"""The task logs' projection (``services.projector.task_logs``): rows of a batch, the end
of an attempt's log, idempotent statements, the NOTIFY, and the retention's tables."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from headwater.log_lines import LogLine, TaskLogLines
from services.common.db import LOGS_NOTIFY_CHANNEL
from services.projector import retention
from services.projector.task_logs import INSERT_END, INSERT_LINE, NO_INDEX, project_logs, rows

AT = 1_772_442_847_512


class Conn:
    """Records statements; a transaction is a context."""

    def __init__(self) -> None:
        self.many: list[tuple[str, list[tuple[Any, ...]]]] = []
        self.one: list[tuple[str, tuple[Any, ...]]] = []

    async def executemany(self, sql: str, args: list[tuple[Any, ...]]) -> None:
        self.many.append((sql, args))

    async def execute(self, sql: str, *args: Any) -> None:
        self.one.append((sql, args))

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        yield


def test_a_batch_is_one_row_per_line_numbered_from_its_first() -> None:
    batch = TaskLogLines("wf", "n", None, 2, 5, (
        LogLine(AT, "INFO", "stdout", "", "a\x00b"),
        LogLine(AT + 1, "ERROR", "log", "lib", "boom")), last=True)
    lines, ends = rows([batch, TaskLogLines("wf", "m", 3, 1, 1, ())])
    assert lines == [
        ("wf", "n", NO_INDEX, 2, 5, datetime.fromtimestamp(AT / 1000, UTC), "INFO", "stdout",
         "", "a\ufffdb"),
        ("wf", "n", NO_INDEX, 2, 6, datetime.fromtimestamp((AT + 1) / 1000, UTC), "ERROR",
         "log", "lib", "boom")]
    assert ends == [("wf", "n", NO_INDEX, 2, 6)]


async def test_lines_are_written_once_and_their_workflows_notified() -> None:
    conn = Conn()
    batch = TaskLogLines("wf", "n", 0, 1, 1, (LogLine(AT, "INFO", "log", "x", "hi"),), True)
    assert await project_logs(conn, [batch, batch]) == {"wf"}  # type: ignore[arg-type]
    assert [sql for sql, _ in conn.many] == [INSERT_LINE, INSERT_END]
    assert all("on conflict do nothing" in sql for sql, _ in conn.many)
    assert len(conn.many[0][1]) == 2  # the duplicate is left to the key
    assert conn.one == [("select pg_notify($1, $2)", (LOGS_NOTIFY_CHANNEL, "wf"))]


def test_retention_deletes_a_runs_task_logs_with_it() -> None:
    statement = retention.purge_statement()
    assert "delete from task_logs where" in statement
    assert "delete from task_log_ends where" in statement
