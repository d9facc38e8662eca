"""The ``map`` node kind: one task per item of a list, with bounded concurrency.

It starts by resolving ``over`` to a list (anything else fails the node) and recording
``MapExpanded``; an empty list succeeds at once. A list stored by reference
(``headwater/blobs.py``) is counted by its reference's ``items``, without its values:
child ``i`` gets ``${item}`` as the reference to item ``i`` (``refs.item_of``), which
its worker resolves; a reference without a count (an object, a part of a stored value)
fails the node. Children are dispatched in index order
until ``max_concurrency`` are in flight (``DEFAULT_MAP_CONCURRENCY`` when the map sets
none; a child waiting to retry keeps its slot); each child that finishes frees a slot for
the next. One step raises the children in flight by ``STEP_DISPATCHES`` at most, so the
step that expands a wide map stays small whatever the bound: a larger bound is reached
as children finish, each finish an input of its own (recorded, so replay takes the same
decisions). A child that fails for good fails the map at once, unless the map has
``continue_on_error``: then the error object is that item's result and the map goes on.
When every child has finished, the map has succeeded, its output the results in input
order (failed, with ``continue_on_error``, if any child failed).

Child workflows with ``over`` (``kinds/workflow``) fill their slots here too.
"""

from __future__ import annotations

from typing import Any

from headwater.blobs import ITEMS_KEY, is_ref
from headwater.core import events as ev
from headwater.core.caching import KEY as CACHE_KEY
from headwater.core.limits import KEYS as LIMIT_KEYS
from headwater.core.machine import dispatch, flow, reports
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import REQUIRES_KEY, TASKLIKE_KEYS, no_parts
from headwater.core.state import WorkflowState, node_state
from headwater.core.status import NodeStatus
from headwater.core.wording import FollowNote
from headwater.errors import InputReferenceError

DEFAULT_MAP_CONCURRENCY = 4_000
"""Children in flight at once for a node that fans out (a map, a child workflow with
``over``) and sets no ``max_concurrency``. The coordinator keeps a task per child
dispatched and a worker queue holds the dispatches not yet taken, so an unbounded map of
100,000 items would put all of them there in its first step (Temporal caps a workflow's
pending activities at 2,000 for the same reason). At 1,000, B4's 10,000-item map took
1.89 ms a task against 0.86 at 10,000: refilling the window item by item costs more than
dispatching in bulk. But the coordinator's memory grows with the children in flight:
that map held 175 MiB at most at 10,000 against 124-125 at 4,000 (87 idle), and took 1.06
and 1.40 ms a task at 4,000 in two later runs (not measured back to back with 10,000).
Lowered from 10,000 to 4,000: a map that had more in flight when the process was
upgraded dispatches again once fewer than 4,000 are."""

MAX_ITEMS = 1_000_000
"""The most items one node fans out over. The state holds a result slot per item, so a
count is bounded before anything is allocated for it: a list inline is bounded by its
record, but a list stored by reference is counted by its reference's ``items``, which an
input may state falsely (``{"$blob": ..., "items": 10**12}`` would have the coordinator
allocate terabytes). Fan out over more in child workflows, each over a part."""

STEP_DISPATCHES = 1_000
"""The most one step raises a node's children in flight by. An explicit
``max_concurrency`` above it is reached as children finish: each finish dispatches the
freed slot's child and up to this many more."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Expand the map over its list and dispatch its first children."""
    count = expand(rec, spec)
    if count == 0:
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)
    elif count is not None:
        _progress(rec, spec)


def expand(rec: Recorder, spec: NodeSpec) -> int | None:
    """Resolve a fanned-out node's ``over`` to a list and record ``MapExpanded``; return
    its length, or None when the node failed instead (a reference that cannot be
    resolved, or not a list). Maps, waits and child workflows with ``over`` share it."""
    state = rec.current
    try:
        items = state.resolve_input(spec.over)
    except InputReferenceError as e:
        flow.node_failed(rec, spec.id, f"{spec.kind.value} {spec.id}: {e}")
        return None
    count = _count(items)
    if isinstance(count, int) and count > MAX_ITEMS:
        count = f"'over' gave {count} items, over the most a node fans out over ({MAX_ITEMS})"
    if isinstance(count, str):
        flow.node_failed(rec, spec.id, f"{spec.kind.value} {spec.id}: {spec.over}: {count}")
        return None
    rec.record(ev.MapExpanded(state.workflow_id, spec.id, count, rec.at_ms))
    return count


def _count(items: Any) -> int | str:
    """How many items ``over``'s value ``items`` has: a list's length, or the ``items``
    of a list stored by reference; else why it cannot be fanned out over."""
    if isinstance(items, list):
        return len(items)
    if is_ref(items):
        if ITEMS_KEY in items:
            return int(items[ITEMS_KEY])
        what = "a part of a stored value" if items.get("path") else \
            "an object, or a list stored before item counts were recorded"
        return (f"'over' gave a value stored by reference with no item count ({what}; "
                f"{items['bytes']} bytes of JSON, blob {items['$blob']}), and the "
                "coordinator does not hold it to count its items; fan out over a list a "
                "task returns whole (one over HEADWATER_BLOB_THRESHOLD_BYTES is stored "
                "with its count), or raise HEADWATER_BLOB_THRESHOLD_BYTES")
    return f"'over' gave {type(items).__name__}, not a list"


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A child succeeded: its slot goes to the next child, or the map finishes."""
    _progress(rec, spec)


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A child failed for good: the map goes on with ``continue_on_error`` (the error is
    the item's result), and fails otherwise."""
    if spec.continue_on_error:
        _progress(rec, spec)
        return
    flow.node_failed(rec, spec.id, reports.failure_message(rec.current, report))


def _progress(rec: Recorder, spec: NodeSpec) -> None:
    """A child finished: fill the free slots, or finish the map if it was the last."""
    _fill(rec, spec)
    node = rec.current.nodes[spec.id]
    if node.total is not None and node.done == node.total and not node.status.terminal:
        if node.failed:
            flow.finish(rec, spec.id, NodeStatus.FAILED,
                        f"{node.failed} of {node.total} items of {spec.id} failed")
        else:
            flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def _fill(rec: Recorder, spec: NodeSpec) -> None:
    """Dispatch children until ``in_flight_limit`` are in flight or none are left.

    A child whose input cannot be resolved fails without taking a slot (with
    ``continue_on_error``), so the loop goes on past it: a step never ends with items
    left and none in flight.
    """
    node = rec.current.nodes[spec.id]
    assert node.total is not None
    limit = in_flight_limit(spec.max_concurrency, node.running)
    while node.next_index < node.total and node.running < limit and not node.status.terminal:
        dispatch.first(rec, spec, node.next_index)


def in_flight_limit(max_concurrency: int | None, running: int) -> int:
    """How many children of a fanned-out node may be in flight at the end of this step.

    Args:
        max_concurrency: the node's bound, or None (``DEFAULT_MAP_CONCURRENCY``).
        running: its children in flight (or waiting to retry) as the step begins.

    Returns:
        The bound, or ``running + STEP_DISPATCHES`` if that is lower. Below ``running``
        only when the default bound was lowered under a map already past it: nothing
        is dispatched then, and children in flight are never taken back.
    """
    return min(max_concurrency or DEFAULT_MAP_CONCURRENCY, running + STEP_DISPATCHES)


def _map_expanded(state: WorkflowState, body: ev.MapExpanded) -> None:
    """The node runs, one result per item (None until the item ends)."""
    node = node_state(state, body.node)
    node.status, node.total, node.results = NodeStatus.RUNNING, body.count, [None] * body.count


UNIT = KindUnit(NodeKind.MAP,
                TASKLIKE_KEYS | LIMIT_KEYS | {CACHE_KEY, "over", "max_concurrency", REQUIRES_KEY},
                start, attempt_succeeded, attempt_failed, parse=no_parts, task_field="task",
                events={ev.MapExpanded: _map_expanded},
                describe={ev.MapExpanded: lambda b: f"{b.count} items"},
                follow={ev.MapExpanded: lambda data: FollowNote(
                    f"{data['node']}: fanning out over {data.get('count')} items",
                    total=data.get("count"))})
"""The ``map`` kind."""
