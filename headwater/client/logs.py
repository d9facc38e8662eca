"""Task logs from the client, without I/O: the requests of ``task_logs`` and
``run_logs`` (every line so far, page after page) and the following of a task's log
(``follow_task_logs``: its SSE stream, reopened after ``Last-Event-ID`` when lost, until
its ``end`` event). ``sync.Client`` and ``aio.AsyncClient`` only send them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from httpx_sse import ServerSentEvent

from headwater.client.follow import QUIET_STREAM_S, Settings
from headwater.client.http import Call, segment
from headwater.client.requests import Listing, Request
from headwater.client.retry import Tries, error_for, unexpected

PAGE = 1000
"""Lines asked for per page."""


@dataclass(frozen=True)
class TaskLogLine:
    """One line a task attempt logged or printed.

    Attributes:
        node: the node id.
        index: the map item or loop step (None: a node without index).
        attempt: the attempt number, 1-based.
        line: its number in the attempt's log, 1-based.
        at: when it was logged (RFC 3339, the worker's clock).
        level: ``INFO``, ``WARNING``...; ``INFO`` for stdout, ``ERROR`` for stderr.
        stream: ``log``, ``stdout`` or ``stderr``.
        logger: the logger's name (``headwater.task`` for ``ctx.log``; ``""``: a stream).
        message: the text (a record's traceback on its next lines).
    """

    node: str
    index: int | None
    attempt: int
    line: int
    at: str
    level: str
    stream: str
    logger: str
    message: str


def line_from(doc: dict[str, Any], node: str | None = None,
              index: int | None = None) -> TaskLogLine:
    """The view of a line of the API (``node`` and ``index`` when it does not say)."""
    return TaskLogLine(doc.get("node", node) or "", doc.get("index", index), doc["attempt"],
                       doc["line"], doc["at"], doc["level"], doc["stream"], doc["logger"],
                       doc["message"])


def task_path(workflow_id: str, node: str, index: int | None) -> str:
    """``/v1/workflows/{id}/tasks/{node}/{index}/logs`` (``-``: no index)."""
    return (f"/v1/workflows/{segment(workflow_id)}/tasks/{segment(node)}/"
            f"{'-' if index is None else int(index)}/logs")


def task_logs(workflow_id: str, node: str, index: int | None, attempt: int | None,
              after: str | None = None,
              found: tuple[TaskLogLine, ...] = ()) -> Request[Listing[TaskLogLine]]:
    """A task's lines so far, a page after ``after`` (None: from the first)."""
    params: dict[str, Any] = {"limit": PAGE}
    if attempt is not None:
        params["attempt"] = attempt
    if after:
        params["after"] = after

    def decode(response: httpx.Response) -> Listing[TaskLogLine]:
        doc = response.json()
        lines = (*found, *(line_from(x, node, index) for x in doc["lines"]))
        more = doc["next"] if len(doc["lines"]) == PAGE else None
        return Listing(list(lines), task_logs(workflow_id, node, index, attempt, more, lines)
                       if more else None)

    return Request(Call("GET", task_path(workflow_id, node, index), params=params), decode)


def task_page(workflow_id: str, node: str, index: int | None,
              after: str | None) -> Request[dict[str, Any]]:
    """One page of a task's lines after ``after`` as the API answers it (``lines``,
    ``next``, ``complete``): what polling for new lines asks."""
    params: dict[str, Any] = {"limit": PAGE, **({"after": after} if after else {})}
    return Request(Call("GET", task_path(workflow_id, node, index), params=params),
                   lambda response: dict(response.json()))


def run_logs(workflow_id: str, node: str | None, after: str | None = None,
             found: tuple[TaskLogLine, ...] = ()) -> Request[Listing[TaskLogLine]]:
    """A run's lines so far (of ``node`` alone unless None), a page after ``after``."""
    params: dict[str, Any] = {"limit": PAGE, **({"node": node} if node else {}),
                              **({"after": after} if after else {})}

    def decode(response: httpx.Response) -> Listing[TaskLogLine]:
        doc = response.json()
        lines = (*found, *(line_from(x) for x in doc["lines"]))
        more = doc.get("next")
        return Listing(list(lines), run_logs(workflow_id, node, more, lines) if more else None)

    return Request(Call("GET", f"/v1/workflows/{segment(workflow_id)}/logs", params=params),
                   decode)


class LogFollow:
    """A task's log followed: the stream to open, the lines to hand on, its end.

    Args:
        client: the client whose timeout and retries apply.
        workflow_id, node, index, attempt: the task (and one attempt, unless None).
    """

    def __init__(self, client: Settings, workflow_id: str, node: str, index: int | None,
                 attempt: int | None) -> None:
        self.node, self.index = node, index
        self._path = task_path(workflow_id, node, index)
        self._params: dict[str, Any] = {"follow": "true", **(
            {"attempt": attempt} if attempt is not None else {})}
        self._client = client
        self.last: tuple[int, int] = (0, 0)
        self.ended = False
        self._tries = Tries(client.retries, f"the log of {workflow_id}/{node} from "
                                            f"{client.base_url}")

    def call(self) -> Call:
        """The request that opens the stream, resuming after the last line."""
        headers = {"Accept": "text/event-stream"}
        if self.last != (0, 0):
            headers["Last-Event-ID"] = f"{self.last[0]}:{self.last[1]}"
        return Call("GET", self._path, params=dict(self._params), headers=headers)

    def read_timeout(self) -> float:
        """The stream's read timeout: the client's, at least ``QUIET_STREAM_S``."""
        return max(self._client.timeout, QUIET_STREAM_S)

    def opened(self, response: httpx.Response) -> bool:
        """True for a stream to read, False for a 503 to try again.

        Raises:
            HeadwaterHTTPError: any other error answer (``NotFound`` ...).
        """
        if not unexpected(response):
            return True
        if self._tries.again(response):
            return False
        raise error_for(response)

    def take(self, sse: ServerSentEvent) -> TaskLogLine | None:
        """The line an SSE message carries, if it is one not handed on yet; the ``end``
        event sets ``ended``."""
        if sse.event == "end":
            self.ended = True
            return None
        if sse.event != "log" or not sse.data:
            return None
        line = line_from(orjson.loads(sse.data), self.node, self.index)
        if (line.attempt, line.line) <= self.last:
            return None
        self.last = (line.attempt, line.line)
        self._tries.reset()
        return line

    def lost(self, error: httpx.TransportError) -> None:
        """Take a dropped connection.

        Raises:
            GatewayUnreachable: no try is left.
        """
        self._tries.check(error)

    def pause(self) -> float:
        """The wait before opening the stream again, seconds."""
        return self._tries.pause()
