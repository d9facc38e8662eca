"""The record of the ``workers`` topic (``Topics.workers``): a worker's announcement.

A worker writes it (``services.worker.announce``) and the gateway and ``headwater
stuck`` read it; ``headwater.codec`` encodes and decodes it like every record
(``schemas/avro/WorkerAnnounced.avsc``). It is no workflow record
(``headwater.core.events``): nothing of a workflow's history depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnnouncedWorkflow:
    """A ``@workflow`` a worker serves, as it announces it: what the gateway registers
    as the workflow's definition (``services/gateway/definitions/announced.py``).

    Attributes:
        name: the workflow's name: its definition's and its activation task's.
        spec: the spec document of a run (``WorkflowInfo.spec()``).
        input_schema: a JSON Schema of its input, or None (any input).
        path: the HTTP path the gateway serves it at (``POST <path>``), or None.
        code_version: the version of its code (a digest of the function's source,
            unless the worker names one: ``HEADWATER_CODE_VERSION``).
    """

    name: str
    spec: Any
    input_schema: Any
    path: str | None
    code_version: str


@dataclass(frozen=True)
class WorkerAnnounced:
    """One worker's announcement (the fields of ``WorkerAnnounced.avsc``).

    Attributes:
        worker_id: its name in reports; the record's key.
        queue: the queue it serves.
        tasks: the task names it serves, sorted.
        concurrency: attempts it runs at once.
        in_flight: attempts running when it announced.
        version: the ``headwater`` package version it runs.
        host: host name.
        pid: process id.
        started_at_ms: when it started, ms since the epoch (its clock).
        at_ms: when it announced, ms since the epoch (its clock).
        interval_ms: how often it announces, ms.
        stopping: True once it stops taking dispatches.
        workflows: the ``@workflow``s it serves, by name (their activation tasks are
            among ``tasks``); empty in records written before workers announced them.
        tags: the tags it announces (``HEADWATER_WORKER_TAGS``), sorted: it runs the
            tasks of nodes that require some of them (``headwater.core.selectors``);
            empty in records written before workers announced them.
    """

    worker_id: str
    queue: str
    tasks: tuple[str, ...]
    concurrency: int
    in_flight: int
    version: str
    host: str
    pid: int
    started_at_ms: int
    at_ms: int
    interval_ms: int
    stopping: bool = False
    workflows: tuple[AnnouncedWorkflow, ...] = ()
    tags: tuple[str, ...] = ()
