"""Follow a workflow's SSE stream and show its progress in the terminal: nodes and their
attempts, map progress, and what waits, sleeps, child workflows and loops are doing
(waiting on a signal, sleeping until a time, a child started, a loop's step and tool)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from httpx_sse import connect_sse
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from headwater.core import calls, deadline, registry
from headwater.core import events as ev
from headwater.core.status import NodeStatus, WorkflowStatus
from headwater.core.wording import Follow, where
from headwater.core.work import CHILD_TASK
from ops.cli.common import STYLE

TERMINAL: dict[str, str] = {ev.WorkflowSucceeded.__name__: WorkflowStatus.SUCCEEDED,
                            ev.WorkflowFailed.__name__: WorkflowStatus.FAILED,
                            ev.WorkflowCancelled.__name__: WorkflowStatus.CANCELLED}
"""The SSE event types that end a workflow -> the status it ends in."""
__all__ = ["STYLE", "TERMINAL", "FollowState", "events", "follow"]
MAX_STREAM_CHARS = 2000


@dataclass
class NodeView:
    """What the terminal shows of one node."""

    status: str = NodeStatus.PENDING
    total: int | None = None
    done: int = 0
    attempts: int = 0
    error: str = ""
    detail: str = ""  # what a wait, sleep, child or loop is doing now


@dataclass
class FollowState:
    """The workflow as seen from its event stream."""

    nodes: dict[str, NodeView] = field(default_factory=dict)
    status: str = WorkflowStatus.RUNNING
    last_seq: int = 0
    message: str = ""
    output: Any = None
    error: str = ""
    tasks_run: int = 0
    streamed: str = ""
    child_nodes: set[str] = field(default_factory=set)  # nodes whose tasks are children

    def apply(self, kind: str, seq: int, data: dict[str, Any]) -> str | None:
        """Fold one SSE event; return a one-line note worth printing, if any."""
        self.last_seq = seq
        node = self.nodes.setdefault(data.get("node", ""), NodeView()) if "node" in data else None
        if kind in KIND_NOTES:
            return KIND_NOTES[kind](self, node, data)
        if kind in ("TaskSucceeded", "TaskReused") and node and data.get("index") is not None:
            node.done += 1
        elif kind == "TaskProgressed":
            self.message = f"{data.get('node')}: {data.get('message', '')}"
        elif kind == "TaskOutputStreamed":
            chunk = data.get("chunk")
            text = chunk if isinstance(chunk, str) else orjson.dumps(chunk).decode()
            self.streamed = (self.streamed + text)[-MAX_STREAM_CHARS:]
            return f"{data.get('node')} streamed: {text}"
        elif kind == "TaskFailed":
            kind_ = f"{data['error_type']}: " if data.get("error_type") else ""
            self.message = (f"{where(data)} attempt {data.get('attempt')}: "
                            f"{kind_}{data.get('error')}")
            return self.message
        elif kind == "NodeFinished" and node:
            node.status, node.error = data["status"], data.get("error", "")
            node.detail, self.message = "", ""
            return f"{data['node']}: {node.status}" + (f" ({node.error})" if node.error else "")
        elif kind in TERMINAL:
            self.status = TERMINAL[kind]
            self.output = data.get("output")
            self.error = data.get("error") or data.get("reason") or ""
        return None

    def render(self) -> Group:
        """A table of nodes with map progress bars, and the latest message."""
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("node", "status", "progress", "attempts", "now"):
            table.add_column(column)
        for name, n in self.nodes.items():
            bar: Any = ""
            if n.total:
                bar = Group(ProgressBar(total=n.total, completed=n.done, width=20,
                                        complete_style="cyan", finished_style="green"),
                            Text(f"{n.done}/{n.total}"))
            table.add_row(name, Text(n.status, style=STYLE.get(n.status, "")), bar,
                          str(n.attempts), Text(n.detail[:60], style="dim"))
        parts: list[Any] = [table, Text(self.message[:120], style="dim")]
        if self.streamed:
            parts.append(Text(self.streamed[-400:]))
        return Group(*parts)


def _dispatched(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> None:
    if node:
        node.status = NodeStatus.RUNNING
        node.attempts += 1
        state.tasks_run += 1
        if data.get("task") == CHILD_TASK:
            state.child_nodes.add(data["node"])


def _started(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str | None:
    if not node or data["node"] not in state.child_nodes:
        return None
    node.detail = f"child {data.get('worker', '')} running"
    return f"{where(data)}: child workflow {data.get('worker', '')} started"


def _condition(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str:
    return f"{data.get('node')}: when is {'true' if data.get('value') else 'false'}"


def _restarted(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str:
    """A restart (``restart_on_failure``): every node starts over."""
    state.nodes = {name: NodeView() for name in state.nodes}
    state.message = ""
    return (f"restarted as generation {data.get('generation')}: {data.get('reason', '')}"
            " (every node starts over)")


def _paused(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str:
    """A pause: the run dispatches nothing new until its resume."""
    by = f" by {data['by']}" if data.get("by") else ""
    why = f": {data['reason']}" if data.get("reason") else ""
    state.message = f"paused{by}{why}"
    return f"paused{by}{why} (nothing new is dispatched until it is resumed)"


def _resumed(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str:
    """A resume: what the run held goes out, the timers that came due fire."""
    state.message = ""
    return (f"resumed: {data.get('held', 0)} held attempts dispatched, "
            f"{data.get('due', 0)} due timers fired")


Note = Callable[[FollowState, NodeView | None, dict[str, Any]], str | None]


def _kind_note(follow_note: Follow) -> Note:
    """A node kind's event's ``Note``: its ``FollowNote`` applied to the view."""
    def note(state: FollowState, node: NodeView | None, data: dict[str, Any]) -> str | None:
        shown = follow_note(data)
        if shown is None:
            return None
        if node:
            if shown.running:
                node.status = NodeStatus.RUNNING
            if shown.detail is not None:
                node.detail = shown.detail
            if shown.total is not None:
                node.total = shown.total
        return shown.line
    return note


COMMON_NOTES: dict[str, Note] = {
    "TaskDispatched": _dispatched, "TaskStarted": _started,
    "ConditionEvaluated": _condition, "WorkflowRestarted": _restarted,
    "WorkflowPaused": _paused, "WorkflowResumed": _resumed,
}
"""The notes of the events that are no node kind's: a dispatch and a start (that of a
child workflow), a ``when`` condition, a restart, a pause and a resume."""

KIND_NOTES: dict[str, Note] = {
    **COMMON_NOTES,
    **{event.__name__: _kind_note(how) for u in registry.units()
       for event, how in u.follow.items() if how is not None},
    **{event.__name__: _kind_note(how) for part in (deadline.FOLLOW, calls.FOLLOW)
       for event, how in part.items() if how is not None}}
"""Event types -> what they change in the view, and the line they print (if any): the
common ones (``COMMON_NOTES``) and the node kinds' events, from their units
(``registry.KindUnit.follow``)."""

QUIET = frozenset(event.__name__ for u in registry.units()
                  for event, how in u.follow.items() if how is None)
"""Node kinds' events that change nothing in the live view and print no line (a
schedule's workflow is followed as its runs, each a workflow of its own)."""


def events(
    client: httpx.Client, url: str, on_retry: Callable[[Exception], None] | None = None,
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Yield ``(event type, seq, data)`` from an SSE endpoint, reconnecting with
    ``Last-Event-ID`` if the connection drops, until the terminal event."""
    last = 0
    while True:
        headers = {"Last-Event-ID": str(last)} if last else {}
        try:
            with connect_sse(client, "GET", url, headers=headers, timeout=None) as source:
                source.response.raise_for_status()
                for sse in source.iter_sse():
                    if not sse.data:  # a heartbeat comment (the id is sticky)
                        continue
                    last = int(sse.id)
                    yield sse.event, last, orjson.loads(sse.data)
                    if sse.event in TERMINAL:
                        return
        except httpx.TransportError as e:
            if on_retry is not None:
                on_retry(e)
            time.sleep(1.0)  # the gateway is away: do not spin


def follow(stream: Iterable[tuple[str, int, dict[str, Any]]], console: Console) -> FollowState:
    """Follow ``(event type, seq, data)`` until the stream ends (at the terminal event),
    live in a terminal, line by line otherwise."""
    state = FollowState()
    if console.is_terminal:
        with Live(state.render(), console=console, refresh_per_second=8) as live:
            for kind, seq, data in stream:
                state.apply(kind, seq, data)
                live.update(state.render())
    else:
        for kind, seq, data in stream:
            note = state.apply(kind, seq, data)
            if note:
                console.print(f"  \\[{seq:>5}] {escape(note)}")
    return state
