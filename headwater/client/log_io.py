"""The I/O of reading tasks' log lines (``logs`` decides what to ask and what an answer
means): the lines so far, page after page, and a task's log followed as it grows, with
httpx's blocking or asyncio client. ``Client`` and ``AsyncClient`` take these methods
from ``TaskLogReads`` and ``AsyncTaskLogReads``."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

import httpx
from httpx_sse import aconnect_sse, connect_sse

from headwater.client import logs
from headwater.client.requests import Listing, Request
from headwater.client.retry import unexpected

__all__ = ["AsyncTaskLogReads", "TaskLogReads"]
T = TypeVar("T")


class TaskLogReads:
    """The task-log reads of ``Client``."""

    _http: httpx.Client
    base_url: str
    timeout: float
    retries: int

    def fetch_all(self, request: Request[Listing[T]]) -> builtins.list[T]:
        raise NotImplementedError  # Client's

    def task_logs(self, workflow_id: str, node: str, index: int | None = None,
                  attempt: int | None = None) -> builtins.list[logs.TaskLogLine]:
        """A task's log lines so far, in (attempt, line) order (``index``: the map item
        or loop step; ``attempt``: one attempt, None: all). Raises ``NotFound`` for an
        unknown run."""
        return self.fetch_all(logs.task_logs(workflow_id, node, index, attempt))

    def run_logs(self, workflow_id: str,
                 node: str | None = None) -> builtins.list[logs.TaskLogLine]:
        """Every task's log lines of a run so far (of ``node`` alone unless None), in
        (node, index, attempt, line) order."""
        return self.fetch_all(logs.run_logs(workflow_id, node))

    def follow_task_logs(self, workflow_id: str, node: str, index: int | None = None,
                         attempt: int | None = None) -> Iterator[logs.TaskLogLine]:
        """A task's log lines as they come, until its log is complete (the task ended
        and its lines were read); a lost stream is resumed after the last line.

        Raises:
            NotFound: unknown run.
            GatewayUnreachable: no stream within the retries.
        """
        follow = logs.LogFollow(self, workflow_id, node, index, attempt)
        while not follow.ended:
            call = follow.call()
            try:
                with connect_sse(self._http, call.method, call.path, **call.options(),
                                 timeout=follow.read_timeout()) as source:
                    if unexpected(source.response):
                        source.response.read()
                    if follow.opened(source.response):
                        for sse in source.iter_sse():
                            line = follow.take(sse)
                            if line is not None:
                                yield line
                            if follow.ended:
                                return
            except httpx.TransportError as e:
                follow.lost(e)
            time.sleep(follow.pause())


class AsyncTaskLogReads:
    """The task-log reads of ``AsyncClient``."""

    _http: httpx.AsyncClient
    base_url: str
    timeout: float
    retries: int

    async def fetch_all(self, request: Request[Listing[T]]) -> builtins.list[T]:
        raise NotImplementedError  # AsyncClient's

    async def task_logs(self, workflow_id: str, node: str, index: int | None = None,
                        attempt: int | None = None) -> builtins.list[logs.TaskLogLine]:
        """As ``Client.task_logs``."""
        return await self.fetch_all(logs.task_logs(workflow_id, node, index, attempt))

    async def run_logs(self, workflow_id: str,
                       node: str | None = None) -> builtins.list[logs.TaskLogLine]:
        """As ``Client.run_logs``."""
        return await self.fetch_all(logs.run_logs(workflow_id, node))

    async def follow_task_logs(self, workflow_id: str, node: str, index: int | None = None,
                               attempt: int | None = None,
                               ) -> AsyncIterator[logs.TaskLogLine]:
        """As ``Client.follow_task_logs`` (an async iterator)."""
        follow = logs.LogFollow(self, workflow_id, node, index, attempt)
        while not follow.ended:
            call = follow.call()
            try:
                async with aconnect_sse(self._http, call.method, call.path,
                                        **call.options(),
                                        timeout=follow.read_timeout()) as source:
                    if unexpected(source.response):
                        await source.response.aread()
                    if follow.opened(source.response):
                        async for sse in source.aiter_sse():
                            line = follow.take(sse)
                            if line is not None:
                                yield line
                            if follow.ended:
                                return
            except httpx.TransportError as e:
                follow.lost(e)
            await asyncio.sleep(follow.pause())
