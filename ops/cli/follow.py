"""Follow a workflow's SSE stream and show its progress in the terminal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
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

from headwater.core import events as ev
from headwater.core.status import NodeStatus, WorkflowStatus

TERMINAL: dict[str, str] = {ev.WorkflowSucceeded.__name__: WorkflowStatus.SUCCEEDED,
                            ev.WorkflowFailed.__name__: WorkflowStatus.FAILED,
                            ev.WorkflowCancelled.__name__: WorkflowStatus.CANCELLED}
"""The SSE event types that end a workflow -> the status it ends in."""
STYLE: dict[str, str] = {
    NodeStatus.SUCCEEDED: "green", NodeStatus.FAILED: "red", NodeStatus.UPSTREAM_FAILED: "red",
    NodeStatus.CANCELLED: "yellow", NodeStatus.SKIPPED: "dim", NodeStatus.RUNNING: "cyan",
    NodeStatus.PENDING: "dim"}
"""A node's or workflow's status -> its colour (the workflow's statuses are node ones too)."""
MAX_STREAM_CHARS = 2000


@dataclass
class NodeView:
    """What the terminal shows of one node."""

    status: str = NodeStatus.PENDING
    total: int | None = None
    done: int = 0
    attempts: int = 0
    error: str = ""


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

    def apply(self, kind: str, seq: int, data: dict[str, Any]) -> str | None:
        """Fold one SSE event; return a one-line note worth printing, if any."""
        self.last_seq = seq
        node = self.nodes.setdefault(data.get("node", ""), NodeView()) if "node" in data else None
        if kind == "TaskDispatched" and node:
            node.status = NodeStatus.RUNNING
            node.attempts += 1
            self.tasks_run += 1
        elif kind == "MapExpanded" and node:
            node.total = data.get("count")
            return f"{data['node']}: fanning out over {node.total} items"
        elif kind == "TaskSucceeded" and node and data.get("index") is not None:
            node.done += 1
        elif kind == "TaskProgressed":
            self.message = f"{data.get('node')}: {data.get('message', '')}"
        elif kind == "TaskOutputStreamed":
            chunk = data.get("chunk")
            text = chunk if isinstance(chunk, str) else orjson.dumps(chunk).decode()
            self.streamed = (self.streamed + text)[-MAX_STREAM_CHARS:]
            return f"{data.get('node')} streamed: {text}"
        elif kind == "TaskFailed":
            where = data.get("node", "") + (f"[{data['index']}]" if data.get("index") is not None
                                            else "")
            kind_ = f"{data['error_type']}: " if data.get("error_type") else ""
            self.message = f"{where} attempt {data.get('attempt')}: {kind_}{data.get('error')}"
            return self.message
        elif kind == "NodeFinished" and node:
            node.status, node.error = data["status"], data.get("error", "")
            self.message = ""
            return f"{data['node']}: {node.status}" + (f" ({node.error})" if node.error else "")
        elif kind in TERMINAL:
            self.status = TERMINAL[kind]
            self.output = data.get("output")
            self.error = data.get("error") or data.get("reason") or ""
        return None

    def render(self) -> Group:
        """A table of nodes with map progress bars, and the latest message."""
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("node", "status", "progress", "attempts"):
            table.add_column(column)
        for name, n in self.nodes.items():
            bar: Any = ""
            if n.total:
                bar = Group(ProgressBar(total=n.total, completed=n.done, width=20,
                                        complete_style="cyan", finished_style="green"),
                            Text(f"{n.done}/{n.total}"))
            table.add_row(name, Text(n.status, style=STYLE.get(n.status, "")), bar,
                          str(n.attempts))
        parts: list[Any] = [table, Text(self.message[:120], style="dim")]
        if self.streamed:
            parts.append(Text(self.streamed[-400:]))
        return Group(*parts)


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


def follow(client: httpx.Client, url: str, console: Console) -> FollowState:
    """Follow until the terminal event, live in a terminal, line by line otherwise."""
    state = FollowState()

    def reconnecting(error: Exception) -> None:
        console.print(f"  (lost the stream: {escape(str(error))}; reconnecting ...)")

    if console.is_terminal:
        with Live(state.render(), console=console, refresh_per_second=8) as live:
            for kind, seq, data in events(client, url, reconnecting):
                state.apply(kind, seq, data)
                live.update(state.render())
    else:
        for kind, seq, data in events(client, url, reconnecting):
            note = state.apply(kind, seq, data)
            if note:
                console.print(f"  \\[{seq:>5}] {escape(note)}")
    return state
