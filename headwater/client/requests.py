"""What each method of ``headwater.client`` asks and how it reads the answer, without
I/O: a ``Request`` per call of ``Client`` (and ``AsyncClient``, whose methods are the
same), ``Client.definitions`` and ``Client.schedules``. The clients only send them
(``Client.fetch``; ``fetch_all`` for a listing's pages), each in its own way.

Every check of the arguments (an empty id or name, a timeout not finite and >= 0, a
spec that is no mapping) is made while the request is built: a ``ValueError`` before
anything is sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import httpx

from headwater import errors
from headwater.client.http import (
    Call,
    ListFilters,
    Mode,
    RunOptions,
    SubmitOptions,
    definition_put_call,
    list_call,
    run_call,
    run_from,
    run_id,
    segment,
    signal_call,
    submit_call,
)
from headwater.client.tasks import NodeTasks, Task, node_tasks_from, task_from
from headwater.client.types import (
    Definition,
    Identity,
    Page,
    Queue,
    Run,
    SignalFate,
    Submitted,
    Workflow,
    definition_from,
    identity_from,
    queue_from,
    signal_fate_from,
    workflow_from,
)

T = TypeVar("T")
RUN_WAIT_S = 60.0
"""How long a waiting ``run`` without ``timeout`` expects the gateway to wait, seconds
(its ``HEADWATER_RUN_TIMEOUT_MAX_S`` by default): the read timeout is this plus
``timeout``; a gateway waiting longer is asked again (the same id: the same run)."""
PAGE = 500
"""Items per page while a listing (``Definitions.list``, ``Schedules.list``) reads
every page."""


@dataclass(frozen=True)
class Request(Generic[T]):
    """One method's exchange.

    Attributes:
        call: what to send (the same on every try).
        decode: reads the (2xx) answer into what the method returns.
        wait_s: how long the gateway may hold the answer back, seconds: this
            request's read timeout is the client's timeout plus this (None: the
            client's timeout alone; ``read_timeout``).
    """

    call: Call
    decode: Callable[[httpx.Response], T]
    wait_s: float | None = None

    def read_timeout(self, timeout: float) -> float | None:
        """This request's read timeout with the client's ``timeout``, seconds (None:
        the client's, as ``Client.send`` takes it)."""
        return None if self.wait_s is None else timeout + self.wait_s

    def answer(self, response: httpx.Response) -> T:
        """``decode`` of the answer.

        Raises:
            UnexpectedAnswer: it is not JSON, or not the document ``decode`` reads.
        """
        try:
            return self.decode(response)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            raise errors.UnexpectedAnswer(self.call.method, self.call.path,
                                          response.status_code,
                                          f"{type(e).__name__}: {e}"[:300]) from e


@dataclass(frozen=True)
class Listing(Generic[T]):
    """What a listing's pages gave so far.

    Attributes:
        found: the items of every page read, in order.
        next: the request for the next page; None after the last one.
    """

    found: list[T]
    next: Request[Listing[T]] | None


class Fetches(Protocol):
    """A blocking client as its ``definitions`` and ``schedules`` use it."""

    def fetch(self, request: Request[T]) -> T: ...

    def fetch_all(self, request: Request[Listing[T]]) -> list[T]: ...


class FetchesAsync(Protocol):
    """An asyncio client as its ``definitions`` and ``schedules`` use it."""

    async def fetch(self, request: Request[T]) -> T: ...

    async def fetch_all(self, request: Request[Listing[T]]) -> list[T]: ...


def reading(read: Callable[[dict[str, Any]], T]) -> Callable[[httpx.Response], T]:
    """A decoder applying ``read`` (a view such as ``workflow_from``) to the answer's
    JSON."""
    return lambda response: read(response.json())


def document(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON document as it is."""
    doc: dict[str, Any] = response.json()
    return doc


def nothing(response: httpx.Response) -> None:
    """A decoder for answers whose body says nothing (``DELETE``, pause ...)."""


def pages(path: str, read: Callable[[dict[str, Any]], T], cursor: str | None = None,
          found: tuple[T, ...] = ()) -> Request[Listing[T]]:
    """``GET path`` for the page after ``cursor`` (None: the first), ``PAGE`` items a
    page, each item read by ``read``; ``found``: the items of the pages before."""
    def decode(response: httpx.Response) -> Listing[T]:
        doc = response.json()
        items = (*found, *(read(item) for item in doc["items"]))
        after = doc.get("next_cursor")
        return Listing(list(items), pages(path, read, after, items) if after else None)

    params = {"limit": PAGE, **({"cursor": cursor} if cursor else {})}
    return Request(Call("GET", path, params=params), decode)


def submitted_from(response: httpx.Response) -> Submitted:
    """The view of a submission's answer (202: a new run; 200: the same again)."""
    doc = response.json()
    return Submitted(doc["id"], doc["status"], response.status_code == 202,
                     doc.get("links") or {}, tuple(doc.get("warnings") or ()))


def submit(workflow: dict[str, Any] | str | Path | None, definition: str | None,
           workflow_input: Any, workflow_id: str | None,
           options: SubmitOptions | None = None) -> Request[Submitted]:
    """``Client.submit``: ``POST /v1/workflows`` (``workflow_id`` None: a new id,
    chosen now, before the first try)."""
    return Request(submit_call(workflow, definition, workflow_input, run_id(workflow_id),
                               options), submitted_from)


def run(definition: str, workflow_input: Any, mode: Mode, timeout: float | None,
        workflow_id: str | None, options: RunOptions | None = None) -> Request[Run]:
    """``Client.run``: ``POST /v1/run/{definition}`` (``workflow_id`` None: a new id,
    chosen now; ``options``: ``queue_anyway``, ``priority``). In ``sync`` mode the read
    timeout is the client's plus the gateway's wait (``timeout``, else ``RUN_WAIT_S``);
    in ``stream`` mode the answer is an event stream (``follow.Follow.run``), not
    decoded here."""
    call = run_call(definition, workflow_input, mode, timeout, run_id(workflow_id),
                    options)
    wait_s = RUN_WAIT_S if timeout is None else timeout
    return Request(call, run_from, wait_s if mode == "sync" else None)


def get(workflow_id: str) -> Request[Workflow]:
    """``Client.get``: ``GET /v1/workflows/{id}``."""
    return Request(Call("GET", f"/v1/workflows/{segment(workflow_id)}"),
                   reading(workflow_from))


def task(workflow_id: str, node: str, index: int | None) -> Request[Task]:
    """``Client.task``: ``GET /v1/workflows/{id}/tasks/{node}/{index}`` (``-`` for
    None).

    Raises:
        ValueError: an empty node, or an index below 0.
    """
    if not node:
        raise ValueError("an empty node names no task")
    if index is not None and index < 0:
        raise ValueError(f"a task index is an integer >= 0, not {index}")
    where = "-" if index is None else str(index)
    return Request(Call("GET", f"/v1/workflows/{segment(workflow_id)}/tasks/{segment(node)}"
                               f"/{where}"), reading(task_from))


def node_tasks(workflow_id: str, node: str, after: int | None, limit: int,
               status: str | None) -> Request[NodeTasks]:
    """``Client.node_tasks``: a page of ``GET /v1/workflows/{id}/nodes/{node}/tasks``.

    Raises:
        ValueError: an empty node.
    """
    if not node:
        raise ValueError("an empty node names no tasks")
    params: dict[str, Any] = {"limit": limit}
    if after is not None:
        params["after"] = after
    if status is not None:
        params["status"] = status
    return Request(Call("GET", f"/v1/workflows/{segment(workflow_id)}/nodes/{segment(node)}"
                               "/tasks", params=params), reading(node_tasks_from))


def page_from(response: httpx.Response) -> Page:
    """The view of a page of ``GET /v1/workflows``."""
    doc = response.json()
    return Page([workflow_from(i) for i in doc["items"]], doc.get("next_cursor"))


def workflows(limit: int, cursor: str | None, where: ListFilters) -> Request[Page]:
    """``Client.list``: one page of ``GET /v1/workflows``, filtered."""
    return Request(list_call(limit, cursor, where), page_from)


def signal(workflow_id: str, name: str, fields: dict[str, Any], index: int | None,
           signal_id: str | None) -> Request[dict[str, Any]]:
    """``Client.signal``: ``POST .../signals/{name}`` (``signal_id`` None: a UUID4,
    chosen now, before the first try)."""
    return Request(signal_call(workflow_id, name, fields, index,
                               signal_id or uuid.uuid4().hex), document)


def signal_fate(workflow_id: str, signal_id: str) -> Request[SignalFate]:
    """``Client.signal_fate``: ``GET .../signals/{signal_id}``."""
    if not signal_id:
        raise ValueError("signal_id must not be empty")
    return Request(Call("GET", f"/v1/workflows/{segment(workflow_id)}/signals/"
                               f"{segment(signal_id)}"), reading(signal_fate_from))


SIGNAL_WAIT_S = 30.0
"""How long ``signal(..., wait=True)`` waits for the run to apply a signal by default,
seconds."""


@dataclass
class FateWait:
    """How ``signal(..., wait=True)`` asks for a signal's fate: again after 0.05 s, then
    twice as long each time up to 1 s, until ``timeout_s`` passed.

    Args:
        timeout_s: how long to wait, seconds (finite, >= 0).
        started_s: when the wait began, on a monotonic clock, seconds.
    """

    timeout_s: float
    started_s: float
    delay_s: float = 0.05

    def __post_init__(self) -> None:
        if not 0 <= self.timeout_s < float("inf"):
            raise ValueError(f"timeout must be a finite number >= 0, got {self.timeout_s!r}")

    def pause(self, now_s: float) -> float | None:
        """How long to sleep before asking again, seconds; None once the time is up."""
        left = self.started_s + self.timeout_s - now_s
        if left <= 0:
            return None
        delay, self.delay_s = min(self.delay_s, left), min(self.delay_s * 2, 1.0)
        return delay


def cancel(workflow_id: str, reason: str) -> Request[dict[str, Any]]:
    """``Client.cancel``: ``POST /v1/workflows/{id}/cancel``."""
    return Request(Call("POST", f"/v1/workflows/{segment(workflow_id)}/cancel",
                        json={"reason": reason}), document)


def pause(workflow_id: str, resume: bool, reason: str,
          request_id: str | None) -> Request[dict[str, Any]]:
    """``Client.pause`` and ``Client.resume``: ``POST /v1/workflows/{id}/pause`` (or
    ``/resume``) with a ``request_id`` chosen now, before the first try, so that a retry
    is the same request (the run records nothing for it twice)."""
    body: dict[str, Any] = {"request_id": request_id or uuid.uuid4().hex}
    if reason and not resume:
        body["reason"] = reason
    verb = "resume" if resume else "pause"
    return Request(Call("POST", f"/v1/workflows/{segment(workflow_id)}/{verb}", json=body),
                   document)


SAME_INPUT: Any = object()
"""``Client.rerun``'s default input: the source run's."""


def rerun(workflow_id: str, workflow_input: Any, new_id: str | None,
          from_node: str | None, cache_refresh: bool = False) -> Request[Submitted]:
    """``Client.rerun``: ``POST /v1/workflows/{id}/rerun``, or ``/reset`` with
    ``from_node`` (``new_id`` None: a new id, chosen now, before the first try;
    ``cache_refresh``: ``?cache=refresh``)."""
    body: dict[str, Any] = {"id": run_id(new_id)}
    if workflow_input is not SAME_INPUT:
        body["input"] = workflow_input
    if from_node is not None:
        if not from_node:
            raise ValueError("from_node: give a node's id")
        body["node"] = from_node
    verb = "rerun" if from_node is None else "reset"
    params = {"cache": "refresh"} if cache_refresh else {}
    return Request(Call("POST", f"/v1/workflows/{segment(workflow_id)}/{verb}", json=body,
                        params=params), submitted_from)


def queues_from(response: httpx.Response) -> list[Queue]:
    """The views of ``GET /v1/queues``'s items."""
    return [queue_from(q) for q in response.json()["queues"]]


def queues() -> Request[list[Queue]]:
    """``Client.queues``: ``GET /v1/queues``."""
    return Request(Call("GET", "/v1/queues"), queues_from)


def whoami() -> Request[Identity]:
    """``Client.whoami``: ``GET /v1/whoami``."""
    return Request(Call("GET", "/v1/whoami"), reading(identity_from))


def definition_put(name: str, spec: dict[str, Any] | str | Path,
                   input_schema: dict[str, Any] | None) -> Request[Definition]:
    """``Definitions.put``: ``PUT /v1/definitions/{name}``."""
    return Request(definition_put_call(name, spec, input_schema), reading(definition_from))


def definitions() -> Request[Listing[Definition]]:
    """``Definitions.list``: every page of ``GET /v1/definitions``."""
    return pages("/v1/definitions", definition_from)


def definition_get(name: str, version: int | None) -> Request[Definition]:
    """``Definitions.get``: ``GET /v1/definitions/{name}`` (``?version=``)."""
    params = {} if version is None else {"version": version}
    return Request(Call("GET", f"/v1/definitions/{segment(name)}", params=params),
                   reading(definition_from))


def definition_rollback(name: str, to: int | None) -> Request[Definition]:
    """``Definitions.rollback``: ``POST /v1/definitions/{name}/rollback``."""
    return Request(Call("POST", f"/v1/definitions/{segment(name)}/rollback",
                        json={} if to is None else {"to": to}), reading(definition_from))


def definition_delete(name: str) -> Request[None]:
    """``Definitions.delete``: ``DELETE /v1/definitions/{name}``."""
    return Request(Call("DELETE", f"/v1/definitions/{segment(name)}"), nothing)
