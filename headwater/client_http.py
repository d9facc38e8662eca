"""The I/O-free half of ``headwater.client``: the requests each method sends
(``Call``), how answers and problem documents are read, and the retry policy. ``Client``
and ``AsyncClient`` only send the calls, each in its own way."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx
import yaml
from httpx_sse import ServerSentEvent

from headwater import errors
from headwater.client_types import Event, Run, Workflow, workflow_from

Mode = Literal["sync", "async", "stream"]
BACKOFF_BASE_S = 0.2
"""The first retry's delay, seconds; each further one doubles, up to ``BACKOFF_MAX_S``."""
BACKOFF_MAX_S = 2.0
"""The longest delay between two tries, seconds (a ``Retry-After`` too is cut to it)."""
_ERRORS: dict[int, type[errors.HeadwaterHTTPError]] = {
    400: errors.BadRequest, 404: errors.NotFound, 409: errors.Conflict, 410: errors.Gone,
    422: errors.Unprocessable, 429: errors.TooManyRequests, 503: errors.Unavailable}


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


def new_workflow_id() -> str:
    """A fresh run id: ``wf-`` and a random UUID4 (hex), chosen before the first try so
    that every retry names the same run."""
    return f"wf-{uuid.uuid4().hex}"


def segment(value: str) -> str:
    """``value`` percent-encoded as one URL path segment (RFC 3986, section 3.3: every
    reserved character encoded, ``:`` and ``@`` too)."""
    return quote(value, safe="")


def load_workflow(workflow: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A spec from a dict, a ``Path`` to a YAML or JSON file, or YAML/JSON text (a
    ``str`` naming an existing file is read as one).

    Raises:
        ValueError: the text or file is not a YAML mapping.
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
        raise ValueError("the workflow must be a mapping (name, nodes ...)")
    return spec


def error_for(response: httpx.Response) -> errors.HeadwaterHTTPError:
    """The exception of an error answer: its problem document (RFC 9457) mapped by
    status (``errors.NotFound`` for 404 ...; ``HeadwaterHTTPError`` for the others)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    doc: dict[str, Any] = body if isinstance(body, dict) else {}
    kind = _ERRORS.get(response.status_code, errors.HeadwaterHTTPError)
    args = (response.status_code, str(doc.get("type") or "about:blank"),
            str(doc.get("title") or response.reason_phrase),
            str(doc.get("detail") or ("" if doc else response.text[:500])), doc)
    if kind is errors.TooManyRequests:
        return errors.TooManyRequests(*args, retry_after=retry_after_s(response))
    return kind(*args)


def retry_after_s(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (RFC 9110, section 10.2.3: seconds or an
    HTTP date), or None when absent or malformed."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
        date = parsedate_to_datetime(response.headers.get("date", "")) if \
            response.headers.get("date") else None
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - date).total_seconds()) if date else None


def delay_s(tries: int, response: httpx.Response | None = None) -> float:
    """The wait before try ``tries + 1``, seconds: ``Retry-After`` when the answer
    has one, else ``BACKOFF_BASE_S`` doubled per try; at most ``BACKOFF_MAX_S``."""
    asked = retry_after_s(response) if response is not None else None
    wait = asked if asked is not None else BACKOFF_BASE_S * 2 ** tries
    return min(wait, BACKOFF_MAX_S)


def retryable(response: httpx.Response) -> bool:
    """Whether an answer is worth another try with the same request: 503 (Kafka or
    PostgreSQL unavailable, the gateway connecting or stopping)."""
    return response.status_code == 503


def submit_call(workflow: dict[str, Any] | str | Path | None, definition: str | None,
                workflow_input: Any, workflow_id: str, tenant: str | None) -> Call:
    """``POST /v1/workflows`` with an inline spec or a definition's name.

    Raises:
        ValueError: neither or both of ``workflow`` and ``definition``.
    """
    if (workflow is None) == (definition is None):
        raise ValueError("give either workflow (a spec) or definition (a name)")
    body: dict[str, Any] = {"id": workflow_id, "input": workflow_input}
    if workflow is not None:
        body["workflow"] = load_workflow(workflow)
    else:
        body["definition"] = definition
    if tenant is not None:
        body["tenant"] = tenant
    return Call("POST", "/v1/workflows", json=body)


def run_call(definition: str, workflow_input: Any, mode: Mode, timeout: float | None,
             workflow_id: str) -> Call:
    """``POST /v1/run/{definition}`` in ``mode``."""
    params: dict[str, Any] = {"id": workflow_id}
    if timeout is not None:
        params["timeout"] = timeout
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
        raise errors.WorkflowFailed(workflow.id, workflow.error)
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


def events_call(workflow_id: str, after: int) -> Call:
    """``GET /v1/workflows/{id}/events`` resuming after seq ``after`` (0: from the
    start)."""
    headers = {"Accept": "text/event-stream"}
    if after:
        headers["Last-Event-ID"] = str(after)
    return Call("GET", f"/v1/workflows/{segment(workflow_id)}/events", headers=headers)


def list_call(status: str | None, name: str | None, definition: str | None, limit: int,
              cursor: str | None) -> Call:
    """``GET /v1/workflows`` with its filters (None: not filtered)."""
    params = {k: v for k, v in (("status", status), ("name", name),
                                ("definition", definition), ("cursor", cursor)) if v}
    return Call("GET", "/v1/workflows", params={**params, "limit": limit})


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
