"""A Python client of the gateway's HTTP API (docs/http-api.md): ``Client`` (blocking)
and ``AsyncClient`` (the same methods, to await).

    from headwater.client import Client
    with Client("http://127.0.0.1:8080") as hw:
        run = hw.run("stdlib-search", {"query": "zip", "top_k": 3, "limit": None},
                     timeout=30)
        print(run.output if run.done else hw.result(run.id, timeout=300))

Auth: a client sends ``Authorization: Bearer <token>`` on every request, event
streams and their reconnections included, when it has a token (``token``, else
``HEADWATER_TOKEN``); a gateway with auth on answers 401 without a valid one
(``Unauthorized``) and 403 when its role is too low (``Forbidden``), neither retried.

Errors: every problem document the gateway answers is raised as a
``headwater.errors.HeadwaterHTTPError`` subclass chosen by status (``NotFound``,
``Conflict``, ``Unprocessable``, ``TooManyRequests`` ...), a redirect as ``HeadwaterHTTPError``;
an empty id or name or a timeout not finite and >= 0 is a ``ValueError`` before sending;
a run that failed or was cancelled raises ``WorkflowFailed`` (its ``failure``: the
failing attempt's error type, message and traceback) / ``WorkflowCancelled``.

Retries: a connection error (the transport's, timeouts included) and a 503 are tried
again, ``retries`` times, after ``retry.delay_s`` (``Retry-After`` or a doubling
backoff, at most 2 s). That is safe for every method: a submission's id (and a
signal's ``signal_id``) is chosen before the first try, so a retry names the same run
(the gateway answers 200 for the same id and body). Other errors are raised at once.

``events`` follows a run's SSE stream and, when the connection drops or the gateway
shuts down, reconnects (same retry policy, counted afresh after each event) with
``Last-Event-ID``, so no event is lost or repeated. ``result`` rides on ``events``: it
reads the run once, follows its events until the terminal one, then reads its output.
Not imported by ``headwater/__init__.py``: task code that does not use it does not pay
for httpx.

Modules: ``sync`` (``Client``) and ``aio`` (``AsyncClient``) only send, each with its
httpx client, what the sans-I/O modules decide: ``requests`` (what each method asks and
how it reads the answer), ``http`` (the ``Call`` builders, argument checks), ``retry``
(which failures are tried again, and what an error answer raises), ``follow`` (an event
stream's reconnects, ``result``'s watch), ``logs`` (task logs: their pages and their
stream), ``types`` (the answers' frozen views) and ``tasks`` (those of a run's tasks).
``schedules`` is ``Client.schedules``, ``triggers`` ``Client.triggers``, ``webhooks``
``Client.webhooks``, ``operations`` ``Client.operations`` (bulk operations); ``calls``
the child runs of task code (``TaskContext.call``).
"""

from headwater.client.aio import AsyncClient
from headwater.client.definitions import AsyncDefinitions, Definitions
from headwater.client.follow import SETTLE_S
from headwater.client.logs import TaskLogLine
from headwater.client.operations import AsyncOperations, DryRun, Operation, Operations
from headwater.client.requests import RUN_WAIT_S
from headwater.client.schedules import AsyncSchedules, Schedules
from headwater.client.sync import Client
from headwater.client.tasks import NodeTasks, Task, TaskAttempt, TaskRow
from headwater.client.triggers import AsyncTriggers, Trigger, Triggers
from headwater.client.types import (
    Definition,
    DefinitionRef,
    Event,
    Identity,
    Page,
    Queue,
    Run,
    Schedule,
    ScheduleApplied,
    SignalFate,
    Submitted,
    Workflow,
)
from headwater.client.webhooks import AsyncWebhooks, Webhooks

__all__ = [
    "RUN_WAIT_S",
    "SETTLE_S",
    "AsyncClient",
    "AsyncDefinitions",
    "AsyncOperations",
    "AsyncSchedules",
    "AsyncTriggers",
    "AsyncWebhooks",
    "Client",
    "Definition",
    "DefinitionRef",
    "Definitions",
    "DryRun",
    "Event",
    "Identity",
    "NodeTasks",
    "Operation",
    "Operations",
    "Page",
    "Queue",
    "Run",
    "Schedule",
    "ScheduleApplied",
    "Schedules",
    "SignalFate",
    "Submitted",
    "Task",
    "TaskAttempt",
    "TaskLogLine",
    "TaskRow",
    "Trigger",
    "Triggers",
    "Webhooks",
    "Workflow",
]
