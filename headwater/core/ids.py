"""Id formats inside records: task keys, dispatch ids and timer ids.

They are deterministic so that at-least-once delivery is safe: the same attempt always
has the same dispatch id (docs/architecture.md, invariant 3), and a timer's id says
which task and attempt it is for.
"""

from __future__ import annotations

import re

QUEUE_PATTERN = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
"""Queue names (a node's ``queue``, ``@task(queue=...)``): 1-64 letters, digits, ``_``
and ``-``; each names the topic ``<prefix>.tasks.<queue>``."""

def task_key(node: str, index: int | None) -> str:
    """The key of one task within a workflow: ``node`` or ``node[index]`` for map items."""
    return node if index is None else f"{node}[{index}]"


def dispatch_id(workflow_id: str, node: str, index: int | None, attempt: int) -> str:
    """Deterministic dispatch id ``workflow_id/node[index]/attempt`` (docs/architecture.md,
    invariant 3)."""
    return f"{workflow_id}/{task_key(node, index)}/{attempt}"


def parse_dispatch_id(did: str) -> tuple[str, str, int | None, int] | None:
    """``(workflow id, node, index, attempt)`` of a ``dispatch_id``, None when it is none
    (a workflow id holds no ``/``, a node id neither ``/`` nor ``[``)."""
    wid, _, rest = did.partition("/")
    key, _, attempt = rest.rpartition("/")
    if not wid or not key or not (attempt.isascii() and attempt.isdigit()):
        return None
    node, bracket, index = key.partition("[")
    if not bracket:
        return wid, node, None, int(attempt)
    if not index.endswith("]") or not index[:-1].isascii() or not index[:-1].isdigit():
        return None
    return wid, node, int(index[:-1]), int(attempt)


DEADLINE_TIMER = "deadline"
LEASE_TIMER = "lease"


def task_timer_id(kind: str, key: str, attempt: int) -> str:
    """Id of a timer derived from a task's state: ``deadline:<task key>:<attempt>`` (its
    timeout) or ``lease:<task key>:<attempt>`` (its heartbeat timeout)."""
    return f"{kind}:{key}:{attempt}"


def parse_task_timer_id(timer_id: str) -> tuple[str, str, int] | None:
    """``(kind, task key, attempt)`` of a ``task_timer_id``, or None for any other id.

    Node ids cannot hold ``:`` (``spec.fields.NODE_ID``), so the split is unambiguous. The attempt
    must be ASCII digits: ``str.isdigit`` also takes ``"²"`` (which ``int`` refuses) and
    ``"٣"`` (which it reads as 3)."""
    kind, _, rest = timer_id.partition(":")
    key, _, attempt = rest.rpartition(":")
    if (kind not in (DEADLINE_TIMER, LEASE_TIMER) or not key
            or not (attempt.isascii() and attempt.isdigit())):
        return None
    return kind, key, int(attempt)


def retry_timer_id(key: str, attempt: int) -> str:
    """Id of the durable timer that dispatches ``attempt`` of task ``key``."""
    return f"retry:{key}:{attempt}"


WAIT_TIMER = "wait"
SLEEP_TIMER = "sleep"
CODE_TIMER = "code"


def node_timer_id(kind: str, key: str) -> str:
    """Id of a node's own durable timer: ``wait:<task key>`` (a wait's timeout, per map
    item), ``sleep:<node>`` (a sleep's wake-up) or ``code:<node>[<index>]`` (a code
    workflow's sleep or signal wait)."""
    return f"{kind}:{key}"


def parse_node_timer_id(timer_id: str) -> tuple[str, str] | None:
    """``(kind, task key)`` of a ``node_timer_id``, or None for any other id."""
    kind, _, key = timer_id.partition(":")
    if kind not in (WAIT_TIMER, SLEEP_TIMER, CODE_TIMER) or not key or ":" in key:
        return None
    return kind, key


_CHILD_ID = re.compile(r".+:[A-Za-z0-9_.\-]+:[0-9]+")


def is_child_id(workflow_id: str) -> bool:
    """Whether ``workflow_id`` has the form of a ``child_id`` (a schedule's run ids
    too, ``schedule:<name>:<n>``): ids the coordinator may give a workflow it starts at
    any moment, so the gateway takes none of them from a client."""
    return _CHILD_ID.fullmatch(workflow_id) is not None


def child_id(parent_id: str, node: str, index: int | None, attempt: int) -> str:
    """The id of the child workflow that attempt ``attempt`` of node ``node`` (item
    ``index``) of ``parent_id`` starts: ``<parent>:<node>:<attempt>`` or
    ``<parent>:<node>.<index>:<attempt>``. Deterministic, so a parent that is retried,
    replayed or redelivered never starts a second child for the same attempt. It keeps
    to ``topics.WORKFLOW_ID_PATTERN`` (``/`` and ``[]`` are not safe in a URL path
    segment); the caller checks its length (at most 200 characters)."""
    where = node if index is None else f"{node}.{index}"
    return f"{parent_id}:{where}:{attempt}"
