"""Examples of every request body and answer (2xx) in the OpenAPI document, by
operation (``"METHOD path"``), status and media type, as OpenAPI 3.1.0 "Example
Objects" (``summary``, ``value``).

They are what a run of the gateway sends and answers (a refund that waits for an
approval, a nightly report on a schedule), trimmed; each is checked against its schema
(``tests/unit/services/gateway/openapi/test_openapi_examples.py``), and the bodies also against
the models the routes parse them with.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from services.gateway.operations import openapi as operation_docs
from services.gateway.runs.cursor import encode_cursor
from services.gateway.webhooks import examples as webhook_examples

JSON, EVENTS = "application/json", "text/event-stream"
RUN = "refund-order-1042"
OTHER = "wf-33e1b09fda1047e896e2c8cff8435277"
AT, LATER, DONE = ("2026-03-02T09:14:07.512000+00:00", "2026-03-02T09:14:07.631000+00:00",
                   "2026-03-02T09:21:40.208000+00:00")
DIGEST = "8c6aaa9a91debb3bb986816b9eb20a0afee8952ee35c035e55920c5c2bd28f06"


def _example(summary: str, value: Any) -> dict[str, Any]:
    """An Example Object."""
    return {"summary": summary, "value": value}


def _links(workflow_id: str) -> dict[str, str]:
    """A run's links (``runs.views.links``)."""
    return {"self": f"/v1/workflows/{workflow_id}", "events": f"/v1/workflows/{workflow_id}/events"}


REFUND_SPEC: dict[str, Any] = {"name": "refund", "nodes": [
    {"id": "fetch", "task": "billing.fetch_order", "input": {"order": "${input.order}"}},
    {"id": "approval", "kind": "wait", "needs": ["fetch"], "signal": "approval",
     "fields": {"approved": "boolean", "note": {"type": "string", "required": False}},
     "timeout": 86400},
    {"id": "refund", "task": "billing.refund", "needs": ["approval"],
     "when": "${nodes.approval.output.approved} == true",
     "input": {"order": "${input.order}", "amount": "${nodes.fetch.output.total}"},
     "retry": {"max_attempts": 5, "backoff_base": 1, "backoff_max": 60}}],
    "output": {"refund": "${nodes.refund.output}"}}
"""A spec: fetch an order, wait for an approval, refund when approved."""
ORDER_SCHEMA: dict[str, Any] = {"type": "object", "required": ["order"],
                                "properties": {"order": {"type": "integer"}}}
REPORT_SPEC: dict[str, Any] = {"name": "reports", "nodes": [
    {"id": "build", "task": "reports.build", "input": {"days": "${input.days}"}}],
    "output": {"rows": "${nodes.build.output.rows}"}}

SUMMARIES_SPEC: dict[str, Any] = {"name": "summaries", "priority": "low", "nodes": [
    {"id": "summarize", "kind": "map", "task": "llm.summarize", "over": "${input.docs}",
     "input": {"doc": "${item}", "customer": "${input.customer}"},
     "requires": ["gpu"],
     "concurrency": {"key": "${input.customer}", "limit": 2},
     "rate_limit": {"key": "openai", "per_minute": 500, "units": "${item.tokens}"}}],
    "output": {"summaries": "${nodes.summarize.output}"}}
"""A spec at a low priority whose map runs on GPU workers, two at a time per customer
and within a model API's 500 tokens a minute."""

SCHEDULE_BODY: dict[str, Any] = {
    "cron": "0 2 * * *", "timezone": "Europe/Paris", "definition": "reports@1",
    "input": {"days": 1}, "overlap": "skip", "catchup": "latest", "catchup_max": 3,
    "misfire_grace": 300, "start_at": "2026-03-03T00:00:00+01:00"}

REQUEST_EXAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "POST /v1/workflows": {
        "by-spec": _example("a spec, with an idempotency key and a tenant", {
            "id": RUN, "workflow": REFUND_SPEC, "input": {"order": 1042}, "tenant": "acme"}),
        "by-definition": _example("a registered definition by name (and version)", {
            "definition": "refund@1", "input": {"order": 1043}}),
        "limited": _example(
            "a spec that selects workers and limits its calls, submitted at a high "
            "priority in place of its own", {
                "workflow": SUMMARIES_SPEC, "priority": "high", "tenant": "acme",
                "input": {"customer": "acme", "docs": [{"text": "...", "tokens": 900}]}}),
    },
    "POST /v1/workflows/{workflow_id}/cancel": {
        "reason": _example("with a reason, recorded in the history",
                           {"reason": "customer withdrew the request"})},
    "POST /v1/workflows/{workflow_id}/pause": {
        "reason": _example("with a reason and the sender's id", {
            "reason": "the model API is down", "request_id": "ops-2291-pause"})},
    "POST /v1/workflows/{workflow_id}/resume": {
        "plain": _example("the sender's id only", {"request_id": "ops-2291-resume"})},
    "POST /v1/definitions/{name}/pause": {
        "reason": _example("with a reason, recorded in each run's history",
                           {"reason": "the model API is down"})},
    "POST /v1/definitions/{name}/resume": {"plain": _example("no body needed", {})},
    "POST /v1/workflows/{workflow_id}/signals/{name}": {
        "approve": _example("the fields the wait declares, with the sender's id", {
            "signal_id": "ticket-7731-approve",
            "fields": {"approved": True, "note": "within policy"}}),
        "map-item": _example("for the wait of one map item",
                             {"index": 2, "fields": {"approved": False}}),
    },
    "POST /v1/workflows/{workflow_id}/rerun": {
        "fixed-input": _example("with the input fixed, under an id of the sender's", {
            "id": "refund-order-1042-2", "input": {"order": 1042, "currency": "EUR"}}),
        "same-input": _example("the source's input", {})},
    "POST /v1/workflows/{workflow_id}/reset": {
        "from-a-node": _example("run 'refund' and what follows it again",
                                {"node": "refund"})},
    "POST /v1/run/{name}": {"input": _example("the run's input", {"order": 1042})},
    "PUT /v1/definitions/{name}": {
        "with-input-schema": _example("a spec and the JSON Schema its input must match",
                                      {"workflow": REFUND_SPEC, "input_schema": ORDER_SCHEMA}),
        "bare-spec": _example("a bare spec: any input", REPORT_SPEC),
    },
    "POST /v1/definitions/{name}/rollback": {
        "to-a-version": _example("make version 1 current", {"to": 1}),
        "the-one-before": _example("the version before the current one", {})},
    "PUT /v1/schedules/{name}": {
        "nightly": _example("every night at 02:00 Paris time", SCHEDULE_BODY),
        "urgent": _example("every 5 minutes, its runs at priority 8",
                           {"cron": "*/5 * * * *", "definition": "refund",
                            "input": {"order": 1042}, "priority": 8})},
    "PUT /v1/limits/{key}": {
        "both": _example("3 at once, 500 a minute",
                         {"concurrency": {"limit": 3}, "rate_limit": {"per_minute": 500}}),
        "taken-back": _example("the specs' concurrency limit again", {"concurrency": None})},
}
"""Per operation: named examples of its JSON request body."""

_TASK = {"key": "fetch", "node": "fetch", "index": None, "attempt": 1,
         "status": "succeeded", "task": "billing.fetch_order", "queue": "cpu",
         "progress": 1.0, "message": "", "error": "", "error_type": "", "traceback": "",
         "worker": "worker-cpu-1-19976", "dispatched_at": AT, "started_at": LATER,
         "finished_at": LATER}
_COUNTS = {"error": "", "total": None, "succeeded": 0, "running": 0, "failed": 0}
WAITING_RUN: dict[str, Any] = {
    "id": RUN, "name": "refund", "tenant": "acme", "status": "running", "seq": 6,
    "created_at": AT, "updated_at": LATER, "input": {"order": 1042}, "output": None,
    "error": "", "failure": None, "nondeterministic": None,
    "definition": None,
    "nodes": [
        {"id": "fetch", "kind": "task", "task": "billing.fetch_order", "status": "succeeded",
         **_COUNTS, "succeeded": 1},
        {"id": "approval", "kind": "wait", "task": None, "status": "running", **_COUNTS,
         "signal": "approval", "waits": [
             {"index": None, "status": "waiting", "since": LATER,
              "timeout_at": "2026-03-03T09:14:07.631000+00:00", "signal_id": None,
              "fields": None, "ended_at": None}]},
        {"id": "refund", "kind": "task", "task": "billing.refund", "status": "pending",
         **_COUNTS, "condition": None}],
    "deadline": "2026-03-04T09:14:07.631000+00:00",
    "tasks": [_TASK], "tasks_truncated": False, "parent": None, "children": [],
    "waiting": [{"node": "approval", "index": None, "signal": "approval", "since": LATER,
                 "timeout_at": "2026-03-03T09:14:07.631000+00:00"}],
    "signals": [],
    "next_wakeup": {"at": "2026-03-03T09:14:07.631000+00:00", "node": "approval",
                    "index": None, "reason": "wait timeout"},
    "links": _links(RUN)}
"""A run waiting for its approval signal."""
REPORT_RUN: dict[str, Any] = {
    "id": "wf-2157494e578e4d12bd04191878f17be6", "name": "reports", "tenant": None,
    "status": "succeeded", "seq": 6, "created_at": AT, "updated_at": LATER,
    "input": {"days": 7}, "output": {"rows": 120}, "error": "", "failure": None,
    "nondeterministic": None,
    "definition": {"name": "reports", "version": 1},
    "nodes": [{"id": "build", "kind": "task", "task": "reports.build",
               "status": "succeeded", **_COUNTS, "succeeded": 1}],
    "tasks": [{**_TASK, "key": "build", "node": "build", "task": "reports.build"}],
    "tasks_truncated": False, "parent": None, "children": [], "waiting": [], "signals": [],
    "next_wakeup": None, "links": _links("wf-2157494e578e4d12bd04191878f17be6")}
"""A run of a definition that has ended."""

_TRACEBACK = (
    'Traceback (most recent call last):\n  File "/app/billing/tasks.py", line 41, in refund\n'
    "    amount = parse_amount(order)\n             ^^^^^^^^^^^^^^^^^^^\n"
    '  File "/app/billing/money.py", line 12, in parse_amount\n'
    '    whole, cents = order["total"].split(".")\n                   ^^^^^^^^^^^^^^^^^^^^\n'
    "AttributeError: 'int' object has no attribute 'split'\n")
_ERROR = "'int' object has no attribute 'split'"
_ATTEMPT = {"attempt": 1, "status": "failed", "worker": "worker-cpu-1-19976",
            "dispatched_at": AT, "started_at": LATER, "finished_at": LATER,
            "error": _ERROR, "error_type": "AttributeError", "traceback": _TRACEBACK}
_TASK_PATH = f"/v1/workflows/{RUN}/tasks/refund/-"
FAILED_TASK: dict[str, Any] = {
    "workflow_id": RUN, "node": "refund", "index": None, "key": "refund",
    "task": "billing.refund", "queue": "cpu", "status": "retry_wait", "attempt": 3,
    "input": {"order": 1042, "amount": 120}, "output": None,
    "attempts": [_ATTEMPT, {**_ATTEMPT, "attempt": 2, "finished_at": DONE}],
    "links": {"self": _TASK_PATH, "logs": f"{_TASK_PATH}/logs"}}
"""A task whose first two attempts raised, waiting to retry."""
_ITEM = {**_TASK, "key": "resize[7]", "node": "resize", "index": 7, "task": "images.resize",
         "status": "failed", "error": _ERROR, "error_type": "AttributeError",
         "traceback": _TRACEBACK, "finished_at": DONE}

_ACCEPTED = {"id": OTHER, "status": "accepted", "links": _links(OTHER)}
_STREAM = (
    'id: 1\nevent: WorkflowAccepted\ndata: {"spec":{"name":"reports","nodes":[{"id":"build",'
    '"task":"reports.build","input":{"days":"${input.days}"}}]},"at_ms":1772442847512,'
    '"input":{"days":7},"tenant":null,"definition":"reports","workflow_id":"' + OTHER + '",'
    '"definition_version":1}\n\n'
    'id: 2\nevent: TaskDispatched\ndata: {"node":"build","task":"reports.build",'
    '"at_ms":1772442847512,"index":null,"input":{"days":7},"queue":"cpu","attempt":1,'
    '"timeout_s":null,"checkpoint":null,"workflow_id":"' + OTHER + '",'
    '"heartbeat_timeout_s":30.0}\n\n'
    'id: 6\nevent: WorkflowSucceeded\ndata: {"at_ms":1772442847631,"output":{"rows":120},'
    '"workflow_id":"' + OTHER + '"}\n\n')
_RUN_STREAM = ('event: accepted\ndata: {"id":"' + OTHER + '","status":"accepted","links":'
               '{"self":"/v1/workflows/' + OTHER + '","events":"/v1/workflows/' + OTHER +
               '/events"}}\n\n' + _STREAM)
_LISTED = {key: WAITING_RUN[key] for key in ("id", "name", "tenant", "status", "seq",
                                             "created_at", "updated_at", "error",
                                             "definition", "links")}
_DEFINITION_LINKS = {"self": "/v1/definitions/refund?version=1",
                     "latest": "/v1/definitions/refund", "run": "/v1/run/refund",
                     "runs": "/v1/workflows?definition=refund"}
_STORED = {"name": "refund", "version": 1, "digest": DIGEST, "created_at": AT,
           "links": _DEFINITION_LINKS}
_SCHEDULE_ID = "schedule:nightly-report:3"
_SCHEDULE: dict[str, Any] = {
    "name": "nightly-report", "generation": 3, "workflow_id": _SCHEDULE_ID,
    "status": "running", "cron": "0 2 * * *", "timezone": "Europe/Paris",
    "definition": {"name": "reports", "version": 1}, "input": {"days": 1},
    "overlap": "skip", "catchup": "latest", "catchup_max": 3, "misfire_grace": 300.0,
    "start_at": None, "paused": False, "next_fire_at": "2026-03-03T01:00:00+00:00",
    "last_fire_at": "2026-03-02T01:00:00+00:00",
    "last_run_id": f"{_SCHEDULE_ID}:fire.4:1", "fired": 5, "skipped": 0,
    "created_at": "2026-02-26T17:40:12.090000+00:00",
    "links": {"self": "/v1/schedules/nightly-report",
              "workflow": "/v1/workflows/schedule%3Anightly-report%3A3",
              "pause": "/v1/schedules/nightly-report/pause",
              "resume": "/v1/schedules/nightly-report/resume"}}
_LOG_LINES = [
    {"attempt": 1, "line": 1, "at": AT, "level": "INFO", "stream": "log",
     "logger": "headwater.task", "message": "fetching order 1042"},
    {"attempt": 1, "line": 2, "at": LATER, "level": "WARNING", "stream": "log",
     "logger": "billing.client", "message": "slow answer from the billing API (2.1 s)"},
    {"attempt": 1, "line": 3, "at": LATER, "level": "INFO", "stream": "stdout", "logger": "",
     "message": "total: 120.50 EUR"}]
_LOG_STREAM = "".join(
    f"id: {line['attempt']}:{line['line']}\nevent: log\ndata: {orjson.dumps(line).decode()}"
    "\n\n" for line in _LOG_LINES) + 'event: end\ndata: {"complete":true}\n\n'
_CURSOR = encode_cursor(datetime(2026, 3, 2, 9, 14, 7, 512000, tzinfo=UTC), RUN)


def _json(summary: str, value: Any) -> dict[str, dict[str, Any]]:
    """A JSON answer's one named example."""
    return {JSON: {"example": _example(summary, value)}}


ANSWER_EXAMPLES: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "GET /ready": {"200": _json("connected to Kafka and PostgreSQL", {"status": "ready"})},
    "POST /v1/workflows": {
        "202": _json("a new run", _ACCEPTED),
        "200": _json("the same id and body again: the same run",
                     {"id": RUN, "status": "running", "links": _links(RUN)})},
    "GET /v1/workflows": {"200": _json("a page of one run, and the cursor of the next",
                                       {"items": [_LISTED], "next_cursor": _CURSOR})},
    "GET /v1/workflows/{workflow_id}": {"200": _json("a run waiting for a signal",
                                                     WAITING_RUN)},
    "GET /v1/workflows/{workflow_id}/blobs/{digest}": {"200": _json(
        "a large input's JSON; its own large part is a reference in turn", {
            "question": "summarise these filings", "filings": {
                "$blob": "sha256:" + "3f" * 32, "bytes": 18_874_368}})},
    "GET /v1/workflows/{workflow_id}/events": {"200": {EVENTS: {"example": _example(
        "a run's events, to its terminal one", _STREAM)}}},
    "GET /v1/workflows/{workflow_id}/tasks/{node}/{index}": {"200": _json(
        "a task whose attempts raised, waiting to retry", FAILED_TASK)},
    "GET /v1/workflows/{workflow_id}/nodes/{node}/tasks": {"200": _json(
        "the failed tasks of a map, one a page", {
            "workflow_id": RUN, "node": "resize", "total": 2, "tasks": [_ITEM], "next": 7})},
    "POST /v1/workflows/{workflow_id}/cancel": {"202": _json("cancelling", {
        "id": OTHER, "status": "cancel_requested", "links": _links(OTHER)})},
    "POST /v1/definitions/{name}/pause": {"202": _json("pausing a definition", {
        "definition": "refund", "paused": True, "runs": 12,
        "links": {"self": "/v1/definitions/refund"}})},
    "POST /v1/definitions/{name}/resume": {"202": _json("resuming a definition", {
        "definition": "refund", "paused": False, "runs": 12,
        "links": {"self": "/v1/definitions/refund"}})},
    "POST /v1/workflows/{workflow_id}/pause": {"202": _json("pausing", {
        "id": OTHER, "status": "pause_requested", "request_id": "ops-2291-pause",
        "was_paused": False, "links": _links(OTHER)})},
    "POST /v1/workflows/{workflow_id}/resume": {"202": _json("resuming", {
        "id": OTHER, "status": "resume_requested", "request_id": "ops-2291-resume",
        "was_paused": True, "links": _links(OTHER)})},
    "POST /v1/workflows/{workflow_id}/rerun": {
        "202": _json("a new run from what failed", {
            "id": "refund-order-1042-2", "status": "accepted", "rerun_of": RUN, "reset": None,
            "links": _links("refund-order-1042-2")}),
        "200": _json("the same id and body again: the same run", {
            "id": "refund-order-1042-2", "status": "running", "rerun_of": RUN, "reset": None,
            "links": _links("refund-order-1042-2")})},
    "POST /v1/workflows/{workflow_id}/reset": {
        "202": _json("a new run from the node", {
            "id": "refund-order-1042-3", "status": "accepted", "rerun_of": RUN,
            "reset": "refund", "links": _links("refund-order-1042-3")}),
        "200": _json("the same id and body again: the same run", {
            "id": "refund-order-1042-3", "status": "succeeded", "rerun_of": RUN,
            "reset": "refund", "links": _links("refund-order-1042-3")})},
    "POST /v1/workflows/{workflow_id}/signals/{name}": {"202": _json("the signal is sent", {
        "workflow_id": RUN, "signal": "approval", "signal_id": "ticket-7731-approve",
        "links": _links(RUN)})},
    "GET /v1/workflows/{workflow_id}/signals/{signal_id}": {"200": _json(
        "a signal sent after its run had ended", {
            "workflow_id": RUN, "signal_id": "ticket-7731-approve", "name": "approval",
            "index": None, "status": "refused",
            "node": None, "reason": f"SignalSent for workflow {RUN} refused: the workflow "
                                    "has already ended (succeeded)",
            "at": "2026-03-02T09:15:01.204000+00:00",
            "received_at": "2026-03-02T09:15:01.113000+00:00",
            "links": {**_links(RUN), "signal": f"/v1/workflows/{RUN}/signals/"
                                               "ticket-7731-approve"}})},
    "POST /v1/run/{name}": {
        "200": {**_json("the run ended in time", REPORT_RUN),
                EVENTS: {"example": _example("Accept: text/event-stream", _RUN_STREAM)}},
        "202": _json("the run goes on (timeout, or Prefer: respond-async)", _ACCEPTED)},
    "PUT /v1/definitions/{name}": {
        "201": _json("version 1 of refund", _STORED),
        "200": _json("the same body again: version 1, unchanged", _STORED)},
    "GET /v1/definitions": {"200": _json("one definition; no more pages",
                                         {"items": [{**_STORED, "paused": None}],
                                          "next_cursor": None})},
    "GET /v1/definitions/{name}": {"200": _json("its latest version, paused", {
        **_STORED, "latest": 1, "current": 1, "deleted": False, "workflow": REFUND_SPEC,
        "input_schema": ORDER_SCHEMA, "paused": {
            "since": "2026-03-02T09:20:00+00:00", "by": "ops@example.com",
            "reason": "payment provider down"}})},
    "POST /v1/definitions/{name}/rollback": {"200": _json("version 1 is current again", {
        "name": "refund", "version": 1, "previous": 2, "latest": 2, "changed": True,
        "links": _DEFINITION_LINKS})},
    "PUT /v1/schedules/{name}": {
        "201": _json("a new generation", {
            "name": "nightly-report", "generation": 3, "workflow_id": _SCHEDULE_ID,
            "created": True, "links": {"self": "/v1/schedules/nightly-report",
                                       "workflow": f"/v1/workflows/{_SCHEDULE_ID}"}}),
        "200": _json("the same settings again: the live generation", {
            "name": "nightly-report", "generation": 3, "workflow_id": _SCHEDULE_ID,
            "created": False, "links": {"self": "/v1/schedules/nightly-report",
                                        "workflow": f"/v1/workflows/{_SCHEDULE_ID}"}})},
    "PUT /v1/limits/{key}": {"202": _json("the limits of openai defined", {
        "key": "openai", "limits": [
            {"limiter": "limit::concurrency:openai", "kind": "concurrency", "limit": 3,
             "window_s": None,
             "links": {"history": "/v1/workflows/limit::concurrency:openai"}},
            {"limiter": "limit::rate:openai", "kind": "rate", "limit": 500, "window_s": 60.0,
             "links": {"history": "/v1/workflows/limit::rate:openai"}}]})},
    "GET /v1/limits": {"200": _json("two limiters", {"items": [
        {"limiter": "limit::concurrency:acme", "kind": "concurrency", "key": "acme",
         "limit": 2, "window_s": None, "holding": 2, "queued": 3, "granted": 41,
         "updated_at": "2026-03-02T01:00:00.004000+00:00"},
        {"limiter": "limit::rate:openai", "kind": "rate", "key": "openai", "limit": 500,
         "window_s": 60.0, "holding": 480, "queued": 12, "granted": 9120,
         "updated_at": "2026-03-02T01:00:00.120000+00:00"}], "next_cursor": None})},
    "GET /v1/schedules": {"200": _json("the live schedules", {"items": [_SCHEDULE],
                                                              "next_cursor": None})},
    "GET /v1/schedules/{name}": {"200": _json("a schedule and its recent runs", {
        **_SCHEDULE, "runs": [{"workflow_id": f"{_SCHEDULE_ID}:fire.4:1",
                               "status": "succeeded",
                               "created_at": "2026-03-02T01:00:00.004000+00:00"}]})},
    "POST /v1/schedules/{name}/pause": {"202": _json("pausing", {
        "name": "nightly-report", "generation": 3, "workflow_id": _SCHEDULE_ID,
        "signal": "pause"})},
    "POST /v1/schedules/{name}/resume": {"202": _json("resuming", {
        "name": "nightly-report", "generation": 3, "workflow_id": _SCHEDULE_ID,
        "signal": "resume"})},
    "GET /v1/workflows/{workflow_id}/tasks/{node}/{index}/logs": {"200": {
        **_json("a task's lines, the attempt ended and its log whole", {
            "workflow_id": RUN, "node": "fetch", "index": None, "lines": _LOG_LINES,
            "next": None, "complete": True}),
        EVENTS: {"example": _example("?follow=true", _LOG_STREAM)}}},
    "GET /v1/workflows/{workflow_id}/logs": {"200": _json("a run's lines, one page", {
        "workflow_id": RUN, "lines": [{"node": "fetch", "index": None, **line}
                                      for line in _LOG_LINES],
        "next": None})},
}
"""Per operation, status and media type: the answer's named examples (one, named
``example``), as its media type's ``examples`` holds them."""

REQUEST_EXAMPLES.update(webhook_examples.REQUESTS)
ANSWER_EXAMPLES.update(webhook_examples.ANSWERS)
REQUEST_EXAMPLES.update(operation_docs.REQUEST_EXAMPLES)
ANSWER_EXAMPLES.update(operation_docs.ANSWER_EXAMPLES)
