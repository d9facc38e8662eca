"""What ``headwater.client`` returns for a run's tasks: frozen views of the gateway's
answers about one task (``Client.task``) and a page of a node's tasks
(``Client.node_tasks``), each keeping the whole answer in ``raw``, as ``types.py``'s do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TaskRow:
    """A task as a run's document lists it (``tasks[]``) and a node's page does: its
    latest attempt.

    Attributes:
        node: its node. index: its index (a map item's), or None.
        attempt: its latest attempt. status: that attempt's (a ``TaskStatus`` value).
        error, error_type, traceback: that attempt's failure ("" if none).
        raw: the whole item (task, queue, worker, times, progress ...).
    """

    node: str
    index: int | None
    attempt: int
    status: str
    error: str
    error_type: str
    traceback: str
    raw: dict[str, Any] = field(repr=False, compare=False)


def task_row_from(doc: dict[str, Any]) -> TaskRow:
    """The view of one of a document's ``tasks``."""
    return TaskRow(str(doc["node"]), doc.get("index"), int(doc["attempt"]), str(doc["status"]),
                   doc.get("error") or "", doc.get("error_type") or "",
                   doc.get("traceback") or "", raw=doc)


@dataclass(frozen=True)
class TaskAttempt:
    """One attempt of a task (``GET /v1/workflows/{id}/tasks/{node}/{index}``).

    Attributes:
        attempt: its number. status: ``dispatched``, ``running``, ``succeeded``,
            ``failed`` or ``cancelled``. worker: who ran it ("" before it started).
        dispatched_at, started_at, finished_at: RFC 3339 times, or None.
        error, error_type, traceback: its failure ("" if none).
        cached: for an attempt a cache's hit succeeded (never run), the attempt that
            computed its output (``{"workflow_id", "node", "index", "attempt"}``); None.
    """

    attempt: int
    status: str
    worker: str
    dispatched_at: str | None
    started_at: str | None
    finished_at: str | None
    error: str
    error_type: str
    traceback: str
    cached: dict[str, Any] | None = None


@dataclass(frozen=True)
class Task:
    """One task of a run and every attempt of it.

    Attributes:
        workflow_id: the run. node: its node. index: its index, or None.
        task: the registered task's name. queue: its queue. status: its latest attempt's.
        input: its latest attempt's input. output: its output once succeeded, else None.
        attempts: every attempt, oldest first.
        raw: the whole document (``links``: ``self`` and ``logs``).
    """

    workflow_id: str
    node: str
    index: int | None
    task: str
    queue: str
    status: str
    input: Any
    output: Any
    attempts: list[TaskAttempt]
    raw: dict[str, Any] = field(repr=False, compare=False)


def task_from(doc: dict[str, Any]) -> Task:
    """The view of ``GET /v1/workflows/{id}/tasks/{node}/{index}``'s answer."""
    tried = [TaskAttempt(int(a["attempt"]), str(a["status"]), a.get("worker") or "",
                         a.get("dispatched_at"), a.get("started_at"), a.get("finished_at"),
                         a.get("error") or "", a.get("error_type") or "",
                         a.get("traceback") or "", a.get("cached")) for a in doc["attempts"]]
    return Task(str(doc["workflow_id"]), str(doc["node"]), doc.get("index"),
                doc.get("task") or "", doc.get("queue") or "", str(doc["status"]),
                doc.get("input"), doc.get("output"), tried, raw=doc)


@dataclass(frozen=True)
class NodeTasks:
    """A page of a node's tasks (``GET /v1/workflows/{id}/nodes/{node}/tasks``).

    Attributes:
        workflow_id: the run. node: the node.
        total: how many tasks it has (with the status asked for).
        tasks: this page's, in index order.
        next: pass it as ``after`` for the next page; None on the last.
    """

    workflow_id: str
    node: str
    total: int
    tasks: list[TaskRow]
    next: int | None


def node_tasks_from(doc: dict[str, Any]) -> NodeTasks:
    """The view of a page of a node's tasks."""
    return NodeTasks(str(doc["workflow_id"]), str(doc["node"]), int(doc["total"]),
                     [task_row_from(t) for t in doc["tasks"]], doc.get("next"))
