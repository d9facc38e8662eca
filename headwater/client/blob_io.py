"""The I/O of putting back values held by reference (``blobs`` decides what to fetch):
each blob is read as it streams, with httpx's blocking or asyncio client, tried again
as ``Client.send`` tries a request (a connection error or a 503, ``retry.Tries``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

import httpx

from headwater.client import requests as req
from headwater.client.blobs import BlobFetch, has_refs, resolved_task, resolved_workflow
from headwater.client.http import Call, outcome
from headwater.client.requests import Request
from headwater.client.retry import Tries, unexpected
from headwater.client.tasks import Task
from headwater.client.types import Workflow

__all__ = ["BlobReads", "aput_back", "put_back"]
T = TypeVar("T")


def put_back(http: httpx.Client, retries: int, workflow_id: str, value: Any) -> Any:
    """``value`` with each reference replaced by what it names (``BlobFetch``);
    ``value`` itself when it holds none.

    Raises:
        HeadwaterHTTPError: a blob's error answer (``NotFound``: not the run's, or
            collected). UnexpectedAnswer: a blob's bytes do not have its digest.
        GatewayUnreachable: no answer within the retries.
    """
    if not has_refs(value):
        return value
    fetch = BlobFetch(workflow_id, value)
    for digest, call in fetch.calls():
        fetch.take(digest, _read(http, retries, call))
    return fetch.value()


def _read(http: httpx.Client, retries: int, call: Call) -> bytes:
    tries = Tries(retries, f"{call.method} {http.base_url}{call.path}")
    while True:
        try:
            with http.stream(call.method, call.path, **call.options()) as response:
                if unexpected(response):  # raised, unless a 503 to try again
                    response.read()
                    time.sleep(tries.answered(response) or 0.0)
                    continue
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                return bytes(data)
        except httpx.TransportError as e:
            time.sleep(tries.lost(e))


async def aput_back(http: httpx.AsyncClient, retries: int, workflow_id: str,
                    value: Any) -> Any:
    """As ``put_back``, with the asyncio client."""
    if not has_refs(value):
        return value
    fetch = BlobFetch(workflow_id, value)
    for digest, call in fetch.calls():
        fetch.take(digest, await _aread(http, retries, call))
    return fetch.value()


async def _aread(http: httpx.AsyncClient, retries: int, call: Call) -> bytes:
    tries = Tries(retries, f"{call.method} {http.base_url}{call.path}")
    while True:
        try:
            async with http.stream(call.method, call.path, **call.options()) as response:
                if unexpected(response):  # raised, unless a 503 to try again
                    await response.aread()
                    await asyncio.sleep(tries.answered(response) or 0.0)
                    continue
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                return bytes(data)
        except httpx.TransportError as e:
            await asyncio.sleep(tries.lost(e))


class BlobReads:
    """The reads of ``Client`` that put back values held by reference: ``get``, and the
    output ``result`` and a waiting ``run`` return (``Client.resolve_blobs``)."""

    _http: httpx.Client
    retries: int
    resolve_blobs: bool

    def fetch(self, request: Request[T]) -> T:
        raise NotImplementedError  # Client's

    def get(self, workflow_id: str, *, resolve_blobs: bool | None = None) -> Workflow:
        """One run (``GET /v1/workflows/{id}``), its values held by reference put back
        (``resolve_blobs``: None, the client's setting). ``NotFound`` when unknown."""
        workflow = self._document(workflow_id)
        wanted = self.resolve_blobs if resolve_blobs is None else resolve_blobs
        return self._resolved(workflow) if wanted else workflow

    def _document(self, workflow_id: str) -> Workflow:
        """The run's document, its references as they are."""
        return self.fetch(req.get(workflow_id))

    def _resolved(self, workflow: Workflow) -> Workflow:
        return resolved_workflow(workflow, self.put_back(workflow.id, workflow.input),
                                 self.put_back(workflow.id, workflow.output))

    def _resolved_task(self, task: Task) -> Task:
        """A task's input and output put back (``Client.task``)."""
        return resolved_task(task, self.put_back(task.workflow_id, task.input),
                             self.put_back(task.workflow_id, task.output))

    def _output(self, workflow: Workflow) -> Any:
        """An ended run's output (``http.outcome``), put back unless told not to."""
        output = outcome(workflow)
        return self.put_back(workflow.id, output) if self.resolve_blobs else output

    def put_back(self, workflow_id: str, value: Any) -> Any:
        """``value`` of run ``workflow_id`` with each reference replaced by what it
        names, fetched (streamed), references inside blobs too (``put_back``)."""
        return put_back(self._http, self.retries, workflow_id, value)
