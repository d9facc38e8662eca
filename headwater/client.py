"""A Python client of the gateway's HTTP API (README, "HTTP API"): ``Client`` (blocking)
and ``AsyncClient`` (``headwater.client_async``, the same methods to await).

    from headwater.client import Client
    with Client("http://127.0.0.1:8080") as hw:
        run = hw.run("docs.index", {"module": "json"}, timeout=30)
        print(run.output if run.done else hw.result(run.id, timeout=300))

Errors: every problem document the gateway answers is raised as a
``headwater.errors.HeadwaterHTTPError`` subclass chosen by status (``NotFound``,
``Conflict``, ``Unprocessable``, ``TooManyRequests`` ...), a redirect as ``HeadwaterHTTPError``;
an empty id or name or a timeout not finite and >= 0 is a ``ValueError`` before sending;
a run that failed or was cancelled raises ``WorkflowFailed`` / ``WorkflowCancelled``.

Retries: a connection error (the transport's, timeouts included) and a 503 are tried
again, ``retries`` times, after ``client_http.delay_s`` (``Retry-After`` or a doubling
backoff, at most 2 s). That is safe for every method: a submission's id (and a
signal's ``signal_id``) is chosen before the first try, so a retry names the same run
(the gateway answers 200 for the same id and body). Other errors are raised at once.

``events`` follows a run's SSE stream and, when the connection drops or the gateway
shuts down, reconnects (same retry policy, counted afresh after each event) with
``Last-Event-ID``, so no event is lost or repeated. ``result`` rides on ``events``: it
reads the run once, follows its events until the terminal one, then reads its output.
Not imported by ``headwater/__init__.py``: task code that does not use it does not pay
for httpx.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

import httpx
from httpx_sse import connect_sse

from headwater import errors
from headwater.client_async import AsyncClient
from headwater.client_http import (
    Call,
    Mode,
    check_timeout,
    default_url,
    definition_put_call,
    delay_s,
    error_for,
    events_call,
    list_call,
    outcome,
    retryable,
    run_call,
    run_from,
    run_id,
    segment,
    signal_call,
    sse_events,
    submit_call,
    unexpected,
)
from headwater.client_schedules import Schedules
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

__all__ = ["AsyncClient", "Client", "Definitions"]
RUN_WAIT_S = 60.0
"""How long a waiting ``run`` without ``timeout`` expects the gateway to wait, seconds
(its ``HEADWATER_RUN_TIMEOUT_MAX_S`` by default): the read timeout is this plus
``timeout``; a gateway waiting longer is asked again (the same id: the same run)."""
SETTLE_S = 0.1
"""The pause between reads of a run whose terminal event was seen but whose document
does not show it yet, seconds."""


class Client:
    """A blocking client of one gateway (thread-safe: httpx's client is).

    Args:
        base_url: the gateway's URL.
        timeout: each request's timeout, seconds (connect, read, write, pool); a
            waiting ``run`` adds its ``timeout`` to it.
        retries: extra tries after a connection error or a 503 (0: none).
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
    """

    def __init__(self, base_url: str | None = None, *, timeout: float = 30.0,
                 retries: int = 5, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = (base_url or default_url()).rstrip("/")
        self.timeout, self.retries = check_timeout(timeout), retries
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout,
                                  transport=transport)
        self.definitions = Definitions(self)
        self.schedules = Schedules(self)

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
        tries = 0
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, json=call.json, content=call.content,
                    params=call.params, headers=call.headers,
                    timeout=self.timeout if timeout is None else timeout)
            except httpx.TransportError as e:
                if tries >= self.retries:
                    raise errors.GatewayUnreachable(
                        f"{call.method} {self.base_url}{call.path}: {e!r}") from e
                time.sleep(delay_s(tries))
                tries += 1
                continue
            if retryable(response) and tries < self.retries:
                time.sleep(delay_s(tries, response))
                tries += 1
                continue
            if unexpected(response):
                raise error_for(response)
            return response

    def submit(self, workflow: dict[str, Any] | str | Path | None = None, *,
               definition: str | None = None, input: Any = None, id: str | None = None,
               tenant: str | None = None, queue_anyway: bool = False) -> Submitted:
        """Submit a run of an inline spec (``workflow``: a dict, a YAML/JSON file or
        text) or of a stored definition (``definition``: ``name`` or ``name@3``).

        Args:
            workflow: the spec.
            definition: the definition's name instead.
            input: the run's input (JSON).
            id: the run's id (None: ``wf-<uuid4 hex>``, chosen before the first try).
            tenant: its tenant.
            queue_anyway: submit even when a queue it needs has no live worker.

        Raises:
            ValueError: neither or both of ``workflow`` and ``definition``; an empty id.
            Conflict: the id is taken by another body. Unprocessable: an invalid spec
                or input. NotFound/Gone: unknown or deleted definition.
        """
        call = submit_call(workflow, definition, input, run_id(id), tenant, queue_anyway)
        response = self.send(call)
        doc = response.json()
        return Submitted(doc["id"], doc["status"], response.status_code == 202,
                         doc.get("links") or {})

    @overload
    def run(self, definition: str, input: Any = ...,
            *, mode: Literal["sync", "async"] = ..., timeout: float | None = ...,
            id: str | None = ..., queue_anyway: bool = ...) -> Run: ...
    @overload
    def run(self, definition: str, input: Any = ...,
            *, mode: Literal["stream"], timeout: float | None = ...,
            id: str | None = ..., queue_anyway: bool = ...) -> Iterator[Event]: ...

    def run(self, definition: str, input: Any = None, *, mode: Mode = "sync",
            timeout: float | None = None, id: str | None = None,
            queue_anyway: bool = False) -> Run | Iterator[Event]:
        """Run a definition (``POST /v1/run/{name}``).

        Args:
            definition: ``name`` or ``name@3``.
            input: the run's input (JSON).
            mode: ``sync`` waits up to ``timeout`` (``Run.done`` tells whether it ended);
                ``async`` answers at once; ``stream`` yields the ``accepted`` event (id
                0, ``data["id"]`` the run's id) then the run's events until its terminal
                one, reconnecting as ``events`` does.
            timeout: how long the gateway waits, seconds (None: its maximum,
                ``HEADWATER_RUN_TIMEOUT_MAX_S``).
            id: the run's id (None: chosen before the first try).
            queue_anyway: submit even when a queue it needs has no live worker.

        Raises:
            ValueError: an empty name or id; a timeout not finite or below 0.
        """
        workflow_id = run_id(id)
        call = run_call(definition, input, mode, timeout, workflow_id, queue_anyway)
        if mode == "stream":
            return self._run_stream(call, workflow_id)
        wait_s = RUN_WAIT_S if timeout is None else timeout
        return run_from(self.send(call, self.timeout + wait_s if mode == "sync" else None))

    def _run_stream(self, call: Call, workflow_id: str) -> Iterator[Event]:
        """The events of a streamed run: its own stream, then ``events`` once lost."""
        return self._follow(workflow_id, 0, None, call)

    def get(self, workflow_id: str) -> Workflow:
        """One run (``GET /v1/workflows/{id}``). Raises ``NotFound`` when unknown."""
        return workflow_from(self.send(Call("GET", f"/v1/workflows/{segment(workflow_id)}"))
                             .json())

    def list(self, *, status: str | None = None, name: str | None = None,
             definition: str | None = None, limit: int = 50,
             cursor: str | None = None) -> Page:
        """Runs newest first (``GET /v1/workflows``), filtered; ``Page.next_cursor``
        pages on."""
        doc = self.send(list_call(status, name, definition, limit, cursor)).json()
        return Page([workflow_from(i) for i in doc["items"]], doc.get("next_cursor"))

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
        deadline = None if (wait := check_timeout(timeout)) is None else time.monotonic() + wait
        try:
            workflow = self.get(workflow_id)
            if not workflow.done:
                for event in self._follow(workflow_id, workflow.seq, deadline):
                    if event.terminal:
                        break
                workflow = self.get(workflow_id)
                while not workflow.done:  # its status is projected with the terminal event
                    self._read_timeout(workflow_id, deadline)
                    time.sleep(SETTLE_S)
                    workflow = self.get(workflow_id)
        except errors.ResultTimeout:
            raise errors.ResultTimeout(workflow_id, timeout or 0.0) from None
        return outcome(workflow)

    def events(self, workflow_id: str, last_event_id: int | None = None) -> Iterator[Event]:
        """A run's events after seq ``last_event_id`` (None: from the start), in order,
        until its terminal one; a lost stream is resumed with ``Last-Event-ID``.

        Raises:
            NotFound: unknown id.
            GatewayUnreachable: no stream within the retries.
        """
        return self._follow(workflow_id, last_event_id or 0, None)

    def _follow(self, workflow_id: str, after: int, deadline: float | None,
                first: Call | None = None) -> Iterator[Event]:
        """Events after seq ``after`` until the terminal one (or ``deadline``, on
        ``time.monotonic()``: ``ResultTimeout``). ``first``: the request to send until
        it is answered (a streamed run's ``POST``, whose ``accepted`` event is yielded
        once) instead of ``GET .../events``."""
        failures, last, greet = 0, after, first is not None
        while True:
            call = first or events_call(workflow_id, last)
            try:
                with connect_sse(self._http, call.method, call.path, content=call.content,
                                 params=call.params, headers=call.headers,
                                 timeout=self._read_timeout(workflow_id, deadline)) as source:
                    if self._answered(source.response, failures):
                        first = None
                        for event in sse_events(source):
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
                        if self._ended_at(workflow_id, last):
                            return
            except httpx.TransportError as e:
                self._read_timeout(workflow_id, deadline)
                if failures >= self.retries:
                    raise errors.GatewayUnreachable(
                        f"events of {workflow_id} from {self.base_url}: {e!r}") from e
            time.sleep(delay_s(failures))
            failures += 1

    def _answered(self, response: httpx.Response, failures: int) -> bool:
        """True for a stream's 2xx answer, False for a 503 worth another try.

        Raises:
            HeadwaterHTTPError: any other error answer.
        """
        if not unexpected(response):
            return True
        response.read()
        if retryable(response) and failures < self.retries:
            return False
        raise error_for(response)

    def _read_timeout(self, workflow_id: str, deadline: float | None) -> float:
        """The read timeout left before ``deadline``, seconds.

        Raises:
            ResultTimeout: the deadline has passed.
        """
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise errors.ResultTimeout(workflow_id, self.timeout)
        return min(self.timeout, left)

    def _ended_at(self, workflow_id: str, last: int) -> bool:
        """Whether a stream that closed without a terminal event was resumed after the
        run's end (nothing more will come)."""
        workflow = self.get(workflow_id)
        return workflow.done and workflow.seq <= last

    def signal(self, workflow_id: str, name: str, fields: dict[str, Any], *,
               index: int | None = None, signal_id: str | None = None) -> dict[str, Any]:
        """Signal a run's wait (``POST .../signals/{name}``); ``signal_id`` (None: a
        UUID4 chosen before the first try) makes a retry count once. Returns the
        answer (``workflow_id``, ``signal``, ``signal_id``, ``links``)."""
        call = signal_call(workflow_id, name, fields, index, signal_id or uuid.uuid4().hex)
        result: dict[str, Any] = self.send(call).json()
        return result

    def cancel(self, workflow_id: str, reason: str = "") -> dict[str, Any]:
        """Ask for a run's cancellation. Returns the answer (``status:
        cancel_requested``). Raises ``Conflict`` when it has already ended."""
        result: dict[str, Any] = self.send(Call(
            "POST", f"/v1/workflows/{segment(workflow_id)}/cancel",
            json={"reason": reason})).json()
        return result

    def queues(self) -> builtins.list[Queue]:
        """Every queue's backlog, workers and tasks (``GET /v1/queues``)."""
        return [queue_from(q) for q in self.send(Call("GET", "/v1/queues")).json()["queues"]]


class Definitions:
    """``Client.definitions``: the registry (``/v1/definitions``)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def put(self, name: str, spec: dict[str, Any] | str | Path, *,
            input_schema: dict[str, Any] | None = None) -> Definition:
        """Store a version (``PUT /v1/definitions/{name}``): a new one (``raw`` of a
        201), or the current one when the body is the same. Raises ``Unprocessable``
        naming every fault of the spec or the schema."""
        return definition_from(self._client.send(definition_put_call(name, spec,
                                                                     input_schema)).json())

    def list(self) -> builtins.list[Definition]:
        """Every definition's latest version (deleted ones aside), by name (every page
        of ``GET /v1/definitions``)."""
        found: builtins.list[Definition] = []
        cursor = None
        while True:
            params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
            doc = self._client.send(Call("GET", "/v1/definitions", params=params)).json()
            found += [definition_from(d) for d in doc["items"]]
            cursor = doc.get("next_cursor")
            if not cursor:
                return found

    def get(self, name: str, version: int | None = None) -> Definition:
        """One version (None: the latest); ``raw["workflow"]`` is its spec. Raises
        ``NotFound`` (unknown name or version), ``Gone`` (deleted, without
        ``version``)."""
        params = {} if version is None else {"version": version}
        return definition_from(self._client.send(Call(
            "GET", f"/v1/definitions/{segment(name)}", params=params)).json())

    def delete(self, name: str) -> None:
        """Stop new runs of ``name`` (they get ``Gone``; running ones go on); deleting
        it again changes nothing. Raises ``NotFound`` when unknown."""
        self._client.send(Call("DELETE", f"/v1/definitions/{segment(name)}"))
