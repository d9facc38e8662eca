"""Bulk operations: one action (cancel, signal, rerun, ...) done to every run a filter
matched, recorded as one operation with its progress and result counts.

An operation is a record on the compacted ``operations`` topic (``OperationRecorded``,
keyed by its id), written when it starts and again after each batch of targets: the
targets (the run ids the filter matched when it started, oldest first), how far the
gateway got (``next``: the index of the first target not acted on yet) and what came of
each so far (``counts``, and the reasons of the failed and skipped ones). A gateway that
dies mid-way leaves it ``running``; another (or it, restarted) takes it over and goes on
from ``next``. The targets between the last record and the crash are acted on again,
which is safe because every action is idempotent per target: a cancel carries the
operation in its reason and is not sent to a run that ended, a signal has the same
``signal_id`` for every send (the coordinator records one), a rerun has an id derived
from the operation and its source (the same id and body answer the same run).

Pure: the record, its states, and the ids and counts of an operation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MAX_TARGETS = 5000
"""The most runs one operation acts on: a filter matching more is refused (narrow it,
or run several operations), so that its record stays well under Kafka's record size."""
SAMPLE = 10
"""How many of the matched run ids a dry run (and an operation's document) shows."""
MAX_REASONS = 100
"""How many failed (and skipped) targets an operation keeps with their reason; the
counts cover every target."""


class OperationState(StrEnum):
    """Where an operation is."""

    RUNNING = "running"  # targets left to act on: a gateway is working through them
    DONE = "done"  # every target acted on, skipped or failed: the counts are final


class Outcome(StrEnum):
    """What came of one target."""

    DONE = "done"  # the action was sent (or had been, by an earlier send of this operation)
    SKIPPED = "skipped"  # nothing to do: the run had ended (a cancel, a signal) or not (a rerun)
    FAILED = "failed"  # refused: the reason is kept (no such wait, a conflict, ...)


@dataclass(frozen=True)
class OperationRecorded:
    """The record of an operation on the ``operations`` topic (compacted, key: its id).

    ``operation`` is its JSON document (``Progress.document``): the action and its
    arguments, the filter, the targets, ``next``, the counts and the reasons.
    """

    operation_id: str
    at_ms: int
    state: str
    operation: Any
    tenant: str | None = None


@dataclass
class Progress:
    """An operation as it goes: what it does, to which runs, how far, with what results.

    Attributes:
        operation_id: its id (``op-<hex>``, or the caller's).
        action: a key of the gateway's action table (``cancel``, ``signal``, ...).
        args: the action's arguments (a signal's name and fields, a reason, ...).
        filter: the filter that matched the targets, as given (shown, not applied again).
        targets: the run ids matched when it started, oldest first.
        tenant: the tenant it acts for (None: every tenant's runs).
        created_ms: when it started, ms since the epoch.
        next: the index in ``targets`` of the first one not acted on yet.
        counts: ``done``, ``skipped`` and ``failed`` so far.
        reasons: up to ``MAX_REASONS`` ``{"id", "outcome", "reason"}`` of the targets
            skipped or failed.
    """

    operation_id: str
    action: str
    args: dict[str, Any]
    filter: dict[str, Any]
    targets: list[str]
    tenant: str | None
    created_ms: int
    next: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    reasons: list[dict[str, str]] = field(default_factory=list)

    @property
    def state(self) -> OperationState:
        """Running while targets are left, done after the last."""
        return OperationState.DONE if self.next >= len(self.targets) else OperationState.RUNNING

    def count(self, target: str, outcome: Outcome, reason: str = "") -> None:
        """Count what came of ``target`` (the one at ``next``) and move on past it."""
        self.counts[outcome.value] += 1
        if outcome is not Outcome.DONE and len(self.reasons) < MAX_REASONS:
            self.reasons.append({"id": target, "outcome": outcome.value, "reason": reason})
        self.next += 1

    def document(self) -> dict[str, Any]:
        """The JSON document the record carries (``OperationRecorded.operation``)."""
        return {"action": self.action, "args": self.args, "filter": self.filter,
                "targets": self.targets, "tenant": self.tenant,
                "created_ms": self.created_ms, "next": self.next, "counts": self.counts,
                "reasons": self.reasons}

    def record(self, at_ms: int) -> OperationRecorded:
        """The record of the operation as it is now."""
        return OperationRecorded(self.operation_id, at_ms, self.state.value, self.document(),
                                 self.tenant)

    @classmethod
    def from_record(cls, record: OperationRecorded) -> Progress:
        """The progress a record holds (to go on from ``next``)."""
        doc = record.operation
        return cls(record.operation_id, doc["action"], doc["args"], doc["filter"],
                   list(doc["targets"]), doc.get("tenant"), int(doc["created_ms"]),
                   int(doc["next"]), dict(doc["counts"]), list(doc["reasons"]))


def cancel_reason(operation_id: str, reason: str) -> str:
    """The reason a cancel of operation ``operation_id`` records in each run's history:
    it names the operation, so that a run it cancelled is told from one that ended
    otherwise when a gateway goes on after a crash."""
    return f"bulk operation {operation_id}" + (f": {reason}" if reason else "")


def signal_id(operation_id: str) -> str:
    """The ``signal_id`` of every signal of operation ``operation_id``: one per run (ids
    are per workflow), so a signal sent again is recorded once."""
    return f"op.{operation_id}"[:200]


def pause_request_id(operation_id: str, pause: bool) -> str:
    """The ``request_id`` of operation ``operation_id``'s pause (or resume) of each run:
    the run records it once, so a request sent again after a crash changes nothing."""
    return f"op.{operation_id}.{'pause' if pause else 'resume'}"[:200]


def rerun_id(operation_id: str, source: str) -> str:
    """The id of the rerun of ``source`` that operation ``operation_id`` starts: derived
    from both, so a rerun asked again is the same run (``rerun-<24 hex>``)."""
    digest = hashlib.sha256(f"{operation_id}\0{source}".encode()).hexdigest()[:24]
    return f"rerun-{digest}"
