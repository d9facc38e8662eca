"""What the workers topic says of a run's attempts, at read time: the marks the run's
document (``runs.views``) puts on its ``tasks[]`` entries and its ``warnings``, and the
warnings a submission's answer carries (``submission_warnings``). Nothing here is
history: each is judged by the gateway's ``WorkerRegistry`` (``installed()``) when the
document is read, and says nothing until the registry is ``trusted``.

- ``queue_state``: a dispatched attempt whose queue cannot take it (``no_live_workers``,
  ``unserved``, or ``unmatched``: its node requires tags, ``requires``, that none of
  the queue's live workers announces; a run submitted with ``queue_anyway`` waits so).
- ``worker_state``: a running attempt whose worker is ``lost`` (``WorkerRegistry.lost``:
  it stopped announcing itself without a stopping record, or stopped for good), with
  when it was last heard: the attempt's lease has not lapsed yet, but nothing runs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from headwater.core.selectors import satisfies
from headwater.core.status import TaskStatus
from services.gateway.queues.workers import installed

LOST = "lost"
"""``worker_state`` of a running attempt whose worker is lost."""


def queue_state(status: str, queue: str, task: str,
                requires: tuple[str, ...] = ()) -> dict[str, str]:
    """``{"queue_state": ...}`` for a task row (``tasks``) whose attempt waits on a queue
    that cannot take it: ``no_live_workers`` (none live), ``unserved`` (live workers,
    none serving its task), ``unmatched`` (its node ``requires`` tags no live worker of
    the queue announces all of); empty otherwise, or when the registry is not
    ``trusted`` yet (or not installed)."""
    registry = installed()
    if status != TaskStatus.DISPATCHED or registry is None or not registry.trusted:
        return {}
    serving = registry.serving()
    if queue not in serving:
        return {"queue_state": "no_live_workers"}
    if task not in serving[queue]:
        return {"queue_state": "unserved"}
    if requires and not any(satisfies(tags, requires)
                            for tags in registry.live_tags().get(queue, ())):
        return {"queue_state": "unmatched"}
    return {}


def worker_state(status: str, worker: str) -> dict[str, Any]:
    """``{"worker_state": "lost", "worker_last_heard_at": <ISO 8601>}`` for a task row
    whose attempt runs on a worker the registry judges ``lost``; empty otherwise (a
    live or draining worker, one never heard of, a registry not ``trusted`` yet)."""
    registry = installed()
    if status != TaskStatus.RUNNING or not worker or registry is None:
        return {}
    if not registry.lost(worker):
        return {}
    heard = registry.last_heard(worker)
    return {"worker_state": LOST, "worker_last_heard_at": None if heard is None else
            datetime.fromtimestamp(heard / 1000, UTC).isoformat()}


def attempt_marks(row: Mapping[str, Any], requires: tuple[str, ...] = ()) -> dict[str, Any]:
    """Both marks of a task row (``queue_state``, ``worker_state``); ``requires``: the
    tags its node requires."""
    return {**queue_state(row["status"], row["queue"], row["task"], requires),
            **worker_state(row["status"], row["worker"])}


def requires_of(spec: Any) -> dict[str, tuple[str, ...]]:
    """Node id -> the tags it requires (sorted), for the nodes of a recorded spec that
    require any."""
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    return {n["id"]: tuple(sorted(str(t) for t in n["requires"]))
            for n in nodes or [] if isinstance(n, dict) and isinstance(n.get("id"), str)
            and isinstance(n.get("requires"), list) and n["requires"]}


def attempt_warnings(rows: Iterable[Mapping[str, Any]],
                     requires: Mapping[str, tuple[str, ...]] | None = None,
                     ) -> dict[str, list[str]]:
    """``{"warnings": [...]}``, one sentence per attempt of ``rows`` (``tasks`` rows)
    that waits on a queue that cannot take it, or runs on a lost worker; empty without
    any. ``requires``: node id -> the tags it requires (``requires_of``)."""
    found = []
    for row in rows:
        needs = (requires or {}).get(row["node"], ())
        marks = attempt_marks(row, needs)
        where = f"{row['task_key']} (attempt {row['attempt']})"
        state = marks.get("queue_state")
        if state == "no_live_workers":
            found.append(f"{where} waits on queue {row['queue']!r}, which has no live worker")
        elif state == "unserved":
            found.append(f"{where} waits on queue {row['queue']!r}, whose live workers do "
                         f"not serve task {row['task']!r}")
        elif state == "unmatched":
            found.append(f"{where} waits on queue {row['queue']!r} for a worker announcing "
                         f"the tags [{', '.join(needs)}]: none of its live workers does")
        if marks.get("worker_state") == LOST:
            heard = marks["worker_last_heard_at"]
            found.append(f"{where} runs on worker {row['worker']!r}, which is lost (last "
                         f"heard {heard or 'at an unknown time'}): its lease lapses and "
                         "the attempt is retried as its retry policy allows")
    return {"warnings": found} if found else {}


def submission_warnings(queues: Iterable[str]) -> dict[str, list[str]]:
    """``{"warnings": [...]}`` for a submission admitted while some of the ``queues`` its
    placed spec needs have no live worker (it was not refused: a worker served them
    within ``HEADWATER_UNSERVED_AFTER_S``, or the registry is in its grace); empty when
    every one has one, or without a registry that read the workers topic to its end."""
    registry = installed()
    if registry is None or not registry.caught_up:
        return {}
    serving = registry.serving()
    found = [f"queue {queue!r} has no live worker now: the run waits until one serves it"
             for queue in sorted(set(queues)) if queue not in serving]
    return {"warnings": found} if found else {}
