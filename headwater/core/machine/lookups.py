"""An attempt's side of its node's cache (``cache:``, a code step's ``cache_key``:
``headwater.core.caching``): it looks its key up before its limits and its dispatch.

An attempt of a cached node is not dispatched at once: ``look_up`` records
``TaskLookedUp`` (the coordinator sends the cache a ``CacheLookedUp``), and the attempt
is held (``TaskStatus.HELD``, waiting for the cache's id) until the cache answers
(``CacheAnswered``). A hit is recorded as ``TaskCached`` and applied as the attempt's
success (``reports.cache_answered``): nothing is dispatched. A miss is recorded and the
attempt goes on to its limits and its dispatch (``dispatch.dispatch(...,
looked_up=True)``); its end (a success with its output, a failure, a cancel) is followed
by ``CacheReturned`` (``machine.recorder``), which the coordinator sends the cache as
the release that stores the output or lets the next waiter compute. An answer the
attempt no longer waits for changes nothing: its end released the cache already, or
will.

The key is resolved for the attempt here, from the workflow's input, the outputs
upstream and the item, as a limit's is (an item of a list stored by reference is the
reference to that item, so its key names the blob's digest and the item's path); a
code step's key is the text its function gave; a node's cache without a key is keyed by
the attempt's input. The task named in the cache's id is the one the attempt runs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from headwater.blobs import is_ref
from headwater.core import events as ev
from headwater.core.caching import CacheSpec, cache_id, resolved_key, step_cache
from headwater.core.ids import task_key
from headwater.core.machine.recorder import Recorder
from headwater.core.refs import item_of
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from headwater.core.work import task_work
from headwater.errors import InputReferenceError


class Lookup(NamedTuple):
    """An attempt's cache as resolved: the cache's id, the task, the key, the ttl."""

    cache: str
    task: str
    key: str
    ttl_ms: int


def spec_of(state: WorkflowState, spec: NodeSpec, index: int | None) -> CacheSpec | None:
    """The cache of a node's task ``index``: the node's ``cache``, or a code step's
    (``wf.run(..., cache_key=...)``); None when it has none."""
    if spec.cache is not None:
        return spec.cache
    if spec.code is None or index is None or index % 2 == 0:
        return None
    steps = (state.nodes[spec.id].code or {}).get("steps") or []
    step = steps[index // 2] if 0 <= index // 2 < len(steps) else None
    return step_cache(step) if isinstance(step, dict) and step.get("op") == "task" else None


def lookup_of(state: WorkflowState, spec: NodeSpec, index: int | None,
              task_input: Any) -> Lookup | None:
    """The attempt's cache resolved (None: the task is not cached); a node's cache
    without a key is keyed by ``task_input``, the attempt's input.

    Raises:
        InputReferenceError: the key's reference cannot be resolved, or gives no key.
    """
    cache = spec_of(state, spec, index)
    if cache is None:
        return None
    try:
        if cache.key is None:
            value: Any = task_input  # no key: the attempt's input
        elif spec.code is not None:
            value = cache.key  # a code step's: the text its function computed
        else:
            item = None
            if index is not None and spec.fans_out:
                items = state.resolve_input(spec.over)
                item = item_of(items, index) if is_ref(items) or (
                    isinstance(items, list) and 0 <= index < len(items)) else None
            try:
                value = state.resolve_input(cache.key, item, index)
            except InputReferenceError as e:  # say it is the key's, not the input's
                raise InputReferenceError(f"cache: key {e}") from None
        key = resolved_key(value)
    except ValueError as e:
        raise InputReferenceError(f"cache: {e}") from None
    task = task_work(state, spec.id, index).task
    return Lookup(cache_id(state.tenant, task, value), task, key, cache.ttl_ms)


def look_up(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int,
            lookup: Lookup) -> None:
    """Record that ``attempt`` waits for its cache's answer before anything else."""
    state = rec.current
    rec.record(ev.TaskLookedUp(state.workflow_id, spec.id, index, attempt, lookup.cache,
                               lookup.task, lookup.key, lookup.ttl_ms,
                               state.cache_refresh, rec.at_ms))


def answer_fits(state: WorkflowState, event: ev.CacheAnswered) -> bool:
    """Whether ``event`` answers the lookup the attempt it names waits for: a copy, or
    an answer for an attempt that ended (cancelled while it waited), does not."""
    task = state.tasks.get(task_key(event.node, event.index))
    return (task is not None and task.status is TaskStatus.HELD
            and task.attempt == event.attempt and task.waiting_for == event.cache)


def cached(state: WorkflowState, event: ev.CacheAnswered) -> ev.TaskCached:
    """The history event of a hit: the attempt's success with the cache's output."""
    work = task_work(state, event.node, event.index)
    return ev.TaskCached(event.workflow_id, event.node, event.index, event.attempt,
                         event.cache, work.task, event.output, event.source, event.at_ms,
                         event.saved_ms, event.units)


def as_success(body: ev.TaskCached) -> ev.TaskSucceeded:
    """The success a hit stands for, as the node's kind takes it."""
    return ev.TaskSucceeded(body.workflow_id, body.node, body.index, body.attempt,
                            body.at_ms, body.output)
