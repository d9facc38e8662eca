"""The one exception tree of Headwater. Every class says when it is raised."""

from __future__ import annotations


class HeadwaterError(Exception):
    """Base class of every error Headwater raises on purpose."""


class SpecError(HeadwaterError):
    """Raised when a workflow spec is invalid.

    Carries every fault found, not only the first, so that a user fixes a spec in one pass.

    Attributes:
        faults: one human-readable message per fault, e.g. ``"cycle: a -> b -> a"``.
    """

    def __init__(self, faults: list[str]) -> None:
        super().__init__("; ".join(faults))
        self.faults = faults


class DecodeError(HeadwaterError):
    """Raised when bytes from Kafka cannot be decoded into a record.

    Covers garbage bytes, a missing or unknown single-object header, an unknown schema
    fingerprint and a body that does not match its schema. The original error is chained.
    """


class InputReferenceError(HeadwaterError):
    """Raised when an input reference (``${...}``) cannot be resolved at run time."""


class TaskRegistrationError(HeadwaterError):
    """Raised at decoration time when ``@task`` is given bad options."""


class NonRetryableError(HeadwaterError):
    """Raised by task code to fail the attempt without further retries."""


class TaskNotFoundError(HeadwaterError):
    """Raised by a worker when a dispatch names a task that is not registered."""


class AttemptCancelled(HeadwaterError):
    """Raised by ``TaskContext`` calls (``progress``, ``checkpoint``, ``heartbeat``) once
    the running attempt must stop: the coordinator cancelled it, it timed out, or the
    worker is stopping.

    Its outcome is no longer wanted (none is reported for a cancelled attempt), so task
    code should let it propagate; catching it only delays freeing the worker's slot.
    """


class HeadwaterHTTPError(HeadwaterError):
    """Raised by ``headwater.client`` when the gateway answers an error: its problem
    document (RFC 9457, ``application/problem+json``) mapped to a subclass by status.

    Attributes:
        status: the HTTP status code.
        type: the problem's ``type`` (``urn:headwater:problem:<slug>`` for the gateway's
            own; ``about:blank`` when absent).
        title: the problem's ``title`` (the same for every problem of its kind).
        detail: the problem's ``detail`` (what went wrong this time), or "".
        body: the whole problem document (extension members such as ``errors``), or
            ``{}`` when the answer was not JSON.
    """

    def __init__(self, status: int, type: str = "about:blank", title: str = "",
                 detail: str = "", body: dict[str, object] | None = None) -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status, self.type, self.title, self.detail = status, type, title, detail
        self.body = body or {}


class BadRequest(HeadwaterHTTPError):
    """400: a malformed header, cursor or query, or a signal no wait takes."""


class Unauthorized(HeadwaterHTTPError):
    """401: no token, or one the gateway does not take (malformed, unknown, revoked or
    expired), while its auth is on. Not retried: set ``HEADWATER_TOKEN`` or pass the
    client a ``token`` (``headwater keys create`` makes an API key)."""


class Forbidden(HeadwaterHTTPError):
    """403: the token's role does not allow the call (``body["role"]`` and
    ``body["needs"]`` say which it has and which it needs), or the body names another
    tenant than the token's. Not retried."""


class NotFound(HeadwaterHTTPError):
    """404: no such workflow or definition."""


class Conflict(HeadwaterHTTPError):
    """409: the id is taken by another body, or the workflow has already ended."""


class Gone(HeadwaterHTTPError):
    """410: the definition was deleted (no new runs)."""


class Unprocessable(HeadwaterHTTPError):
    """422: an invalid body or query; ``body["errors"]`` names every fault."""


class TooManyRequests(HeadwaterHTTPError):
    """429: a queue is full.

    Attributes:
        retry_after: the seconds the gateway asks to wait (``Retry-After``), or None.
    """

    def __init__(self, status: int, type: str = "about:blank", title: str = "",
                 detail: str = "", body: dict[str, object] | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(status, type, title, detail, body)
        self.retry_after = retry_after


class Unavailable(HeadwaterHTTPError):
    """503: Kafka or PostgreSQL unavailable, the gateway still connecting or stopping
    (raised once the client's retries are spent)."""


class UnexpectedAnswer(HeadwaterError):
    """Raised by ``headwater.client`` when a 2xx answer is not what the API says (not
    JSON, or not the document the method reads): the gateway is not one, or is not
    this client's version. The decoding error is chained.

    Attributes:
        status: the answer's HTTP status code.
    """

    def __init__(self, method: str, path: str, status: int, why: str) -> None:
        super().__init__(f"{method} {path}: the {status} answer is not what the API says "
                         f"({why})")
        self.status = status


class GatewayUnreachable(HeadwaterError, ConnectionError):
    """Raised by ``headwater.client`` when no connection to the gateway could be made (or
    kept) within its retries; the transport's error is chained."""


class TaskFailure:
    """What failed a run (its document's ``failure``): the attempt, or the node when no
    attempt failed it (``index`` and ``attempt`` None then). Compared by value.

    Attributes:
        node: the node that failed.
        index: its task's index (a map item's), or None.
        attempt: the attempt number, or None.
        error_type: the exception's class name ("" when none).
        message: the error message.
        traceback: the traceback as the worker formatted it, task code's frames first
            ("" when there is none: a timeout, a lost worker, a child run's failure).
    """

    __slots__ = ("attempt", "error_type", "index", "message", "node", "traceback")

    def __init__(self, node: str, index: int | None, attempt: int | None, error_type: str,
                 message: str, traceback: str) -> None:
        self.node, self.index, self.attempt = node, index, attempt
        self.error_type, self.message, self.traceback = error_type, message, traceback

    def _fields(self) -> tuple[object, ...]:
        return (self.node, self.index, self.attempt, self.error_type, self.message,
                self.traceback)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaskFailure) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"TaskFailure(node={self.node!r}, index={self.index!r}, "
                f"attempt={self.attempt!r}, error_type={self.error_type!r}, "
                f"message={self.message!r}, traceback=<{len(self.traceback)} characters>)")

    @classmethod
    def from_document(cls, doc: object) -> TaskFailure | None:
        """The failure of a run document's ``failure`` object; None for anything else."""
        if not isinstance(doc, dict):
            return None
        index, attempt = doc.get("index"), doc.get("attempt")
        return cls(str(doc.get("node") or ""), index if isinstance(index, int) else None,
                   attempt if isinstance(attempt, int) else None,
                   str(doc.get("error_type") or ""), str(doc.get("message") or ""),
                   str(doc.get("traceback") or ""))

    def last_lines(self, count: int = 8) -> str:
        """The traceback's last ``count`` lines: the innermost frames and the error."""
        return "\n".join(self.traceback.rstrip("\n").splitlines()[-count:])


class WorkflowFailed(HeadwaterError):
    """Raised by ``headwater.client`` (``result``, and ``calls``) for a run that failed.

    Its message ends with the last lines of the failing attempt's traceback, when the
    run's document has one.

    Attributes:
        workflow_id: the run.
        error: its error, as ``GET /v1/workflows/{id}`` shows it.
        failure: the attempt (or node) that failed it, its error type, message and
            traceback; None when the document names none (a run refused at submission).
    """

    def __init__(self, workflow_id: str, error: str,
                 failure: TaskFailure | None = None) -> None:
        tail = failure.last_lines() if failure is not None and failure.traceback else ""
        super().__init__(f"workflow {workflow_id} failed: {error}"
                         + (f"\n{tail}" if tail else ""))
        self.workflow_id, self.error, self.failure = workflow_id, error, failure


class WorkflowCancelled(HeadwaterError):
    """Raised by ``headwater.client`` (``result``, ``run``) for a run that was cancelled.

    Attributes:
        workflow_id: the run.
        reason: the cancel's reason (its ``error``), or "".
    """

    def __init__(self, workflow_id: str, reason: str = "") -> None:
        super().__init__(f"workflow {workflow_id} was cancelled" + (f": {reason}" if reason
                                                                     else ""))
        self.workflow_id, self.reason = workflow_id, reason


class ResultTimeout(HeadwaterError, TimeoutError):
    """Raised by ``headwater.client`` ``result`` when the run has not ended within its
    ``timeout`` (the run goes on).

    Attributes:
        workflow_id: the run.
    """

    def __init__(self, workflow_id: str, timeout_s: float) -> None:
        super().__init__(f"workflow {workflow_id} has not ended within {timeout_s:g} s")
        self.workflow_id = workflow_id


class CallFailed(NonRetryableError):
    """Raised by ``TaskContext.call`` (and its kin) when a child run ended other than
    succeeded. Not retried: another attempt finds the same child (its id does not
    depend on the attempt), which has ended the same way.

    Attributes:
        workflow_id: the child run.
        status: how it ended (``failed`` or ``cancelled``).
        error: its error or the cancel's reason.
    """

    def __init__(self, workflow_id: str, status: str, error: str) -> None:
        super().__init__(f"child run {workflow_id} {status}: {error}")
        self.workflow_id, self.status, self.error = workflow_id, status, error


class CallRefused(NonRetryableError):
    """Raised by ``TaskContext.call`` (and its kin) when the gateway refuses a child run
    for good: an unknown definition or version (404), a deleted definition (410), or an
    input or name it does not take (422). Not retried: another attempt would be refused
    the same way.

    Attributes:
        definition: the reference called (``name`` or ``name@3``).
        status: the gateway's HTTP status.
        detail: its problem's ``detail``.
    """

    def __init__(self, definition: str, status: int, detail: str) -> None:
        super().__init__(f"call of {definition!r} refused ({status}): {detail}")
        self.definition, self.status, self.detail = definition, status, detail


class WorkflowRegistrationError(HeadwaterError):
    """A ``@workflow`` that cannot be registered: an unknown option, a bad name or
    queue, a function that is not ``async def f(wf, ...)``, a name taken by another
    function. Raised at decoration time."""


class StepFailed(HeadwaterError):
    """What ``await`` raises in a ``@workflow`` when a step failed for good: its task's
    last attempt failed, its child workflow failed, its signal wait timed out.

    Attributes:
        step: the step's number in the run (from 0, in the order the function issued
            its steps).
        error_type: the failure's type (the task's exception class, ``TimeoutError``,
            ``ChildWorkflowFailed``, ``Cancelled`` ...).
        attempts: how many attempts it took.
        where: what the step was and its task's key in the run (``task pkg.fetch,
            main[5]``: ``headwater task RUN main 5`` shows its attempts and traceback);
            "" when not known.
    """

    def __init__(self, step: int, error_type: str, message: str, attempts: int = 0,
                 where: str = "") -> None:
        super().__init__(f"step {step}{f' ({where})' if where else ''}: {error_type}: "
                         f"{message}")
        self.step = step
        self.error_type = error_type
        self.message = message
        self.attempts = attempts
        self.where = where


class NondeterminismError(HeadwaterError):
    """A ``@workflow`` run again over its history did not do what the history says it
    did: it issued another step (or none) where the history has one. The run is not
    failed: its activation is retried until code that decides as before is deployed.

    Attributes:
        step: the step where the code and the history part.
        recorded: what the history has there (``"task pkg.a"``; ``""``: nothing).
        new: what the code does there (``""``: nothing).
    """

    def __init__(self, step: int, recorded: str, new: str) -> None:
        super().__init__(f"nondeterministic at step {step}: the history has "
                         f"{recorded or 'no step'}, the code now issues {new or 'no step'}")
        self.step = step
        self.recorded = recorded
        self.new = new
