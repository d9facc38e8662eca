"""The JSON Schemas of the answers (2xx) whose routes give none: a run's document, a
page of runs, a run's task and a page of a node's tasks, what a submission, a cancel or
a signal answers, the queues, task logs, and the event streams.

The routes answer with ``Response`` objects built from plain values (``runs.views``,
``queues.figures``, ``runs.modes``), so FastAPI cannot see the shapes; ``ANSWERS`` gives them by
operation, and ``openapi.document.complete`` puts each where the route's own schema is
empty. They describe what the views build, and stay open (``additionalProperties``):
a later field is not a break.
"""

from __future__ import annotations

from typing import Any

from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.operations import openapi as operation_docs
from services.gateway.queues.figures import QueueState
from services.gateway.runs.claims import CANCEL_REQUESTED, CLAIMED

_TEXT: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
_INDEX: dict[str, Any] = {"type": ["integer", "null"], "minimum": 0,
                          "description": "the map item (null: not under a map)"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_TIME_OR_NULL: dict[str, Any] = {"type": ["string", "null"], "format": "date-time"}
_ID: dict[str, Any] = {"type": "string", "pattern": WORKFLOW_ID_PATTERN}
_STATUS: dict[str, Any] = {"enum": [CLAIMED, *WorkflowStatus],
                           "description": f"{CLAIMED}: submitted, not started yet"}
_LINKS: dict[str, Any] = {
    "type": "object", "required": ["self", "events"], "additionalProperties": _TEXT,
    "properties": {"self": _TEXT, "events": _TEXT},
    "description": "self: GET /v1/workflows/{id}; events: its event stream"}
_DEFINITION: dict[str, Any] = {
    "type": ["object", "null"], "required": ["name", "version"],
    "properties": {"name": _TEXT, "version": {"type": "integer", "minimum": 1}},
    "description": "the registered definition the run was resolved from (null: a spec)"}

_LABELS: dict[str, Any] = {"type": "object", "additionalProperties": _TEXT,
                           "description": "the run's labels (headwater.core.labels)"}


def _object(required: list[str], properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An object with ``properties``, of which ``required`` must be present."""
    return {"type": "object", "required": required, "properties": properties, **more}


ACCEPTED_SCHEMA = _object(["id", "status", "links"], {
    "id": _ID, "status": _STATUS, "links": _LINKS,
    "warnings": {"type": "array", "items": _TEXT,
                 "description": "each queue the run needs that has no live worker now"}})
"""A submission's answer (``POST /v1/workflows``; ``POST /v1/run/{name}``'s 202)."""

_NODE = _object(
    ["id", "kind", "task", "status", "error", "total", "succeeded", "running", "failed"], {
        "id": _TEXT, "kind": _TEXT, "task": {"type": ["string", "null"]},
        "status": {"enum": list(NodeStatus)}, "error": _TEXT,
        "total": {"type": ["integer", "null"], "description": "a map's items"},
        "succeeded": _COUNT, "running": _COUNT, "failed": _COUNT,
        "held": {**_COUNT, "description": "tasks waiting for a permit or their cache"},
        "cached": {**_COUNT, "description": "succeeded tasks a cache's hit succeeded"},
        "condition": {"type": ["boolean", "null"], "description": "a node with when"},
        "signal": {"type": ["string", "null"], "description": "a wait's signal"},
        "waits": {"type": "array", "items": {"type": "object"}},
        "wake_at": _TIME_OR_NULL, "steps": {"type": "array", "items": {"type": "object"}},
        "spent": {"type": "number"}})
_ERROR_TYPE: dict[str, Any] = {"type": "string", "description": "the exception's class name"}
_TRACEBACK: dict[str, Any] = {
    "type": "string", "description": "the exception's traceback, task code's frames first, "
    "at most 8,000 characters (\"\": none, e.g. a timeout)"}
_TASK = _object(
    ["key", "node", "index", "attempt", "status", "task", "queue", "progress", "message",
     "error", "error_type", "traceback", "worker", "dispatched_at", "started_at",
     "finished_at"], {
        "key": _TEXT, "node": _TEXT, "index": _INDEX, "attempt": {"type": "integer",
                                                                  "minimum": 1},
        "status": {"enum": list(TaskStatus)}, "task": _TEXT, "queue": _TEXT,
        "progress": {"type": ["number", "null"]}, "message": _TEXT, "error": _TEXT,
        "error_type": _ERROR_TYPE, "traceback": _TRACEBACK,
        "worker": _TEXT, "dispatched_at": _TIME_OR_NULL, "started_at": _TIME_OR_NULL,
        "finished_at": _TIME_OR_NULL,
        "queue_state": {"enum": ["no_live_workers", "unserved", "unmatched"],
                        "description": "why the attempt waits: its queue cannot take it"},
        "worker_state": {"enum": ["lost"], "description": "a running attempt whose worker "
                         "stopped announcing itself: nothing runs it"},
        "worker_last_heard_at": {**_TIME_OR_NULL,
                                 "description": "when its lost worker was last heard"}})
_RELATIVE = _object(["workflow_id", "node", "index", "attempt", "links"], {
    "workflow_id": _ID, "node": _TEXT, "index": _INDEX, "attempt": _INT, "links": _LINKS,
    "status": {"anyOf": [_STATUS, {"type": "null"}]},
    "via": {"enum": ["workflow", "call"], "description": "workflow: a workflow node's "
            "child; call: a run a task's ctx.call submitted"}})
_WAITING = _object(["node", "index", "signal", "since", "timeout_at"], {
    "node": _TEXT, "index": _INDEX, "signal": _TEXT, "since": _TIME,
    "timeout_at": _TIME_OR_NULL})
_SIGNAL = _object(["name", "index", "signal_id", "status", "node", "reason", "fields", "at"], {
    "name": _TEXT, "index": _INDEX, "signal_id": _TEXT,
    "status": {"enum": ["received", "consumed", "discarded"]},
    "node": {"type": ["string", "null"]}, "reason": _TEXT, "fields": {}, "at": _TIME})
_WAKEUP = {**_object(["at", "node", "index", "reason"], {
    "at": _TIME, "node": _TEXT, "index": _INDEX,
    "reason": {"enum": ["sleep", "wait timeout"]}}), "type": ["object", "null"]}

_FAILURE = {**_object(["node", "index", "attempt", "error_type", "message", "traceback"], {
    "node": _TEXT, "index": _INDEX,
    "attempt": {"type": ["integer", "null"], "minimum": 1,
                "description": "null: the node failed without an attempt failing"},
    "error_type": _ERROR_TYPE, "message": _TEXT, "traceback": _TRACEBACK}),
    "type": ["object", "null"],
    "description": "a failed run: the attempt (or node) that failed it; null otherwise"}
_NONDETERMINISTIC = {**_object(["node", "index", "attempt", "error", "at", "warning"], {
    "node": _TEXT, "index": _INDEX, "attempt": {"type": "integer", "minimum": 1},
    "error": _TEXT, "at": {"type": ["string", "null"], "format": "date-time"},
    "warning": _TEXT}),
    "type": ["object", "null"],
    "description": "a running code workflow whose activation's code no longer decides as "
                   "its history did (NondeterminismError: the step, the recorded operation "
                   "and the new one); it waits, retried until such code is deployed; null "
                   "otherwise"}
DEFINITION_PAUSE_SCHEMA = _object(["definition", "paused", "runs", "links"], {
    "definition": _TEXT, "paused": {"type": "boolean",
                                    "description": "true: paused; false: resumed"},
    "runs": {**_COUNT, "description": "the runs a pause (or resume) request was sent for"},
    "links": {"type": "object", "additionalProperties": _TEXT,
              "description": "self: GET /v1/definitions/{name}"}})
"""``POST /v1/definitions/{name}/pause`` and ``/resume``."""
_PAUSED = {**_object(["since", "by", "reason"], {
    "since": {"type": "string", "format": "date-time"}, "by": _TEXT, "reason": _TEXT}),
    "type": ["object", "null"],
    "description": "a paused run (its status stays running): since when, by whom, why; "
                   "null when it is not paused"}

WORKFLOW_SCHEMA = _object(
    ["id", "name", "tenant", "status", "seq", "created_at", "updated_at", "input",
     "output", "error", "failure", "nondeterministic", "definition", "nodes", "tasks",
     "tasks_truncated", "parent",
     "children", "waiting", "signals", "next_wakeup", "links"], {
        "id": _ID, "name": _TEXT, "tenant": {"type": ["string", "null"]},
        "status": _STATUS, "seq": {**_COUNT, "description": "its last event's seq"},
        "created_at": _TIME, "updated_at": _TIME, "input": {}, "output": {},
        "error": _TEXT, "failure": _FAILURE, "nondeterministic": _NONDETERMINISTIC,
        "definition": _DEFINITION,
        "labels": _LABELS,
        "generation": {"type": "integer", "minimum": 1,
                       "description": "1, and one more at each restart on failure"},
        "deadline": {**_TIME_OR_NULL, "description": "the run's deadline (its spec's "
                     "deadline): it fails with DeadlineExceeded if still running then; "
                     "null: none"},
        "paused": _PAUSED,
        "nodes": {"type": "array", "items": _NODE},
        "tasks": {"type": "array", "items": _TASK,
                  "description": "every attempt (at most 1000)"},
        "tasks_truncated": {"type": "boolean"},
        "warnings": {"type": "array", "items": _TEXT,
                     "description": "attempts waiting on a queue that cannot take them, "
                                    "or running on a lost worker; a code workflow parted "
                                    "from its history"},
        "parent": {**_RELATIVE, "type": ["object", "null"]},
        "children": {"type": "array", "items": _RELATIVE},
        "waiting": {"type": "array", "items": _WAITING},
        "signals": {"type": "array", "items": _SIGNAL},
        "next_wakeup": _WAKEUP,
        "rerun_of": {"type": ["string", "null"],
                     "description": "the run this one reruns (POST .../rerun or /reset)"},
        "reset": {"type": ["string", "null"], "description": "a reset's node"},
        "reused": {"type": ["object", "null"], "description": "what a rerun took from its "
                   "source: nodes, and per fanned-out node how many items"},
        "reruns": {"type": "array", "items": _ID, "description": "the runs that rerun "
                   "this one, oldest first (at most 100)"},
        "links": _LINKS},
    description="a run: status, nodes, attempts, output or error (views.workflow_view)")
"""``GET /v1/workflows/{id}`` (and ``POST /v1/run/{name}``'s 200)."""

_TASK_LINKS: dict[str, Any] = {
    "type": "object", "required": ["self", "logs"], "additionalProperties": _TEXT,
    "properties": {"self": _TEXT, "logs": _TEXT},
    "description": "self: this task; logs: its attempts' log lines"}
_ATTEMPT = _object(
    ["attempt", "status", "worker", "dispatched_at", "started_at", "finished_at", "error",
     "error_type", "traceback"], {
        "attempt": {"type": "integer", "minimum": 1},
        "status": {"enum": ["dispatched", "running", "succeeded", "failed", "cancelled"]},
        "worker": _TEXT, "dispatched_at": _TIME_OR_NULL, "started_at": _TIME_OR_NULL,
        "finished_at": _TIME_OR_NULL, "error": _TEXT, "error_type": _ERROR_TYPE,
        "traceback": _TRACEBACK})
TASK_SCHEMA = _object(
    ["workflow_id", "node", "index", "key", "task", "queue", "status", "attempt", "input",
     "output", "attempts", "links"], {
        "workflow_id": _ID, "node": _TEXT, "index": _INDEX, "key": _TEXT, "task": _TEXT,
        "queue": _TEXT, "status": {"enum": list(TaskStatus)},
        "attempt": {"type": "integer", "minimum": 1, "description": "its latest attempt"},
        "input": {"description": "its latest attempt's input"},
        "output": {"description": "its output once succeeded, else null"},
        "attempts": {"type": "array", "items": _ATTEMPT}, "links": _TASK_LINKS},
    description="a task and its attempts (tasks.views.task_document)")
"""``GET /v1/workflows/{id}/tasks/{node}/{index}``."""

NODE_TASKS_SCHEMA = _object(["workflow_id", "node", "total", "tasks", "next"], {
    "workflow_id": _ID, "node": _TEXT,
    "total": {**_COUNT, "description": "the node's tasks (with the status asked for)"},
    "tasks": {"type": "array", "items": _TASK, "description": "in index order"},
    "next": {"type": ["integer", "null"],
             "description": "pass as ?after= for the next page; null: none"}})
"""``GET /v1/workflows/{id}/nodes/{node}/tasks``."""

WORKFLOWS_PAGE_SCHEMA = _object(["items", "next_cursor"], {
    "items": {"type": "array", "items": _object(
        ["id", "name", "tenant", "status", "seq", "created_at", "updated_at", "error",
         "definition", "links"], {
            "id": _ID, "name": _TEXT, "tenant": {"type": ["string", "null"]},
            "status": _STATUS, "seq": _COUNT, "created_at": _TIME, "updated_at": _TIME,
            "error": _TEXT, "definition": _DEFINITION, "paused": _PAUSED, "labels": _LABELS,
            "links": _LINKS})},
    "next_cursor": {"type": ["string", "null"],
                    "description": "pass as ?cursor= for the next page; null: none"}})
"""``GET /v1/workflows``: newest first."""

CANCELLED_SCHEMA = _object(["id", "status", "links"], {
    "id": _ID, "status": {"const": CANCEL_REQUESTED}, "links": _LINKS})
"""``POST /v1/workflows/{id}/cancel``."""

PAUSE_ANSWER_SCHEMA = _object(["id", "status", "request_id", "was_paused", "links"], {
    "id": _ID, "status": {"enum": ["pause_requested", "resume_requested"]},
    "request_id": {**_TEXT, "description": "the request's id (the sender's, or one the "
                   "gateway made): sent again, it changes nothing"},
    "was_paused": {"type": "boolean", "description": "whether the run read as paused "
                   "before this request"},
    "links": _LINKS})
"""``POST /v1/workflows/{id}/pause`` and ``/resume``."""
RERUN_STARTED_SCHEMA = _object(["id", "status", "rerun_of", "reset", "links"], {
    "id": _ID, "status": _STATUS, "rerun_of": {**_ID, "description": "the source run"},
    "reset": {"type": ["string", "null"], "description": "a reset's node; null: a rerun"},
    "links": _LINKS})
"""``POST /v1/workflows/{id}/rerun`` and ``/reset``."""

SIGNALLED_SCHEMA = _object(["workflow_id", "signal", "signal_id", "links"], {
    "workflow_id": _ID, "signal": _TEXT,
    "signal_id": {**_TEXT, "description": "the sender's, or the one the gateway made"},
    "warnings": {"type": "array", "items": _TEXT, "description": (
        "a code workflow that waits now for signals of other names only (a misspelt "
        "name is kept for a wf.signal that may never come)")},
    "links": _LINKS})
"""``POST /v1/workflows/{id}/signals/{name}``."""

SIGNAL_FATE_SCHEMA = _object(
    ["workflow_id", "signal_id", "name", "index", "status", "node", "reason", "at",
     "received_at", "links"], {
        "workflow_id": _ID, "signal_id": _TEXT, "name": _TEXT, "index": _INDEX,
        "status": {"enum": ["received", "buffered", "consumed", "discarded", "refused"],
                   "description": "received: answered 202, not applied yet; buffered: "
                                  "kept until its wait starts; consumed by node; "
                                  "discarded or refused: see reason"},
        "node": {"type": ["string", "null"], "description": "the wait that consumed it"},
        "reason": {"type": ["string", "null"],
                   "description": "why it was discarded or refused"},
        "at": _TIME_OR_NULL, "received_at": _TIME_OR_NULL,
        "links": {"type": "object", "additionalProperties": _TEXT}})
"""``GET /v1/workflows/{id}/signals/{signal_id}``."""

SCHEDULE_SIGNALLED_SCHEMA = _object(["name", "generation", "workflow_id", "signal"], {
    "name": _TEXT, "generation": {"type": "integer", "minimum": 1}, "workflow_id": _ID,
    "signal": {"enum": ["pause", "resume"]}})
"""``POST /v1/schedules/{name}/pause`` and ``.../resume``."""

_WORKER = _object(
    ["worker_id", "host", "pid", "version", "tasks", "concurrency", "in_flight",
     "started_at_ms", "announced_s_ago"], {
        "worker_id": _TEXT, "host": _TEXT, "pid": _INT, "version": _TEXT,
        "tasks": {"type": "array", "items": _TEXT},
        "tags": {"type": "array", "items": _TEXT, "description": "the tags it announces "
                 "(HEADWATER_WORKER_TAGS)"}, "concurrency": _COUNT,
        "in_flight": _COUNT, "started_at_ms": {**_INT, "description": "ms since the epoch"},
        "announced_s_ago": {"type": "number", "minimum": 0, "description": "seconds"}})
_LOST_WORKER = _object(["worker_id", "host", "pid", "in_flight", "last_heard_at"], {
    "worker_id": _TEXT, "host": _TEXT, "pid": _INT,
    "in_flight": {**_COUNT, "description": "attempts it ran when last heard"},
    "last_heard_at": _TIME})
_SELECTOR = _object(["requires", "topic", "backlog"], {
    "requires": {"type": ["array", "null"], "items": _TEXT,
                 "description": "the tags its dispatches require (null: too many to be "
                                "written in the topic's name, which holds their digest)"},
    "topic": _TEXT, "backlog": _COUNT})
QUEUES_SCHEMA = _object(["queues"], {"queues": {"type": "array", "items": _object(
    ["queue", "backlog", "in_flight", "live_workers", "workers", "tasks",
     "oldest_waiting_s", "maxdepth", "state"], {
        "queue": _TEXT, "backlog": _COUNT, "in_flight": _COUNT, "live_workers": _COUNT,
        "workers": {"type": "array", "items": _WORKER},
        "lost_workers": {"type": "array", "items": _LOST_WORKER,
                         "description": "workers that stopped announcing themselves "
                                        "without saying so, heard within "
                                        "HEADWATER_UNSERVED_AFTER_S"},
        "tasks": {"type": "array", "items": _TEXT},
        "tags": {"type": "array", "items": _TEXT,
                 "description": "every tag its live workers announce"},
        "selectors": {"type": "array", "items": _SELECTOR, "description": "its selector "
                      "topics (where nodes that require tags send their dispatches), "
                      "each with its backlog (counted in the queue's)"},
        "oldest_waiting_s": {"type": ["number", "null"], "minimum": 0},
        "maxdepth": {**_COUNT, "description": "0: unlimited"},
        "state": {"enum": list(QueueState)}})},
    "limits": {"type": ["array", "null"], "items": {"type": "object"},
               "description": "the limiters of concurrency keys and rate limits, as GET "
                              "/v1/limits lists them (null: the projection could not be "
                              "read; empty for a tenant's token)"},
    "triggers": {"type": ["array", "null"], "items": {"type": "object"},
                 "description": "each trigger's consumer group lag per partition, as GET "
                                "/v1/triggers/{name} shows it (null: Kafka could not be "
                                "read)"}})
"""``GET /v1/queues``."""

_LINE_PROPERTIES: dict[str, Any] = {
    "attempt": {"type": "integer", "minimum": 1}, "line": {"type": "integer", "minimum": 1,
                                                           "description": "from 1 per attempt"},
    "at": _TIME, "level": {**_TEXT, "description": "INFO, WARNING...; INFO for stdout, "
                                                   "ERROR for stderr"},
    "stream": {"enum": ["log", "stdout", "stderr"]},
    "logger": {**_TEXT, "description": "the logger's name; empty for a stream"},
    "message": _TEXT}
_LINE = _object(list(_LINE_PROPERTIES), _LINE_PROPERTIES)
_TASK_INDEX: dict[str, Any] = {"type": ["integer", "null"], "minimum": 0,
                               "description": "the map item or loop step (null: none)"}
TASK_LOGS_SCHEMA = _object(["workflow_id", "node", "index", "lines", "next", "complete"], {
    "workflow_id": _ID, "node": _TEXT, "index": _TASK_INDEX,
    "lines": {"type": "array", "items": _LINE},
    "next": {"type": ["string", "null"],
             "description": "<attempt>:<line>, pass as ?after= for what follows; null: "
                            "complete and read to its end"},
    "complete": {"type": "boolean", "description": "no line can come any more"}})
"""``GET /v1/workflows/{id}/tasks/{node}/{index}/logs``."""
RUN_LOGS_SCHEMA = _object(["workflow_id", "lines", "next"], {
    "workflow_id": _ID,
    "lines": {"type": "array", "items": _object(
        ["node", "index", *_LINE_PROPERTIES],
        {"node": _TEXT, "index": _TASK_INDEX, **_LINE_PROPERTIES})},
    "next": {"type": ["string", "null"],
             "description": "pass as ?after= for the next page; null: none so far"}})
"""``GET /v1/workflows/{id}/logs``: in (node, index, attempt, line) order."""
LOG_STREAM_SCHEMA: dict[str, Any] = {
    "type": "string", "description": "Server-Sent Events: per line, event: log, id: "
    "<attempt>:<line>, data: the line as JSON; then event: end once the log is complete"}
"""A task's log followed (``?follow=true``)."""

READY_SCHEMA = _object(["status"], {"status": {"const": "ready"}})
"""``GET /ready``."""

EVENT_STREAM_SCHEMA: dict[str, Any] = {
    "type": "string", "description": "Server-Sent Events: per event of the run, id: <seq>, "
    "event: <type> and data: <the event as JSON>; it ends after the terminal event"}
"""The ``text/event-stream`` answers (their events are the run's history)."""

JSON, EVENTS = "application/json", "text/event-stream"
ANSWERS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "GET /ready": {"200": {JSON: READY_SCHEMA}},
    "POST /v1/workflows": {"202": {JSON: ACCEPTED_SCHEMA}, "200": {JSON: ACCEPTED_SCHEMA}},
    "GET /v1/workflows": {"200": {JSON: WORKFLOWS_PAGE_SCHEMA}},
    "GET /v1/workflows/{workflow_id}": {"200": {JSON: WORKFLOW_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/events": {"200": {EVENTS: EVENT_STREAM_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/tasks/{node}/{index}": {"200": {JSON: TASK_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/nodes/{node}/tasks": {"200": {JSON: NODE_TASKS_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/cancel": {"202": {JSON: CANCELLED_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/pause": {"202": {JSON: PAUSE_ANSWER_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/resume": {"202": {JSON: PAUSE_ANSWER_SCHEMA}},
    "POST /v1/definitions/{name}/pause": {"202": {JSON: DEFINITION_PAUSE_SCHEMA}},
    "POST /v1/definitions/{name}/resume": {"202": {JSON: DEFINITION_PAUSE_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/signals/{name}": {"202": {JSON: SIGNALLED_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/rerun": {"202": {JSON: RERUN_STARTED_SCHEMA},
                                               "200": {JSON: RERUN_STARTED_SCHEMA}},
    "POST /v1/workflows/{workflow_id}/reset": {"202": {JSON: RERUN_STARTED_SCHEMA},
                                               "200": {JSON: RERUN_STARTED_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/signals/{signal_id}": {"200": {JSON: SIGNAL_FATE_SCHEMA}},
    "POST /v1/run/{name}": {"200": {JSON: WORKFLOW_SCHEMA, EVENTS: EVENT_STREAM_SCHEMA},
                            "202": {JSON: ACCEPTED_SCHEMA}},
    "GET /v1/queues": {"200": {JSON: QUEUES_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/tasks/{node}/{index}/logs": {
        "200": {JSON: TASK_LOGS_SCHEMA, EVENTS: LOG_STREAM_SCHEMA}},
    "GET /v1/workflows/{workflow_id}/logs": {"200": {JSON: RUN_LOGS_SCHEMA}},
    "POST /v1/schedules/{name}/pause": {"202": {JSON: SCHEDULE_SIGNALLED_SCHEMA}},
    "POST /v1/schedules/{name}/resume": {"202": {JSON: SCHEDULE_SIGNALLED_SCHEMA}},
}
"""Per operation (``"METHOD path"``), status and media type: the answer's schema."""
ANSWERS.update(operation_docs.ANSWERS)
