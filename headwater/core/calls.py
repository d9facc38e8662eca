"""``ctx.call`` children: runs a task submits by definition, linked to their caller.

A task's ``ctx.call`` (``headwater/client/calls.py``) submits a run with the id
``<workflow>:<node>[.<index>]:call.<n>`` whose submission names its caller
(``WorkflowSubmitted.parent``: ``{"workflow_id", "node", "index", "attempt"}``). The
two histories record the link:

- the child's: ``CallerLinked`` after its ``WorkflowAccepted`` (``WorkflowState.caller``).
  Unlike a ``workflow`` node's child (``ParentLinked``), it reports nothing to the
  attempt: the calling task waits for its result over HTTP;
- the parent's: ``CallLinked``, the report the child's coordinator sends on ``reports``
  (keyed by the parent's id) for the child's ``CallerLinked``, recorded as it came
  (``WorkflowState.calls``), unless its tenant is not the parent's.

The parent's end, however it ends, cancels every linked child (``CancelRequested`` on
``control``, naming the parent in ``parent_id``: a no-op for a child that has ended,
and a run of that id that is not its child ignores it). A ``CallLinked`` that reaches a
parent that has ended cancels its child at once (``machine.decide``'s ``cancels``), and
so does one that reaches a parent purged since (its retention passed).
The caller's attempt failing does not cancel them: its retry calls the same ids and
finds the same runs (the gateway answers 200), as a crashed worker's retry does.

This module imports nothing of the machine, so ``events`` can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.core.ids import task_key
from headwater.core.wording import Describe, Follow, FollowNote, where

MAX_CALLS = 10_000
"""The most ``ctx.call`` children one run keeps links to (``WorkflowState.calls``, in
its table's header); a link beyond it is not recorded, so its child outlives a parent
that fails (it is still shown as the parent's child: its own row names the parent)."""


LINK_KEYS = frozenset({"workflow_id", "node", "index", "attempt"})
"""What a link holds (other fields are ignored here; the gateway refuses them, as its
OpenAPI schema takes no other)."""
MAX_NUMBER = 2**31 - 1
"""The largest index and attempt a link may name (PostgreSQL's integer)."""


def _text(value: Any, most: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= most and value.isprintable()


def caller_link(value: Any) -> dict[str, Any] | None:
    """A submission's ``parent`` as ``{"workflow_id", "node", "index", "attempt"}``, or
    None when it is none or not of that form (an id of at most 200 and a node of at most
    128 printable characters, an index that is None or an integer from 0, an attempt
    that is an integer from 1, both at most ``MAX_NUMBER``)."""
    if not isinstance(value, dict):
        return None
    wid, node, index, attempt = (value.get("workflow_id"), value.get("node"),
                                 value.get("index"), value.get("attempt"))
    if (not _text(wid, 200) or not _text(node, 128)
            or not (index is None or (type(index) is int and 0 <= index <= MAX_NUMBER))
            or type(attempt) is not int or not 1 <= attempt <= MAX_NUMBER):
        return None
    return {"workflow_id": wid, "node": node, "index": index, "attempt": attempt}


def link_fault(value: Any) -> str | None:
    """What is wrong with a submission's ``parent`` (the gateway's 422), or None."""
    if value is None or caller_link(value) is not None:
        return None
    return ("parent must be {\"workflow_id\": text, \"node\": text (printable), \"index\": "
            "null or an integer >= 0, \"attempt\": an integer >= 1, both below 2**31}: "
            "the task attempt that calls")


@dataclass(frozen=True)
class CallerLinked:
    """History: the workflow was submitted by a ``ctx.call`` of attempt ``attempt`` of
    node ``node`` (item ``index``) of ``parent_id``; that workflow's end cancels it."""

    workflow_id: str
    parent_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class CallLinked:
    """Input (on ``reports``, from the child's coordinator) and history: run ``child_id``
    (of ``tenant``), submitted by a ``ctx.call`` of attempt ``attempt`` of node ``node``
    (item ``index``) of the workflow, was accepted; the workflow's end cancels it."""

    workflow_id: str
    child_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    tenant: str | None = None


DESCRIBE: dict[type[Any], Describe] = {
    CallerLinked: lambda b: (f"called by {b.parent_id} "
                             f"({task_key(b.node, b.index)} attempt {b.attempt})"),
    CallLinked: lambda b: f"called {b.child_id}",
}
"""The events' timeline details (``ops history``)."""

FOLLOW: dict[type[Any], Follow | None] = {
    CallerLinked: lambda data: FollowNote(f"called by {data.get('parent_id')} ({where(data)} "
                                          f"attempt {data.get('attempt')})"),
    CallLinked: lambda data: FollowNote(f"{where(data)}: called {data.get('child_id')}"),
}
"""The events' lines in the live view (``ops follow``)."""
