"""The requests of ``headwater.client`` and the reading of answers, without I/O: the
``Call`` builders of its methods (``requests`` pairs each with its decoder), the
checks of their arguments, and the views of answers and SSE messages. When a call is
tried again, and what an error answer raises, is ``retry``'s."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, overload
from urllib.parse import quote

import httpx
import yaml
from httpx_sse import EventSource, ServerSentEvent

from headwater import errors
from headwater.client.types import Event, Run, Workflow, workflow_from

Mode = Literal["sync", "async", "stream"]
DEFAULT_PORT = 8080
"""The local gateway's port when ``HEADWATER_GATEWAY_PORT`` is unset."""


def default_url() -> str:
    """Where a client finds the gateway: ``HEADWATER_GATEWAY_URL``, else
    ``http://127.0.0.1:$HEADWATER_GATEWAY_PORT`` (8080 when unset), as the local stack
    starts it.

    Raises:
        ValueError: ``HEADWATER_GATEWAY_PORT`` is not a number.
    """
    url = os.environ.get("HEADWATER_GATEWAY_URL")
    if url:
        return url
    port = os.environ.get("HEADWATER_GATEWAY_PORT") or str(DEFAULT_PORT)
    if not port.isascii() or not port.isdigit():
        raise ValueError(f"HEADWATER_GATEWAY_PORT must be a port number, not {port!r}")
    return f"http://127.0.0.1:{port}"


def default_token() -> str | None:
    """The token a client sends when given none: ``HEADWATER_TOKEN`` (None: unset or
    empty)."""
    return os.environ.get("HEADWATER_TOKEN") or None


def auth_headers(token: str | None) -> dict[str, str]:
    """The headers a client sends on every request with ``token`` (spaces around it
    dropped): ``Authorization: Bearer <token>`` (RFC 6750, section 2.1), or none without
    a token (None or "").

    Raises:
        ValueError: the token has a space or a control character inside (no token
            has; such a header could not be sent), never showing the token.
    """
    token = (token or "").strip()
    if not token:
        return {}
    if not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError("the token (HEADWATER_TOKEN) has a space, a control character or "
                         "a non-ASCII character inside: not a token")
    return {"Authorization": f"Bearer {token}"}


def settings(base_url: str | None, timeout: float, retries: int) -> tuple[str, float, int]:
    """A client's ``base_url`` (None: ``default_url()``; without a trailing ``/``),
    ``timeout`` (seconds) and ``retries``, as ``Client`` and ``AsyncClient`` keep them.

    Raises:
        ValueError: ``timeout`` is not a finite number >= 0; ``HEADWATER_GATEWAY_PORT``
            is not a number.
    """
    return (base_url or default_url()).rstrip("/"), check_timeout(timeout), retries


@dataclass(frozen=True)
class Call:
    """One request: method, path (under the base URL), JSON body or raw content, query
    parameters and headers."""

    method: str
    path: str
    json: Any = None
    content: bytes | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of ``httpx.Client.request`` and ``stream`` beside the
        method and the path: ``json``, ``content``, ``params`` and ``headers`` (a copy:
        ``httpx_sse`` adds to the headers it is given)."""
        return {"json": self.json, "content": self.content, "params": self.params,
                "headers": dict(self.headers)}


def new_workflow_id() -> str:
    """A fresh run id: ``wf-`` and a random UUID4 (hex), chosen before the first try so
    that every retry names the same run."""
    return f"wf-{uuid.uuid4().hex}"


def segment(value: str) -> str:
    """``value`` percent-encoded as one URL path segment (RFC 3986, section 3.3: every
    reserved character encoded, ``:`` and ``@`` too).

    Raises:
        ValueError: ``value`` is empty (a path without its id or name names another
            resource, or none).
    """
    if not value:
        raise ValueError("an empty id or name names nothing: give the run's id or the "
                         "definition's (schedule's) name")
    return quote(value, safe="")


@overload
def check_timeout(value: float, what: str = ...) -> float: ...
@overload
def check_timeout(value: None, what: str = ...) -> None: ...


def check_timeout(value: float | None, what: str = "timeout") -> float | None:
    """``value`` as a timeout, seconds: None, or a finite number at least 0.

    Raises:
        ValueError: NaN, an infinity, a negative number or not a number, naming
            ``what`` (httpx would raise a bare ``ValueError`` or ``OverflowError``
            deep in the transport, or wait for ever).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number of seconds >= 0 (or None), "
                         f"not {value!r}")
    return value


def run_id(given: str | None) -> str:
    """The id of a new run: ``given``, or ``new_workflow_id()`` for None.

    Raises:
        ValueError: ``given`` is empty.
    """
    if given is None:
        return new_workflow_id()
    if not given:
        raise ValueError("an empty run id names nothing (None: a new id)")
    return given


def load_workflow(workflow: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A spec from a dict, a ``Path`` to a YAML or JSON file, or YAML/JSON text (a
    ``str`` naming an existing file is read as one).

    Raises:
        ValueError: the text or file is not a YAML mapping.
        FileNotFoundError: a one-line text ending in ``.yaml``, ``.yml`` or ``.json`` that
            names no file.
        OSError: the file cannot be read.
    """
    if isinstance(workflow, dict):
        return workflow
    if isinstance(workflow, Path) or (
            "\n" not in workflow and len(workflow) < 4096 and Path(workflow).is_file()):
        workflow = Path(workflow).read_text()
    try:
        spec = yaml.safe_load(workflow)
    except yaml.YAMLError as e:
        raise ValueError(f"the workflow is not YAML or JSON: {e}") from e
    if not isinstance(spec, dict):
        if isinstance(spec, str) and spec.endswith((".yaml", ".yml", ".json")):
            raise FileNotFoundError(f"no workflow file {spec!r} (from {Path.cwd()})")
        raise ValueError("the workflow must be a mapping (name, nodes ...)")
    return spec


class RunOptions(TypedDict, total=False):
    """How a run of a definition is started, besides what runs and how to wait
    (``Client.run``'s keywords, and ``submit``'s with ``SubmitOptions``).

    Attributes:
        queue_anyway: submit even when a queue it needs has no live worker.
        priority: its priority among the dispatches waiting for a queue: 0-9, higher
            first, or ``"low"``, ``"normal"``, ``"high"`` (``headwater.core.priority``;
            None: the spec's, or its definition's; 5 without one).
        cache_refresh: bypass cache hits: every cached node's attempts compute and
            store fresh outputs (``?cache=refresh``, docs/architecture.md §4o).
        labels: its labels, ``{key: value}``, merged over the spec's (its
            definition's) key by key (``headwater.core.labels``).
    """

    queue_anyway: bool
    priority: int | str | None
    cache_refresh: bool
    labels: dict[str, str] | None


class SubmitOptions(RunOptions, total=False):
    """How a run is submitted, besides what runs (``Client.submit``'s keywords):
    ``RunOptions`` and its tenant.

    Attributes:
        tenant: its tenant.
        parent: the task attempt whose ``ctx.call`` submits it (``{"workflow_id",
            "node", "index", "attempt"}``): the run is that workflow's child, cancelled
            when it ends (``headwater/core/calls.py``).
    """

    tenant: str | None
    parent: dict[str, Any] | None


def submit_call(workflow: dict[str, Any] | str | Path | None, definition: str | None,
                workflow_input: Any, workflow_id: str,
                options: SubmitOptions | None = None) -> Call:
    """``POST /v1/workflows`` with an inline spec or a definition's name, submitted as
    ``options`` say (``SubmitOptions``).

    Raises:
        ValueError: neither or both of ``workflow`` and ``definition``; an empty
            ``definition`` or ``workflow_id``.
    """
    if (workflow is None) == (definition is None):
        raise ValueError("give either workflow (a spec) or definition (a name)")
    if definition == "" or not workflow_id:
        raise ValueError("an empty definition name or run id names nothing")
    body: dict[str, Any] = {"id": workflow_id, "input": workflow_input}
    if workflow is not None:
        body["workflow"] = load_workflow(workflow)
    else:
        body["definition"] = definition
    options = options or {}
    if options.get("tenant") is not None:
        body["tenant"] = options["tenant"]
    if options.get("queue_anyway"):
        body["queue_anyway"] = True
    if options.get("priority") is not None:
        body["priority"] = options["priority"]
    if options.get("parent") is not None:
        body["parent"] = options["parent"]
    if options.get("labels"):
        body["labels"] = options["labels"]
    params = {"cache": "refresh"} if options.get("cache_refresh") else {}
    return Call("POST", "/v1/workflows", json=body, params=params)


def run_call(definition: str, workflow_input: Any, mode: Mode, timeout: float | None,
             workflow_id: str, options: RunOptions | None = None) -> Call:
    """``POST /v1/run/{definition}`` in ``mode`` (``options``: ``queue_anyway``, submit
    even when a queue has no live worker; ``priority``, the run's in place of the
    definition's; ``cache_refresh``, ``?cache=refresh``).

    Raises:
        ValueError: an empty ``definition`` or ``workflow_id``; a ``timeout`` that is
            not a finite number >= 0.
    """
    if not workflow_id:
        raise ValueError("an empty run id names nothing")
    params: dict[str, Any] = {"id": workflow_id}
    if check_timeout(timeout) is not None:
        params["timeout"] = timeout
    options = options or {}
    if options.get("queue_anyway"):
        params["queue_anyway"] = "true"
    if options.get("priority") is not None:
        params["priority"] = options["priority"]
    if options.get("cache_refresh"):
        params["cache"] = "refresh"
    labels = options.get("labels")
    if labels:
        params["label"] = label_params(labels)
    headers = {"Content-Type": "application/json"}
    if mode == "async":
        headers["Prefer"] = "respond-async"
    elif mode == "stream":
        headers["Accept"] = "text/event-stream"
    return Call("POST", f"/v1/run/{segment(definition)}",
                content=json.dumps(workflow_input).encode(), params=params, headers=headers)


def run_from(response: httpx.Response) -> Run:
    """The ``Run`` of a waiting or async run's answer (200: ended; 202: goes on)."""
    doc = response.json()
    if response.status_code == 200:
        workflow = workflow_from(doc)
        return Run(workflow.id, workflow.status, True, workflow)
    return Run(doc["id"], doc["status"], False)


def outcome(workflow: Workflow) -> Any:
    """An ended run's output.

    Raises:
        WorkflowFailed: it failed.
        WorkflowCancelled: it was cancelled.
    """
    if workflow.status == "failed":
        raise errors.WorkflowFailed(workflow.id, workflow.error, workflow.failure)
    if workflow.status == "cancelled":
        raise errors.WorkflowCancelled(workflow.id, workflow.error)
    return workflow.output


def event_from(sse: ServerSentEvent) -> Event | None:
    """The ``Event`` of an SSE message; None for one that is not an event (no data)."""
    if not sse.data:
        return None
    try:
        data = json.loads(sse.data)
    except json.JSONDecodeError:
        data = {"text": sse.data}
    event_id = int(sse.id) if sse.id and sse.id.isdigit() else 0
    return Event(event_id, sse.event or "message",
                 data if isinstance(data, dict) else {"value": data})


def sse_events(source: EventSource) -> Iterator[Event]:
    """The events of a (blocking) SSE stream, messages without data skipped."""
    for sse in source.iter_sse():
        event = event_from(sse)
        if event is not None:
            yield event


def events_call(workflow_id: str, after: int) -> Call:
    """``GET /v1/workflows/{id}/events`` resuming after seq ``after`` (0: from the
    start)."""
    headers = {"Accept": "text/event-stream"}
    if after:
        headers["Last-Event-ID"] = str(after)
    return Call("GET", f"/v1/workflows/{segment(workflow_id)}/events", headers=headers)


class ListFilters(TypedDict, total=False):
    """What ``Client.list`` filters by (all of the given must hold; None or absent: not
    filtered).

    Attributes:
        status: the runs in this status.
        name: the runs of this spec name.
        definition: the runs started from this definition (``name`` or
            ``name@version``).
        labels: the runs carrying all of them (a None value: the key with any value).
        paused: True, only the runs paused now; False, only the others.
    """

    status: str | None
    name: str | None
    definition: str | None
    labels: dict[str, str | None] | None
    paused: bool | None


def list_call(limit: int, cursor: str | None, where: ListFilters) -> Call:
    """``GET /v1/workflows`` with its filters (``where``), one page of ``limit`` from
    ``cursor``."""
    params: dict[str, Any] = {k: v for k, v in (
        ("status", where.get("status")), ("name", where.get("name")),
        ("definition", where.get("definition")), ("cursor", cursor)) if v}
    labels = where.get("labels")
    if labels:
        params["label"] = label_params(labels)
    paused = where.get("paused")
    if paused is not None:
        params["paused"] = "true" if paused else "false"
    return Call("GET", "/v1/workflows", params={**params, "limit": limit})


def label_params(labels: Mapping[str, str | None]) -> list[str]:
    """Labels as ``?label=`` parameters: ``key:value``, or ``key`` for a None value
    (any value, in a filter)."""
    return [key if value is None else f"{key}:{value}" for key, value in labels.items()]


def signal_call(workflow_id: str, name: str, fields: dict[str, Any], index: int | None,
                signal_id: str) -> Call:
    """``POST /v1/workflows/{id}/signals/{name}`` (the ``signal_id`` chosen before the
    first try, so that a retry is recorded once)."""
    body: dict[str, Any] = {"fields": fields, "signal_id": signal_id}
    if index is not None:
        body["index"] = index
    return Call("POST", f"/v1/workflows/{segment(workflow_id)}/signals/{segment(name)}",
                json=body)


def definition_put_call(name: str, spec: dict[str, Any] | str | Path,
                        input_schema: dict[str, Any] | None) -> Call:
    """``PUT /v1/definitions/{name}`` with the spec (and its input's JSON Schema)."""
    body: dict[str, Any] = {"workflow": load_workflow(spec)}
    if input_schema is not None:
        body["input_schema"] = input_schema
    return Call("PUT", f"/v1/definitions/{segment(name)}", json=body)
