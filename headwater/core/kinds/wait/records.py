"""The ``wait`` kind's records: its spec fields (``WaitSpec``) and its events.

Input: ``SignalSent`` (on ``control``), recorded in the history once a running workflow
takes it; history: ``WaitStarted``, ``SignalConsumed``, ``SignalDiscarded``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SIGNAL_FIELD_TYPES = ("string", "number", "integer", "boolean", "object", "array", "any")
"""The types a wait's signal fields may declare (JSON Schema's names; ``any``: all)."""


@dataclass(frozen=True)
class SignalField:
    """One declared field of a signal: ``type`` is one of ``SIGNAL_FIELD_TYPES``."""

    name: str
    type: str
    required: bool = True


@dataclass(frozen=True)
class WaitSpec:
    """A wait node: the signal it waits for (named like a node id) and the fields that
    signal must carry. Its timeout is the node's ``timeout``."""

    signal: str
    fields: tuple[SignalField, ...] = ()


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
