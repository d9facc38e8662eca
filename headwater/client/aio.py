"""``AsyncClient``: ``headwater.client.Client``'s methods for asyncio code, to await
(``events`` and a streamed ``run`` are async iterators). What each method asks and how
it reads the answer (``requests``), the retry policy (``retry``) and the
following of event streams (``follow``) are shared; this module only sends, with
httpx's asyncio client. See ``headwater.client``."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, Unpack, overload

import httpx
from httpx_sse import EventSource, aconnect_sse

from headwater import errors
from headwater.client import blob_io, blobs
from headwater.client import requests as req
from headwater.client.definitions import AsyncDefinitions
from headwater.client.follow import Follow, ResultWatch
from headwater.client.http import (
    Call,
    ListFilters,
    Mode,
    RunOptions,
    SubmitOptions,
    auth_headers,
    default_token,
    event_from,
    outcome,
    settings,
)
from headwater.client.log_io import AsyncTaskLogReads
from headwater.client.operations import AsyncOperations
from headwater.client.requests import Listing, Request
from headwater.client.retry import Tries, unexpected
from headwater.client.schedules import AsyncSchedules
from headwater.client.tasks import NodeTasks, Task
from headwater.client.triggers import AsyncTriggers
from headwater.client.types import (
    Event,
    Identity,
    Page,
    Queue,
    Run,
    SignalFate,
    Submitted,
    Workflow,
)
from headwater.client.webhooks import AsyncWebhooks
from headwater.client.workflow_runs import WorkflowFunction, is_workflow, workflow_request

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


class AsyncClient(AsyncTaskLogReads):
    """An asyncio client of one gateway; arguments as ``headwater.client.Client``'s
    (``transport``: an ``httpx.AsyncBaseTransport``; ``resolve_blobs``: put back the
    values held by reference)."""

    def __init__(self, base_url: str | None = None, token: str | None = None, *,
                 timeout: float = 30.0, retries: int = 5,
                 transport: httpx.AsyncBaseTransport | None = None,
                 resolve_blobs: bool = True) -> None:
        self.base_url, self.timeout, self.retries = settings(base_url, timeout, retries)
        self.resolve_blobs = resolve_blobs
        headers = auth_headers(default_token() if token is None else token)
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout,
                                       headers=headers, transport=transport)
        self.definitions, self.schedules = AsyncDefinitions(self), AsyncSchedules(self)
        self.triggers = AsyncTriggers(self)
        self.webhooks = AsyncWebhooks(self)
        self.operations = AsyncOperations(self)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def send(self, call: Call, timeout: float | None = None) -> httpx.Response:
        """As ``Client.send``."""
        tries = Tries(self.retries, f"{call.method} {self.base_url}{call.path}")
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, **call.options(),
                    timeout=self.timeout if timeout is None else timeout)
            except httpx.TransportError as e:
                await asyncio.sleep(tries.lost(e))
                continue
            wait = tries.answered(response)
            if wait is None:
                return response
            await asyncio.sleep(wait)

    async def json(self, call: Call) -> Any:
        """The JSON of ``call``'s answer (``send``)."""
        return (await self.send(call)).json()

    async def fetch(self, request: Request[T]) -> T:
        """As ``Client.fetch``."""
        return request.answer(await self.send(request.call,
                                              request.read_timeout(self.timeout)))

    async def fetch_all(self, request: Request[Listing[T]]) -> builtins.list[T]:
        """As ``Client.fetch_all``."""
        listing = await self.fetch(request)
        while listing.next is not None:
            listing = await self.fetch(listing.next)
        return listing.found

    async def submit(self, workflow: dict[str, Any] | str | Path | None = None, *,
                     definition: str | None = None, input: Any = None,
                     id: str | None = None,
                     **options: Unpack[SubmitOptions]) -> Submitted:
        """As ``Client.submit``."""
        return await self.fetch(req.submit(workflow, definition, input, id, options))

    @overload
    async def run(self, workflow: WorkflowFunction[P, R], /, *args: P.args,
                  **kwargs: P.kwargs) -> R: ...
    @overload
    async def run(self, definition: str, /, input: Any = ...,
                  *, mode: Literal["sync", "async"] = ..., timeout: float | None = ...,
                  id: str | None = ..., queue_anyway: bool = ...,
                  priority: int | str | None = ..., cache_refresh: bool = ...,
                  labels: dict[str, str] | None = ...) -> Run: ...
    @overload
    async def run(self, definition: str, /, input: Any = ...,
                  *, mode: Literal["stream"], timeout: float | None = ...,
                  id: str | None = ...,
                  queue_anyway: bool = ...,
                  priority: int | str | None = ...,
                  cache_refresh: bool = ...,
                  labels: dict[str, str] | None = ...) -> AsyncIterator[Event]: ...

    async def run(self, target: Any, /, *args: Any, **kwargs: Any) -> Any:
        """As ``Client.run``; with ``mode="stream"`` the awaited value is an async
        iterator of the events (the request is sent as it is iterated)."""
        if is_workflow(target):
            ran = await self.fetch(workflow_request(target, args, kwargs))
            if not ran.workflow:
                return await self.result(ran.id)
            return await self.put_back(ran.id, outcome(ran.workflow))
        return await self._run(target, *args, **kwargs)

    async def _run(self, definition: str, input: Any = None, *, mode: Mode = "sync",
                   timeout: float | None = None, id: str | None = None,
                   **options: Unpack[RunOptions]) -> Run | AsyncIterator[Event]:
        request = req.run(definition, input, mode, timeout, id, options)
        if mode == "stream":
            return self._follow(Follow.run(self, request.call))
        ran = await self.fetch(request)
        if ran.workflow is None or not self.resolve_blobs:
            return ran
        return blobs.resolved_run(ran, await self._resolved(ran.workflow))

    async def get(self, workflow_id: str, *, resolve_blobs: bool | None = None) -> Workflow:
        """As ``Client.get``."""
        workflow = await self._document(workflow_id)
        wanted = self.resolve_blobs if resolve_blobs is None else resolve_blobs
        return await self._resolved(workflow) if wanted else workflow

    async def _document(self, workflow_id: str) -> Workflow:
        """As ``Client._document``."""
        return await self.fetch(req.get(workflow_id))

    async def _resolved(self, workflow: Workflow) -> Workflow:
        """As ``Client._resolved``."""
        return blobs.resolved_workflow(workflow,
                                       await self.put_back(workflow.id, workflow.input),
                                       await self.put_back(workflow.id, workflow.output))

    async def put_back(self, workflow_id: str, value: Any) -> Any:
        """As ``Client.put_back``."""
        return await blob_io.aput_back(self._http, self.retries, workflow_id, value)

    async def task(self, workflow_id: str, node: str, index: int | None = None) -> Task:
        """As ``Client.task``."""
        found = await self.fetch(req.task(workflow_id, node, index))
        if not self.resolve_blobs:
            return found
        return blobs.resolved_task(found, await self.put_back(workflow_id, found.input),
                                   await self.put_back(workflow_id, found.output))

    async def node_tasks(self, workflow_id: str, node: str, after: int | None = None,
                         limit: int = 100, *, status: str | None = None) -> NodeTasks:
        """As ``Client.node_tasks``."""
        return await self.fetch(req.node_tasks(workflow_id, node, after, limit, status))

    async def list(self, *, limit: int = 50, cursor: str | None = None,
                   **where: Unpack[ListFilters]) -> Page:
        """As ``Client.list``."""
        return await self.fetch(req.workflows(limit, cursor, where))

    async def result(self, workflow_id: str, timeout: float | None = None) -> Any:
        """As ``Client.result``."""
        watch = ResultWatch(self, workflow_id, timeout)
        try:
            workflow = await self._document(workflow_id)
            if not workflow.done:
                async for _ in self._follow(watch.follow(workflow.seq)):
                    pass  # until the terminal event
                workflow = await self._document(workflow_id)
            while not workflow.done:
                await asyncio.sleep(watch.settle())
                workflow = await self._document(workflow_id)
        except errors.ResultTimeout:
            raise watch.timed_out() from None
        output = outcome(workflow)
        return await self.put_back(workflow_id, output) if self.resolve_blobs else output

    def events(self, workflow_id: str,
               last_event_id: int | None = None) -> AsyncIterator[Event]:
        """As ``Client.events`` (an async iterator)."""
        return self._follow(Follow(self, workflow_id, last_event_id or 0))

    async def _follow(self, follow: Follow) -> AsyncIterator[Event]:
        """As ``Client._follow``."""
        while True:
            call = follow.call()
            try:
                async with aconnect_sse(self._http, call.method, call.path,
                                        **call.options(),
                                        timeout=follow.read_timeout()) as source:
                    if unexpected(source.response):
                        await source.response.aread()
                    if follow.opened(source.response):
                        async for event in _events(source):
                            if follow.take(event):
                                yield event
                                if follow.done(event):
                                    return
                        if follow.ended(await self._document(follow.workflow_id)):
                            return
            except httpx.TransportError as e:
                follow.lost(e)
            await asyncio.sleep(follow.pause())

    @overload
    async def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
                     index: int | None = ..., signal_id: str | None = ...,
                     wait: Literal[False] = ...) -> dict[str, Any]: ...
    @overload
    async def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
                     index: int | None = ..., signal_id: str | None = ...,
                     wait: Literal[True]) -> SignalFate: ...

    async def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
                     index: int | None = None, signal_id: str | None = None,
                     wait: bool = False) -> dict[str, Any] | SignalFate:
        """As ``Client.signal``."""
        answer = await self.fetch(req.signal(workflow_id, name, fields, index, signal_id))
        if not wait:
            return answer
        return await self.wait_signal(workflow_id, answer["signal_id"])

    async def signal_fate(self, workflow_id: str, signal_id: str) -> SignalFate:
        """As ``Client.signal_fate``."""
        return await self.fetch(req.signal_fate(workflow_id, signal_id))

    async def wait_signal(self, workflow_id: str, signal_id: str,
                          timeout: float = req.SIGNAL_WAIT_S) -> SignalFate:
        """As ``Client.wait_signal``."""
        loop = asyncio.get_running_loop()
        wait = req.FateWait(timeout, loop.time())
        while True:
            fate = await self.signal_fate(workflow_id, signal_id)
            pause = None if fate.applied else wait.pause(loop.time())
            if pause is None:
                return fate
            await asyncio.sleep(pause)

    async def cancel(self, workflow_id: str, reason: str = "") -> dict[str, Any]:
        """As ``Client.cancel``."""
        return await self.fetch(req.cancel(workflow_id, reason))

    async def pause(self, workflow_id: str, reason: str = "",
                    request_id: str | None = None) -> dict[str, Any]:
        """As ``Client.pause``."""
        return await self.fetch(req.pause(workflow_id, False, reason, request_id))

    async def resume(self, workflow_id: str, request_id: str | None = None) -> dict[str, Any]:
        """As ``Client.resume``."""
        return await self.fetch(req.pause(workflow_id, True, "", request_id))

    async def rerun(self, workflow_id: str, *, input: Any = req.SAME_INPUT,
                    id: str | None = None, from_node: str | None = None,
                    cache_refresh: bool = False) -> Submitted:
        """As ``Client.rerun``."""
        return await self.fetch(req.rerun(workflow_id, input, id, from_node, cache_refresh))

    async def queues(self) -> builtins.list[Queue]:
        """As ``Client.queues``."""
        return await self.fetch(req.queues())

    async def whoami(self) -> Identity:
        """As ``Client.whoami``."""
        return await self.fetch(req.whoami())


async def _events(source: EventSource) -> AsyncIterator[Event]:
    """The events of an SSE stream (messages without data skipped)."""
    async for sse in source.aiter_sse():
        event = event_from(sse)
        if event is not None:
            yield event

