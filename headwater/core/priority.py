"""Priorities: how urgent a run's dispatches are, among those waiting for a queue.

A run has a priority, an integer from ``LOWEST`` (0) to ``HIGHEST`` (9), higher first,
``DEFAULT`` (5) when nothing says otherwise; ``low``, ``normal`` and ``high`` stand for
``NAMES``' numbers. It is a field of the workflow's spec document (``priority``, top
level): a definition's spec gives its default, a submission's ``priority`` replaces it
in the spec the run records (the gateway writes it there, as it writes the queues it
places), a schedule's is written into the spec of each run it starts, and a child
workflow whose spec gives none runs at its parent's (``inherited``). So the priority is
in the history (``WorkflowAccepted.spec``) and a replay routes every dispatch as the
first fold did.

Each priority is a *band*: the coordinator sends the dispatches of a run at the default
band to its queue's topic as ever, and those of any other band to the queue's topic of
that band (``headwater.topics.Topics.priority``). A worker reads every band of its
queue and, when a slot frees, takes the waiting dispatch of the highest
``effective`` priority: its band plus one for each ``aging_s`` it has waited, so a low
one waiting long enough beats a high one just sent, and none waits for ever.
Pure, as the core is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOWEST = 0
"""The lowest priority."""
HIGHEST = 9
"""The highest priority."""
DEFAULT = 5
"""The priority of a run whose spec, submission and parent give none: its dispatches go
to the queue's topic (``Topics.tasks``), as before priorities existed."""
NAMES: Mapping[str, int] = {"low": 2, "normal": DEFAULT, "high": 8}
"""Names a priority may be given by, and the number each stands for (leaving room on
either side: 0-1 below ``low``, 9 above ``high``)."""
KEY = "priority"
"""The spec's top-level field (and the submission's, the schedule's)."""
BANDS = tuple(b for b in range(LOWEST, HIGHEST + 1) if b != DEFAULT)
"""The priorities whose dispatches have topics of their own (every one but the
default)."""


def priority_fault(value: Any) -> str | None:
    """What is wrong with ``value`` as a priority; None for an integer from ``LOWEST``
    to ``HIGHEST`` or one of ``NAMES``."""
    if type(value) is int and LOWEST <= value <= HIGHEST:
        return None
    if isinstance(value, str) and value in NAMES:
        return None
    names = ", ".join(NAMES)
    return (f"priority: {repr(value)[:80]} is no priority: an integer from {LOWEST} to "
            f"{HIGHEST} (higher first) or one of {names}")


def as_number(value: Any) -> int:
    """The number ``value`` stands for (a valid priority: ``priority_fault`` is None).

    Raises:
        ValueError: ``value`` is no priority.
    """
    fault = priority_fault(value)
    if fault is not None:
        raise ValueError(fault)
    return NAMES[value] if isinstance(value, str) else int(value)


def parse_priority(doc: Mapping[str, Any], faults: list[str]) -> int:
    """A spec document's priority: its ``priority`` field, ``DEFAULT`` without one.

    Args:
        doc: the spec document (a mapping).
        faults: a fault is appended here when the field is no priority.

    Returns:
        The number, ``DEFAULT`` when missing or invalid.
    """
    raw = doc.get(KEY)
    if raw is None:
        return DEFAULT
    fault = priority_fault(raw)
    if fault is not None:
        faults.append(fault)
        return DEFAULT
    return as_number(raw)


def with_priority(doc: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """The spec document ``doc`` with its priority set to ``value`` (a valid priority,
    written as its number); ``doc`` itself (a copy) when ``value`` is None."""
    if value is None:
        return dict(doc)
    return {**doc, KEY: as_number(value)}


def inherited(child_doc: Any, parent: int) -> Any:
    """A child workflow's spec document as submitted by a parent of priority ``parent``:
    with the parent's priority when the child's spec gives none (its definition's
    default or a priority set on it wins), unchanged at the default (so children of
    runs without priorities are submitted as before)."""
    if parent == DEFAULT or not isinstance(child_doc, Mapping) or KEY in child_doc:
        return child_doc
    return {**child_doc, KEY: parent}


def effective(band: int, waited_ms: int, aging_s: float) -> float:
    """The priority a dispatch waiting for a slot is taken by: its band plus one for
    each ``aging_s`` it has waited (``waited_ms``, negative counted as 0).

    Args:
        band: its run's priority.
        waited_ms: how long it has waited, milliseconds.
        aging_s: the wait worth one band, seconds (> 0).
    """
    return band + max(0, waited_ms) / 1000 / aging_s
