"""``AsyncClient``: ``headwater.client.Client``'s methods for asyncio code, to await
(``events`` and a streamed ``run`` are async iterators). The requests, the retry policy
and the reading of answers are shared (``client_http``); see ``headwater.client``."""

from __future__ import annotations

import asyncio
import builtins
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal, overload

import httpx
from httpx_sse import EventSource, aconnect_sse

from headwater import errors
from headwater.client_http import (
    Call,
    Mode,
    check_timeout,
    default_url,
    definition_put_call,
    delay_s,
    error_for,
    event_from,
    events_call,
    list_call,
    outcome,
    retryable,
    run_call,
    run_from,
    run_id,
    segment,
    signal_call,
    submit_call,
    unexpected,
)
from headwater.client_schedules import AsyncSchedules
from headwater.client_types import (
    Definition,
    Event,
    Page,
    Queue,
    Run,
    Submitted,
    Workflow,
    definition_from,
    queue_from,
    workflow_from,
)

RUN_WAIT_S = 60.0
"""As ``headwater.client.RUN_WAIT_S``."""
SETTLE_S = 0.1
"""As ``headwater.client.SETTLE_S``."""


class AsyncClient:
    """An asyncio client of one gateway; arguments as ``headwater.client.Client``'s
    (``transport``: an ``httpx.AsyncBaseTransport``)."""

    def __init__(self, base_url: str | None = None, *, timeout: float = 30.0,
                 retries: int = 5, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = (base_url or default_url()).rstrip("/")
        self.timeout, self.retries = check_timeout(timeout), retries
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout,
                                       transport=transport)
        self.definitions = AsyncDefinitions(self)
        self.schedules = AsyncSchedules(self)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def send(self, call: Call, timeout: float | None = None) -> httpx.Response:
        """As ``Client.send``."""
        tries = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, content=call.content,
                    params=call.params, headers=call.headers,
                    timeout=self.timeout if timeout is None else timeout)
            except httpx.TransportError as e:
                if tries >= self.retries:
                    raise errors.GatewayUnreachable(
                        f"{call.method} {self.base_url}{call.path}: {e!r}") from e
                await asyncio.sleep(delay_s(tries))
                tries += 1
                continue
            if retryable(response) and tries < self.retries:
                await asyncio.sleep(delay_s(tries, response))
                tries += 1
                continue
            if unexpected(response):
                raise error_for(response)
            return response

    async def json(self, call: Call) -> Any:
        """The JSON of ``call``'s answer (``send``)."""
        return (await self.send(call)).json()

    async def submit(self, workflow: dict[str, Any] | str | Path | None = None, *,
                     definition: str | None = None, input: Any = None,
                     id: str | None = None, tenant: str | None = None,
                     queue_anyway: bool = False) -> Submitted:
        """As ``Client.submit``."""
        call = submit_call(workflow, definition, input, run_id(id), tenant, queue_anyway)
        response = await self.send(call)
        doc = response.json()
        return Submitted(doc["id"], doc["status"], response.status_code == 202,
                         doc.get("links") or {})

    @overload
    async def run(self, definition: str, input: Any = ...,
                  *, mode: Literal["sync", "async"] = ..., timeout: float | None = ...,
                  id: str | None = ..., queue_anyway: bool = ...) -> Run: ...
    @overload
    async def run(self, definition: str, input: Any = ...,
                  *, mode: Literal["stream"], timeout: float | None = ...,
                  id: str | None = ...,
                  queue_anyway: bool = ...) -> AsyncIterator[Event]: ...

    async def run(self, definition: str, input: Any = None, *, mode: Mode = "sync",
                  timeout: float | None = None, id: str | None = None,
                  queue_anyway: bool = False) -> Run | AsyncIterator[Event]:
        """As ``Client.run``; with ``mode="stream"`` the awaited value is an async
        iterator of the events (the request is sent as it is iterated)."""
        workflow_id = run_id(id)
        call = run_call(definition, input, mode, timeout, workflow_id, queue_anyway)
        if mode == "stream":
            return self._follow(workflow_id, 0, None, call)
        wait_s = RUN_WAIT_S if timeout is None else timeout
        return run_from(await self.send(call, self.timeout + wait_s if mode == "sync"
                                        else None))

    async def get(self, workflow_id: str) -> Workflow:
        """As ``Client.get``."""
        return workflow_from(await self.json(Call(
            "GET", f"/v1/workflows/{segment(workflow_id)}")))

    async def list(self, *, status: str | None = None, name: str | None = None,
                   definition: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> Page:
        """As ``Client.list``."""
        doc = await self.json(list_call(status, name, definition, limit, cursor))
        return Page([workflow_from(i) for i in doc["items"]], doc.get("next_cursor"))

    async def result(self, workflow_id: str, timeout: float | None = None) -> Any:
        """As ``Client.result``."""
        deadline = None if (wait := check_timeout(timeout)) is None else time.monotonic() + wait
        try:
            workflow = await self.get(workflow_id)
            if not workflow.done:
                async for event in self._follow(workflow_id, workflow.seq, deadline):
                    if event.terminal:
                        break
                workflow = await self.get(workflow_id)
                while not workflow.done:  # its status is projected with the terminal event
                    self._read_timeout(workflow_id, deadline)
                    await asyncio.sleep(SETTLE_S)
                    workflow = await self.get(workflow_id)
        except errors.ResultTimeout:
            raise errors.ResultTimeout(workflow_id, timeout or 0.0) from None
        return outcome(workflow)

    def events(self, workflow_id: str,
               last_event_id: int | None = None) -> AsyncIterator[Event]:
        """As ``Client.events`` (an async iterator)."""
        return self._follow(workflow_id, last_event_id or 0, None)

    async def _follow(self, workflow_id: str, after: int, deadline: float | None,
                      first: Call | None = None) -> AsyncIterator[Event]:
        """As ``Client._follow``."""
        failures, last, greet = 0, after, first is not None
        while True:
            call = first or events_call(workflow_id, last)
            try:
                async with aconnect_sse(
                        self._http, call.method, call.path, content=call.content,
                        params=call.params, headers=call.headers,
                        timeout=self._read_timeout(workflow_id, deadline)) as source:
                    if await self._answered(source.response, failures):
                        first = None
                        async for event in _events(source):
                            if event.id == 0 and greet:
                                greet = False
                                yield event
                            if event.id <= last:
                                continue
                            last, failures = event.id, 0
                            yield event
                            if event.terminal:
                                return
                            self._read_timeout(workflow_id, deadline)
                        if await self._ended_at(workflow_id, last):
                            return
            except httpx.TransportError as e:
                self._read_timeout(workflow_id, deadline)
                if failures >= self.retries:
                    raise errors.GatewayUnreachable(
                        f"events of {workflow_id} from {self.base_url}: {e!r}") from e
            await asyncio.sleep(delay_s(failures))
            failures += 1

    async def _answered(self, response: httpx.Response, failures: int) -> bool:
        """As ``Client._answered``."""
        if not unexpected(response):
            return True
        await response.aread()
        if retryable(response) and failures < self.retries:
            return False
        raise error_for(response)

    def _read_timeout(self, workflow_id: str, deadline: float | None) -> float:
        """As ``Client._read_timeout``."""
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise errors.ResultTimeout(workflow_id, self.timeout)
        return min(self.timeout, left)

    async def _ended_at(self, workflow_id: str, last: int) -> bool:
        """As ``Client._ended_at``."""
        workflow = await self.get(workflow_id)
        return workflow.done and workflow.seq <= last

    async def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
                     index: int | None = None,
                     signal_id: str | None = None) -> dict[str, Any]:
        """As ``Client.signal``."""
        call = signal_call(workflow_id, name, fields, index, signal_id or uuid.uuid4().hex)
        result: dict[str, Any] = await self.json(call)
        return result

    async def cancel(self, workflow_id: str, reason: str = "") -> dict[str, Any]:
        """As ``Client.cancel``."""
        result: dict[str, Any] = await self.json(Call(
            "POST", f"/v1/workflows/{segment(workflow_id)}/cancel", json={"reason": reason}))
        return result

    async def queues(self) -> builtins.list[Queue]:
        """As ``Client.queues``."""
        return [queue_from(q) for q in (await self.json(Call("GET", "/v1/queues")))["queues"]]


async def _events(source: EventSource) -> AsyncIterator[Event]:
    """The events of an SSE stream (messages without data skipped)."""
    async for sse in source.aiter_sse():
        event = event_from(sse)
        if event is not None:
            yield event


class AsyncDefinitions:
    """``AsyncClient.definitions``: as ``headwater.client.Definitions``, to await."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def put(self, name: str, spec: dict[str, Any] | str | Path, *,
                  input_schema: dict[str, Any] | None = None) -> Definition:
        """As ``Definitions.put``."""
        return definition_from(await self._client.json(
            definition_put_call(name, spec, input_schema)))

    async def list(self) -> builtins.list[Definition]:
        """As ``Definitions.list``."""
        found: builtins.list[Definition] = []
        cursor = None
        while True:
            params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
            doc = await self._client.json(Call("GET", "/v1/definitions", params=params))
            found += [definition_from(d) for d in doc["items"]]
            cursor = doc.get("next_cursor")
            if not cursor:
                return found

    async def get(self, name: str, version: int | None = None) -> Definition:
        """As ``Definitions.get``."""
        params = {} if version is None else {"version": version}
        return definition_from(await self._client.json(Call(
            "GET", f"/v1/definitions/{segment(name)}", params=params)))

    async def delete(self, name: str) -> None:
        """As ``Definitions.delete``."""
        await self._client.send(Call("DELETE", f"/v1/definitions/{segment(name)}"))
