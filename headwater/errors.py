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
