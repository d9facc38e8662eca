"""One record of a trigger's topic made into what its run is: whether it starts one
(the filter), its run id and its input. Pure: the runner (``runner.py``) checks the input
against the definition and produces the submission.

Run ids are derived from the record alone, so a record read twice (a consumer's
restart, a rebalance, a coordinator's crash before the offsets were committed) gives the
same submission, which the coordinator answers as the run it already has. By default
the id is ``trigger:<name>:<topic>:<partition>:<offset>`` (with the tenant's digest
after the name when the trigger has a tenant, so that two tenants' triggers of one name
on one topic never share ids); one longer than a workflow id may be
(``WORKFLOW_ID_PATTERN``: 200 characters) holds the digest of the topic instead.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.triggers.formats import view
from services.gateway.triggers.settings import TriggerSettings
from services.gateway.triggers.templates import MappingError, at_pointer, interpolate, render

_WORKFLOW_ID = re.compile(WORKFLOW_ID_PATTERN)
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class Mapped:
    """A record that starts a run.

    Attributes:
        run_id: the run's id.
        input: the run's input.
    """

    run_id: str
    input: Any


def _digest(text: str, chars: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:chars]


def default_id(settings: TriggerSettings, topic: str, partition: int, offset: int) -> str:
    """The run id of a record when the trigger names none (the module's docstring)."""
    owner = settings.name if settings.tenant is None else (
        f"{settings.name}:{_digest(settings.tenant, 8)}")
    run_id = f"trigger:{owner}:{topic}:{partition}:{offset}"
    if len(run_id) <= MAX_ID_CHARS:
        return run_id
    return f"trigger:{owner}:{_digest(topic, 32)}:{partition}:{offset}"


def matches(settings: TriggerSettings, record_view: dict[str, Any]) -> bool:
    """Whether a record meets every equality of the trigger's filter (a part the record
    lacks meets none)."""
    for equality in settings.filter:
        found, value = at_pointer(record_view, equality.pointer)
        if not found or not _equal(value, equality.equals):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 equals 1.0 (numbers), but true is not 1 nor "1" 1."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if number(a) and number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def map_record(settings: TriggerSettings, record: Any) -> Mapped | None:
    """What run a Kafka record (an aiokafka ``ConsumerRecord``) starts.

    Returns:
        The run's id and input, or None when the filter passes the record by.

    Raises:
        MappingError: the record cannot be read or mapped, named: its value is not of
            the trigger's format, a reference names what it lacks, or the id is not a
            workflow id.
    """
    record_view = view(settings, record)
    if not matches(settings, record_view):
        return None
    try:
        workflow_input = render(settings.input, record_view)
    except MappingError as e:
        raise MappingError(f"input: {e}") from e
    if settings.id is None:
        return Mapped(default_id(settings, record.topic, record.partition, record.offset),
                      workflow_input)
    try:
        run_id = interpolate(settings.id, record_view)
    except MappingError as e:
        raise MappingError(f"id: {e}") from e
    if not _WORKFLOW_ID.fullmatch(run_id):
        raise MappingError(f"id: {run_id[:210]!r} is not a workflow id (1-200 letters, "
                           "digits and _.:- starting with a letter or digit)")
    return Mapped(run_id, workflow_input)
