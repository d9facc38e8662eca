"""The records of the node kinds beyond tasks and maps: signals and waits, sleeps,
conditions, child workflows, loops and schedules (re-exported by ``headwater.core.events``, whose
rules they follow: frozen, past tense for history, times in ms since the Unix epoch).

Inputs: ``SignalSent`` (on ``control``) and ``ChildSubmitted`` (on ``submissions``).
History: the others, and ``SignalSent`` itself once a running workflow takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SignalSent:
    """A signal for a ``wait`` node (the gateway, or any producer on ``control``).

    Attributes:
        name: the signal a wait node declares (``signal:``).
        index: the map item whose wait it is for, or None for a plain wait node.
        signal_id: the sender's id for it: a second signal with an id already recorded
            changes nothing (at-least-once senders); ``""``: no such check.
        fields: the signal's fields (a JSON object), the wait node's output.
    """

    workflow_id: str
    name: str
    at_ms: int
    index: int | None = None
    signal_id: str = ""
    fields: Any = None


@dataclass(frozen=True)
class ChildSubmitted:
    """A child workflow, started by attempt ``attempt`` of the ``workflow`` node ``node``
    (item ``index``) of workflow ``parent_id`` (the parent's coordinator, on
    ``submissions``, keyed by the child's id ``ids.child_id``). ``definition`` and
    ``definition_version`` name the registered definition the node's inline spec was
    resolved from (its ``ChildSpec``), or None."""

    workflow_id: str
    parent_id: str
    node: str
    index: int | None
    attempt: int
    spec: Any
    input: Any
    at_ms: int
    tenant: str | None = None
    definition: str | None = None
    definition_version: int | None = None


@dataclass(frozen=True)
class ParentLinked:
    """History: the workflow is the child of attempt ``attempt`` of node ``node`` (item
    ``index``) of ``parent_id``; its end is reported to that attempt."""

    workflow_id: str
    parent_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class WaitStarted:
    """History: a ``wait`` node (or its item ``index``) waits for ``signal``, until
    ``timeout_at_ms`` (ms since the epoch) or for ever (None)."""

    workflow_id: str
    node: str
    index: int | None
    signal: str
    at_ms: int
    timeout_at_ms: int | None = None


@dataclass(frozen=True)
class SignalConsumed:
    """History: a waiting node (item ``index``) took the signal ``signal_id``; its
    ``fields`` are the node's (the item's) output."""

    workflow_id: str
    node: str
    index: int | None
    name: str
    signal_id: str
    at_ms: int
    fields: Any = None


@dataclass(frozen=True)
class SignalDiscarded:
    """History: a signal that came after its wait had ended (timed out, took another
    signal, was cancelled) changed nothing."""

    workflow_id: str
    name: str
    index: int | None
    signal_id: str
    at_ms: int
    reason: str = ""


@dataclass(frozen=True)
class SleepStarted:
    """History: a ``sleep`` node sleeps until ``wake_at_ms`` (ms since the epoch)."""

    workflow_id: str
    node: str
    at_ms: int
    wake_at_ms: int


@dataclass(frozen=True)
class ConditionEvaluated:
    """History: a node's ``when`` condition gave ``value``; false skips the node."""

    workflow_id: str
    node: str
    at_ms: int
    value: bool = True


@dataclass(frozen=True)
class LoopStepDecided:
    """History: step ``step`` (0-based) of a ``loop`` node was decided: call ``tool``
    with ``input``, or (``finish``) end the loop with ``output``. ``spend`` is what the
    decision reported against the loop's ``budget``."""

    workflow_id: str
    node: str
    step: int
    at_ms: int
    tool: str = ""
    input: Any = None
    finish: bool = False
    output: Any = None
    spend: float = 0.0



@dataclass(frozen=True)
class ScheduleArmed:
    """History: a ``schedule`` node's next fire time is ``fire_ms`` (ms since the
    epoch): its timer ``schedule:<node>`` is armed for then."""

    workflow_id: str
    node: str
    at_ms: int
    fire_ms: int


@dataclass(frozen=True)
class ScheduleFired:
    """History: the fire time ``fire_ms`` of a ``schedule`` node came due. ``outcome``
    is ``started`` (its run, the child workflow ``run_id``, was dispatched with this
    step), ``skipped_overlap`` (an earlier run still ran), ``skipped_missed`` (its timer
    fired more than ``misfire_grace`` after it, and the catch-up policy did not run it)
    or ``skipped_paused``."""

    workflow_id: str
    node: str
    at_ms: int
    fire_ms: int
    outcome: str
    run_id: str | None = None


@dataclass(frozen=True)
class SchedulePaused:
    """History: a ``pause`` signal (``signal_id``, or ``""``) paused the schedule node."""

    workflow_id: str
    node: str
    at_ms: int
    signal_id: str = ""


@dataclass(frozen=True)
class ScheduleResumed:
    """History: a ``resume`` signal (``signal_id``, or ``""``) resumed the schedule node;
    a ``ScheduleArmed`` for its next fire time after now follows."""

    workflow_id: str
    node: str
    at_ms: int
    signal_id: str = ""
