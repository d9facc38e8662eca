"""What ``headwater.client`` returns: frozen views of the gateway's JSON answers, each
keeping the whole answer in ``raw`` (fields the view does not name stay reachable)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.core.events import TERMINAL_BODIES
from headwater.core.status import WorkflowStatus
from headwater.errors import TaskFailure

TERMINAL_STATUSES = frozenset(s.value for s in WorkflowStatus if s.terminal)
"""The statuses of a run that has ended (``succeeded``, ``failed``, ``cancelled``)."""
TERMINAL_EVENTS = frozenset(body.__name__ for body in TERMINAL_BODIES)
"""The event types that end a run's stream (``WorkflowSucceeded`` ...)."""


@dataclass(frozen=True)
class Submitted:
    """A submission's answer (``POST /v1/workflows``).

    Attributes:
        id: the run's id.
        status: its status when answered (``accepted`` for a new run).
        created: True for a new run (202), False for the same id and body again (200).
        links: ``{"self", "events"}`` paths.
        warnings: each queue the run needs that had no live worker when it was
            accepted (it waits until one serves it).
    """

    id: str
    status: str
    created: bool
    links: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class DefinitionRef:
    """Which definition (and version) a run was started from."""

    name: str
    version: int | None


@dataclass(frozen=True)
class Workflow:
    """A run, as ``GET /v1/workflows/{id}`` shows it (a list item has no ``input``,
    ``output`` or ``definition``: None).

    Attributes:
        id: the run's id.
        name: the spec's ``name``.
        status: ``accepted``, ``running``, ``succeeded``, ``failed`` or ``cancelled``.
        tenant: its tenant, or None.
        seq: the seq number of its last projected event (0: not started).
        input: its input.
        output: its output once succeeded, else None.
        error: why it failed, or "".
        created_at: RFC 3339 time.
        updated_at: RFC 3339 time.
        definition: the definition it was started from, or None (an inline spec).
        raw: the whole document.
        generation: 1, or more once ``restart_on_failure`` restarted it.
        failure: what failed it (a failed run's document), with the traceback; else None.
        priority: its priority, 0-9, higher first (None: a list item, or a gateway
            that shows none).
        deadline: RFC 3339 time by which it must have ended (its spec's ``deadline``;
            past it the run fails with ``DeadlineExceeded``), or None: none.
        parent: the run that started it (``{"workflow_id", "node", "index", "attempt",
            "via"}``: a ``workflow`` node's child, or a task's ``ctx.call``), or None.
        paused: a paused run's ``{"since", "by", "reason"}`` (its status stays
            ``running``); None when it is not paused.
        labels: its labels (``{}``: none).
    """

    id: str
    name: str
    status: str
    tenant: str | None
    seq: int
    input: Any
    output: Any
    error: str
    created_at: str | None
    updated_at: str | None
    definition: DefinitionRef | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    generation: int = 1
    failure: TaskFailure | None = None
    priority: int | None = None
    deadline: str | None = None
    parent: dict[str, Any] | None = None
    paused: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self.status in TERMINAL_STATUSES


def workflow_from(doc: dict[str, Any]) -> Workflow:
    """The view of a workflow document (or a list item)."""
    ref = doc.get("definition")
    definition = (DefinitionRef(str(ref.get("name", "")), ref.get("version"))
                  if isinstance(ref, dict) else None)
    return Workflow(
        id=doc["id"], name=doc.get("name") or "", status=doc["status"],
        tenant=doc.get("tenant"), seq=int(doc.get("seq") or 0), input=doc.get("input"),
        output=doc.get("output"), error=doc.get("error") or "",
        created_at=doc.get("created_at"), updated_at=doc.get("updated_at"),
        definition=definition, raw=doc, generation=int(doc.get("generation") or 1),
        failure=TaskFailure.from_document(doc.get("failure")),
        priority=doc["priority"] if isinstance(doc.get("priority"), int) else None,
        deadline=doc.get("deadline") if isinstance(doc.get("deadline"), str) else None,
        parent=doc.get("parent") if isinstance(doc.get("parent"), dict) else None,
        paused=doc["paused"] if isinstance(doc.get("paused"), dict) else None,
        labels=dict(doc.get("labels") or {}))


@dataclass(frozen=True)
class Page:
    """One page of ``GET /v1/workflows``, newest first.

    Attributes:
        items: the runs (list items: no input or output).
        next_cursor: pass it as ``cursor`` for the next page; None on the last.
    """

    items: list[Workflow]
    next_cursor: str | None


@dataclass(frozen=True)
class Run:
    """The answer of ``POST /v1/run/{name}`` waiting or answering at once.

    Attributes:
        id: the run's id.
        status: its status.
        done: True when it ended within the wait (then ``workflow`` is its document).
        workflow: the run's document once ended, else None.
    """

    id: str
    status: str
    done: bool
    workflow: Workflow | None = None

    @property
    def output(self) -> Any:
        """The run's output (None unless it succeeded within the wait)."""
        return self.workflow.output if self.workflow is not None else None

    @property
    def error(self) -> str:
        """The run's error ("" unless it failed within the wait)."""
        return self.workflow.error if self.workflow is not None else ""


@dataclass(frozen=True)
class Event:
    """One event of a run's history (an SSE message).

    Attributes:
        id: its seq number (1, 2, ...), what ``Last-Event-ID`` resumes after; 0 for the
            ``accepted`` message of ``run(mode="stream")``.
        type: the event's type (``WorkflowAccepted``, ``TaskSucceeded`` ... or
            ``accepted``).
        data: its fields.
    """

    id: int
    type: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        """Whether it ends the run."""
        return self.type in TERMINAL_EVENTS


@dataclass(frozen=True)
class Definition:
    """A stored definition's version (``PUT``/``GET /v1/definitions/...``).

    Attributes:
        name: its name.
        version: its version number (1, 2, ...).
        digest: the SHA-256 (hex) of its body.
        created_at: RFC 3339 time, or None.
        raw: the whole document (``GET`` of one version adds ``workflow``, the spec,
            ``input_schema``, ``latest`` and ``deleted``).
    """

    name: str
    version: int
    digest: str
    created_at: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)


def definition_from(doc: dict[str, Any]) -> Definition:
    """The view of a definition document."""
    return Definition(name=doc["name"], version=int(doc["version"]),
                      digest=doc.get("digest") or "", created_at=doc.get("created_at"),
                      raw=doc)


@dataclass(frozen=True)
class Identity:
    """Who the client's token is, as ``GET /v1/whoami`` says.

    Attributes:
        auth: whether the gateway's auth is on (off: every request is ``*`` ``admin``).
        tenant: the token's tenant; ``*`` is every tenant.
        role: ``read``, ``submit`` or ``admin``.
        subject: the API key's id or the JWT's ``sub`` (``anonymous`` when auth is off).
    """

    auth: bool
    tenant: str
    role: str
    subject: str


def identity_from(doc: dict[str, Any]) -> Identity:
    """The view of ``GET /v1/whoami``'s answer."""
    return Identity(bool(doc["auth"]), str(doc["tenant"]), str(doc["role"]),
                    str(doc["subject"]))


@dataclass(frozen=True)
class Queue:
    """One queue, as ``GET /v1/queues`` shows it.

    Attributes:
        queue: its name.
        backlog: dispatches waiting.
        in_flight: attempts running.
        live_workers: workers announcing themselves.
        state: ``ok``, ``no_live_workers`` or ``full``.
        tasks: the tasks its live workers serve.
        raw: the whole item (``workers``, ``oldest_waiting_s``, ``maxdepth``).
    """

    queue: str
    backlog: int
    in_flight: int
    live_workers: int
    state: str
    tasks: list[str]
    raw: dict[str, Any] = field(repr=False, compare=False)


def queue_from(doc: dict[str, Any]) -> Queue:
    """The view of one item of ``GET /v1/queues``."""
    return Queue(queue=doc["queue"], backlog=int(doc.get("backlog") or 0),
                 in_flight=int(doc.get("in_flight") or 0),
                 live_workers=int(doc.get("live_workers") or 0),
                 state=doc.get("state") or "", tasks=list(doc.get("tasks") or []), raw=doc)


@dataclass(frozen=True)
class SignalFate:
    """What became of a signal (``GET /v1/workflows/{id}/signals/{signal_id}``).

    Attributes:
        workflow_id: the run it was sent to.
        signal_id: its id.
        status: ``received`` (answered 202, not applied yet), ``buffered`` (kept until
            its wait starts), ``consumed``, ``discarded`` or ``refused``.
        node: the wait that consumed it (else None).
        reason: why it was discarded or refused (else None).
        raw: the whole document (``name``, ``index``, ``at``, ``received_at``, ``links``).
    """

    workflow_id: str
    signal_id: str
    status: str
    node: str | None
    reason: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def applied(self) -> bool:
        """Whether the run has applied it (every status but ``received``)."""
        return self.status != "received"

    @property
    def taken(self) -> bool:
        """Whether the run took it (``consumed``, or ``buffered`` for a wait to come)."""
        return self.status in ("consumed", "buffered")


def signal_fate_from(doc: dict[str, Any]) -> SignalFate:
    """The view of ``GET /v1/workflows/{id}/signals/{signal_id}``."""
    return SignalFate(workflow_id=doc["workflow_id"], signal_id=doc["signal_id"],
                      status=doc["status"], node=doc.get("node"), reason=doc.get("reason"),
                      raw=doc)


@dataclass(frozen=True)
class ScheduleApplied:
    """A ``PUT /v1/schedules/{name}``'s answer.

    Attributes:
        name: the schedule's name.
        generation: its live generation (1, 2, ...).
        workflow_id: the generation's workflow, ``schedule:<name>:<generation>``.
        created: True for a new generation (201; the one before it is cancelled), False
            for the same settings as the live one (200).
        raw: the whole answer.
    """

    name: str
    generation: int
    workflow_id: str
    created: bool
    raw: dict[str, Any] = field(repr=False, compare=False)


def schedule_applied_from(doc: dict[str, Any]) -> ScheduleApplied:
    """The view of a ``PUT /v1/schedules/{name}`` answer."""
    return ScheduleApplied(name=doc["name"], generation=int(doc["generation"]),
                           workflow_id=doc["workflow_id"], created=bool(doc["created"]),
                           raw=doc)


@dataclass(frozen=True)
class Schedule:
    """A schedule, as ``GET /v1/schedules[/{name}]`` shows it.

    Attributes:
        name: its name.
        generation: its live generation.
        workflow_id: the generation's workflow (its children are the runs).
        cron: the cron expression (croniter's; 6 fields: seconds last).
        timezone: the IANA zone it is read in.
        definition: the definition each run runs, and its version.
        paused: whether fire times start no run now.
        next_fire_at: the next fire time (RFC 3339), or None (not armed yet).
        last_fire_at: the last fire time, or None.
        last_run_id: the last run started, or None.
        fired: fire times that started a run.
        skipped: fire times skipped (overlap, missed, paused).
        raw: the whole document (the policies, ``input``, ``status``; ``runs``, the
            recent runs, from ``GET`` of one).
    """

    name: str
    generation: int
    workflow_id: str
    cron: str
    timezone: str
    definition: DefinitionRef | None
    paused: bool
    next_fire_at: str | None
    last_fire_at: str | None
    last_run_id: str | None
    fired: int
    skipped: int
    raw: dict[str, Any] = field(repr=False, compare=False)


def schedule_from(doc: dict[str, Any]) -> Schedule:
    """The view of a schedule document."""
    ref = doc.get("definition") or {}
    definition = (DefinitionRef(ref["name"], ref.get("version"))
                  if isinstance(ref, dict) and ref.get("name") else None)
    return Schedule(name=doc["name"], generation=int(doc["generation"]),
                    workflow_id=doc["workflow_id"], cron=doc.get("cron") or "",
                    timezone=doc.get("timezone") or "UTC", definition=definition,
                    paused=bool(doc.get("paused")), next_fire_at=doc.get("next_fire_at"),
                    last_fire_at=doc.get("last_fire_at"), last_run_id=doc.get("last_run_id"),
                    fired=int(doc.get("fired") or 0), skipped=int(doc.get("skipped") or 0),
                    raw=doc)
