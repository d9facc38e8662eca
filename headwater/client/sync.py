"""``Client``: the blocking client of one gateway. It only
sends, with httpx's blocking client, what the sans-I/O modules decide (``requests``,
``retry``, ``follow``); see ``headwater.client`` for auth, errors and retries."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, Unpack, overload

import httpx
from httpx_sse import connect_sse

from headwater import errors
from headwater.client import requests as req
from headwater.client.blob_io import BlobReads
from headwater.client.blobs import resolved_run
from headwater.client.definitions import Definitions
from headwater.client.follow import Follow, ResultWatch
from headwater.client.http import (
    Call,
    ListFilters,
    Mode,
    RunOptions,
    SubmitOptions,
    auth_headers,
    default_token,
    settings,
    sse_events,
)
from headwater.client.log_io import TaskLogReads
from headwater.client.operations import Operations
from headwater.client.requests import Listing, Request
from headwater.client.retry import Tries, unexpected
from headwater.client.schedules import Schedules
from headwater.client.tasks import NodeTasks, Task
from headwater.client.triggers import Triggers
from headwater.client.types import (
    Event,
    Identity,
    Page,
    Queue,
    Run,
    SignalFate,
    Submitted,
)
from headwater.client.webhooks import Webhooks
from headwater.client.workflow_runs import WorkflowFunction, is_workflow, workflow_request

__all__ = ["Client"]
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


class Client(BlobReads, TaskLogReads):
    """A blocking client of one gateway (thread-safe: httpx's client is).

    Args:
        base_url: the gateway's URL (None: ``http.default_url()``).
        token: the bearer token sent on every request (None: ``HEADWATER_TOKEN``; "":
            none).
        timeout: each request's timeout, seconds (connect, read, write, pool); a
            waiting ``run`` adds its ``timeout`` to it.
        retries: extra tries after a connection error or a 503 (0: none).
        transport: an httpx transport (tests pass ``httpx.MockTransport``). resolve_blobs:
            put back values held by reference (``blob_io.BlobReads``).
    """

    def __init__(self, base_url: str | None = None, token: str | None = None, *,
                 timeout: float = 30.0, retries: int = 5,
                 transport: httpx.BaseTransport | None = None,
                 resolve_blobs: bool = True) -> None:
        self.base_url, self.timeout, self.retries = settings(base_url, timeout, retries)
        self.resolve_blobs = resolve_blobs
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers=auth_headers(default_token() if token is None else token))
        self.definitions, self.schedules = Definitions(self), Schedules(self)
        self.triggers = Triggers(self)
        self.webhooks = Webhooks(self)
        self.operations = Operations(self)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def send(self, call: Call, timeout: float | None = None) -> httpx.Response:
        """Send ``call``, trying again after a connection error or a 503.

        Args:
            call: the request.
            timeout: this request's read timeout, seconds (None: the client's).

        Returns:
            The answer (2xx or 3xx).

        Raises:
            HeadwaterHTTPError: an error answer (a subclass by status).
            GatewayUnreachable: no answer within the retries.
        """
        tries = Tries(self.retries, f"{call.method} {self.base_url}{call.path}")
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, **call.options(),
                    timeout=self.timeout if timeout is None else timeout)
            except httpx.TransportError as e:
                time.sleep(tries.lost(e))
                continue
            wait = tries.answered(response)
            if wait is None:
                return response
            time.sleep(wait)

    def fetch(self, request: Request[T]) -> T:
        """Send a method's request (``requests``) and decode its answer; errors
        as ``send``'s."""
        return request.answer(self.send(request.call, request.read_timeout(self.timeout)))

    def fetch_all(self, request: Request[Listing[T]]) -> builtins.list[T]:
        """Every item of a listing, page after page (``fetch`` of each)."""
        listing = self.fetch(request)
        while listing.next is not None:
            listing = self.fetch(listing.next)
        return listing.found

    def submit(self, workflow: dict[str, Any] | str | Path | None = None, *,
               definition: str | None = None, input: Any = None, id: str | None = None,
               **options: Unpack[SubmitOptions]) -> Submitted:
        """Submit a run of an inline spec (``workflow``: a dict, a YAML/JSON file or
        text) or of a stored definition (``definition``: ``name`` or ``name@3``).

        Args:
            workflow: the spec.
            definition: the definition's name instead.
            input: the run's input (JSON).
            id: the run's id (None: ``wf-<uuid4 hex>``, chosen before the first try).
            options: ``tenant``, ``queue_anyway`` (submit even when a queue it needs
                has no live worker), ``priority`` (0-9 or a name), ``labels``
                (``{key: value}``, over the spec's): ``SubmitOptions``.

        Raises:
            ValueError: neither or both of ``workflow`` and ``definition``; an empty id.
            Conflict: the id is taken by another body. Unprocessable: an invalid spec
                or input. NotFound/Gone: unknown or deleted definition.
        """
        return self.fetch(req.submit(workflow, definition, input, id, options))

    @overload
    def run(self, workflow: WorkflowFunction[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R: ...
    @overload
    def run(self, definition: str, /, input: Any = ...,
            *, mode: Literal["sync", "async"] = ..., timeout: float | None = ...,
            id: str | None = ..., queue_anyway: bool = ...,
            priority: int | str | None = ..., cache_refresh: bool = ...,
            labels: dict[str, str] | None = ...) -> Run: ...
    @overload
    def run(self, definition: str, /, input: Any = ...,
            *, mode: Literal["stream"], timeout: float | None = ...,
            id: str | None = ..., queue_anyway: bool = ...,
            priority: int | str | None = ...,
            cache_refresh: bool = ...,
            labels: dict[str, str] | None = ...) -> Iterator[Event]: ...

    def run(self, target: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Run a ``@workflow`` function on its arguments, returning its output (as
        ``result``; ``TypeError``: arguments that do not fit it), or a definition by name
        (``POST /v1/run/{name}``; ``ValueError``: an empty name or id, a bad timeout):

        Args:
            definition: ``name`` or ``name@3``. input: the run's input (JSON).
            mode: ``sync`` waits up to ``timeout`` (``Run.done`` tells whether it ended);
                ``async`` answers at once; ``stream`` yields the ``accepted`` event (id
                0, ``data["id"]`` the run's id) then the run's events to its terminal
                one, reconnecting as ``events`` does.
            timeout: the gateway's wait, seconds (None: ``HEADWATER_RUN_TIMEOUT_MAX_S``).
            id, queue_anyway: the run's id (None: chosen before the first try); submit
                even when a queue it needs has no live worker.
            priority: the run's priority in place of the definition's: 0-9, higher
                first, or ``"low"``, ``"normal"``, ``"high"`` (as ``submit``'s; None:
                the definition's). A ``@workflow`` function's keywords are its own: its
                runs take the priority its definition gives.
            cache_refresh: bypass cache hits (``?cache=refresh``): the run's cached
                nodes compute and store fresh outputs.
            labels: the run's labels, merged over the definition's (``?label=k:v``).
        """
        if is_workflow(target):
            ran = self.fetch(workflow_request(target, args, kwargs))
            return self.result(ran.id) if not ran.workflow else self._output(ran.workflow)
        return self._run(target, *args, **kwargs)

    def _run(self, definition: str, input: Any = None, *, mode: Mode = "sync",
             timeout: float | None = None, id: str | None = None,
             **options: Unpack[RunOptions]) -> Run | Iterator[Event]:
        request = req.run(definition, input, mode, timeout, id, options)
        if mode == "stream":
            return self._follow(Follow.run(self, request.call))
        ran = self.fetch(request)
        return resolved_run(ran, self._resolved(ran.workflow)) \
            if ran.workflow and self.resolve_blobs else ran

    def task(self, workflow_id: str, node: str, index: int | None = None) -> Task:
        """One task of a run and every attempt of it, each with its error type and
        traceback (``GET /v1/workflows/{id}/tasks/{node}/{index}``); its input and
        output held by reference put back, unless the client was made with
        ``resolve_blobs=False``.

        Args:
            workflow_id: the run.
            node: the task's node.
            index: its index (a map item's; a loop's 2k decide, 2k+1 tool); None for a
                node without index.

        Raises:
            ValueError: an empty node, or an index below 0.
            NotFound: unknown run, or no such task (yet).
        """
        found = self.fetch(req.task(workflow_id, node, index))
        return self._resolved_task(found) if self.resolve_blobs else found

    def node_tasks(self, workflow_id: str, node: str, after: int | None = None,
                   limit: int = 100, *, status: str | None = None) -> NodeTasks:
        """A page of a node's tasks in index order
        (``GET /v1/workflows/{id}/nodes/{node}/tasks``); ``NodeTasks.next`` is the
        ``after`` of the next page.

        Args:
            workflow_id: the run.
            node: the node.
            after: the index the page starts after (None: from the first).
            limit: tasks per page, 1 to 500.
            status: only the tasks in this status (``failed`` ...).

        Raises:
            NotFound: unknown run or node. Unprocessable: a limit or status out of range.
        """
        return self.fetch(req.node_tasks(workflow_id, node, after, limit, status))

    def list(self, *, limit: int = 50, cursor: str | None = None,
             **where: Unpack[ListFilters]) -> Page:
        """Runs newest first (``GET /v1/workflows``), filtered by ``where``
        (``ListFilters``: ``status``, ``name``, ``definition``, ``labels``: only runs
        carrying every one, ``{"team": "search"}``, a None value: the key with any
        value; ``paused``: True, only the runs paused now, False, only the others);
        ``Page.next_cursor`` pages on."""
        return self.fetch(req.workflows(limit, cursor, where))

    def result(self, workflow_id: str, timeout: float | None = None) -> Any:
        """Wait for a run to end and return its output.

        Args:
            workflow_id: the run.
            timeout: the longest wait, seconds (None: no limit).

        Raises:
            WorkflowFailed: it failed. WorkflowCancelled: it was cancelled.
            ResultTimeout: (a ``TimeoutError``) it has not ended within ``timeout``.
            NotFound: unknown id.
        """
        watch = ResultWatch(self, workflow_id, timeout)
        try:
            workflow = self._document(workflow_id)
            if not workflow.done:
                for _ in self._follow(watch.follow(workflow.seq)):
                    pass  # until the terminal event
                workflow = self._document(workflow_id)
            while not workflow.done:
                time.sleep(watch.settle())
                workflow = self._document(workflow_id)
        except errors.ResultTimeout:
            raise watch.timed_out() from None
        return self._output(workflow)

    def events(self, workflow_id: str, last_event_id: int | None = None) -> Iterator[Event]:
        """A run's events after seq ``last_event_id`` (None: from the start), in order,
        until its terminal one; a lost stream is resumed with ``Last-Event-ID``.

        Raises:
            NotFound: unknown id.
            GatewayUnreachable: no stream within the retries.
        """
        return self._follow(Follow(self, workflow_id, last_event_id or 0))

    def _follow(self, follow: Follow) -> Iterator[Event]:
        """The events ``follow`` hands on, its stream opened again as it says."""
        while True:
            call = follow.call()
            try:
                with connect_sse(self._http, call.method, call.path, **call.options(),
                                 timeout=follow.read_timeout()) as source:
                    if unexpected(source.response):
                        source.response.read()
                    if follow.opened(source.response):
                        for event in sse_events(source):
                            if follow.take(event):
                                yield event
                                if follow.done(event):
                                    return
                        if follow.ended(self._document(follow.workflow_id)):
                            return
            except httpx.TransportError as e:
                follow.lost(e)
            time.sleep(follow.pause())

    @overload
    def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
               index: int | None = ..., signal_id: str | None = ...,
               wait: Literal[False] = ...) -> dict[str, Any]: ...
    @overload
    def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
               index: int | None = ..., signal_id: str | None = ...,
               wait: Literal[True]) -> SignalFate: ...

    def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
               index: int | None = None, signal_id: str | None = None,
               wait: bool = False) -> dict[str, Any] | SignalFate:
        """Signal a run's wait (``POST .../signals/{name}``); ``signal_id`` (None: a
        UUID4 chosen before the first try) makes a retry count once. Returns the
        answer (``workflow_id``, ``signal``, ``signal_id``, ``links``); with ``wait``,
        its fate once the run applied it (``consumed``, ``buffered``, ``discarded`` or
        ``refused``, with the reason), or as it stands after ``requests.SIGNAL_WAIT_S``
        (30 s: ``received``; ``wait_signal`` waits as long as asked)."""
        answer = self.fetch(req.signal(workflow_id, name, fields, index, signal_id))
        if not wait:
            return answer
        return self.wait_signal(workflow_id, answer["signal_id"])

    def signal_fate(self, workflow_id: str, signal_id: str) -> SignalFate:
        """What became of a signal (``GET .../signals/{signal_id}``). Raises
        ``NotFound`` for an id never sent to the run."""
        return self.fetch(req.signal_fate(workflow_id, signal_id))

    def wait_signal(self, workflow_id: str, signal_id: str,
                    timeout: float = req.SIGNAL_WAIT_S) -> SignalFate:
        """Ask for a signal's fate until the run applied it, or ``timeout`` seconds
        passed (then its fate as it stands: ``received``)."""
        wait = req.FateWait(timeout, time.monotonic())
        while True:
            fate = self.signal_fate(workflow_id, signal_id)
            pause = None if fate.applied else wait.pause(time.monotonic())
            if pause is None:
                return fate
            time.sleep(pause)

    def cancel(self, workflow_id: str, reason: str = "") -> dict[str, Any]:
        """Ask for a run's cancellation. Returns the answer (``status:
        cancel_requested``). Raises ``Conflict`` when it has already ended."""
        return self.fetch(req.cancel(workflow_id, reason))

    def pause(self, workflow_id: str, reason: str = "",
              request_id: str | None = None) -> dict[str, Any]:
        """Pause a run: it dispatches nothing new until resumed; attempts running go on
        and their results are applied. Returns the answer (``status: pause_requested``,
        its ``request_id``, ``was_paused``). Raises ``NotFound`` for an unknown run,
        ``Conflict`` when it has ended. A pause of a paused run changes nothing."""
        return self.fetch(req.pause(workflow_id, False, reason, request_id))

    def resume(self, workflow_id: str, request_id: str | None = None) -> dict[str, Any]:
        """Resume a paused run: what it held is dispatched and the timers that came due
        fire, in order. Returns the answer (``status: resume_requested``). Raises as
        ``pause``; a resume of a run that is not paused changes nothing."""
        return self.fetch(req.pause(workflow_id, True, "", request_id))

    def rerun(self, workflow_id: str, *, input: Any = req.SAME_INPUT, id: str | None = None,
              from_node: str | None = None, cache_refresh: bool = False) -> Submitted:
        """Run an ended run again under a new id, reusing what succeeded: from its failed
        and cancelled nodes (``POST .../rerun``), or with ``from_node`` from that node on
        (``POST .../reset``, any ended run).

        Args:
            workflow_id: the source run.
            input: the new run's input (left out: the source's).
            id: the new run's id (None: ``wf-<uuid4 hex>``, chosen before the first try,
                so retrying is safe).
            from_node: reset to this node: it and everything downstream of it run again.
            cache_refresh: its cached nodes compute afresh instead of taking the cache's
                entries (``?cache=refresh``), as a reset to a cached node wants.

        Raises:
            NotFound: no such run. Conflict: it has not ended (a rerun: or it succeeded),
                or the id is taken by another body. Unprocessable: no such node.
        """
        return self.fetch(req.rerun(workflow_id, input, id, from_node, cache_refresh))

    def queues(self) -> builtins.list[Queue]:
        """Every queue's backlog, workers and tasks (``GET /v1/queues``)."""
        return self.fetch(req.queues())

    def whoami(self) -> Identity:
        """The token's tenant and role (``GET /v1/whoami``). Raises ``Unauthorized``
        when the gateway's auth is on and the token is missing or not taken."""
        return self.fetch(req.whoami())
