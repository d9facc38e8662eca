"""Retention's rules: when an ended workflow may be purged, and what is said of it after.

The coordinator purges a workflow ``HEADWATER_RETENTION_S`` after its last event
(``services/coordinator/retention.py`` holds the sweep that asks for purges and the
table writes of one). What is decided is pure and lives here: a purge request
(``RETENTION_TIMER``) is taken only when ``purge_due``; a purged workflow keeps a
marker (``dump_marker``), and an input for it (``decide.decide`` screens both) is
taken as the ended workflow would have taken it (``after_purge``): a duplicate of its
submission, a late report, timer or cancel change nothing, and so does a copy of a signal
the workflow took (its ``signal_id`` in the marker's filter, ``signal_filter``); any
other signal or another submission under the id is refused with the reason
``refused_after_purge`` gives.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.idempotency import body_hash, parent_link
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus

RETENTION_TIMER = "@retention"
"""The timer id of the ``TimerFired`` that asks for a workflow's purge (no timer of the
state machine starts with ``@``)."""
MARKER_VERSION = 2
"""2: with the digest of the submission (``submission_digest``); 1: without it, so that
every submission for the id is refused. A marker of either may hold ``signals``
(``signal_filter``); one without it knows no signal."""
FILTER_BITS = 128
"""The bits of a marker's signal filter (32 hex digits)."""
FILTER_HASHES = 3
"""The bits each ``signal_id`` sets in it: with 10 ids taken, one more id is taken for
one of them about once in 200 (it then changes nothing instead of being refused)."""


def purge_due(state: WorkflowState | None, at_ms: int, retention_ms: int | None) -> bool:
    """Whether ``state`` may be purged at ``at_ms``: it ended, and ``retention_ms`` have
    passed since its last event (``updated_at_ms``); never when retention is off (None)."""
    return (retention_ms is not None and state is not None and state.status.terminal
            and state.updated_at_ms + retention_ms <= at_ms)


def header_due(header: bytes, at_ms: int, retention_ms: int) -> bool:
    """``purge_due`` read off a raw header entry (``layout.dump_header``) without
    decoding the workflow; False for a header that does not parse."""
    try:
        h = orjson.loads(header)
        return bool(WorkflowStatus(h["status"]).terminal
                    and int(h["updated_at_ms"]) + retention_ms <= at_ms)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return False


def dump_marker(state: WorkflowState, purged_at_ms: int) -> bytes:
    """The marker kept for a purged workflow: how it ended, its last seq, when it was
    last changed and purged (ms since the epoch), and the digest of its submission.
    Bounded (under 250 bytes): no spec, input or output."""
    submission = submission_digest(body_hash(state.spec_doc, state.input, state.tenant),
                                   state.parent)
    doc = {"v": MARKER_VERSION, "status": state.status.value, "seq": state.seq,
           "ended_at_ms": state.updated_at_ms, "purged_at_ms": purged_at_ms,
           "submission": submission, "parent": _digest(state.parent)}
    if state.signal_ids:
        doc["signals"] = signal_filter(state.signal_ids)
    return orjson.dumps(doc)


def _filter_bits(signal_id: str) -> list[int]:
    """The ``FILTER_HASHES`` bits of ``signal_id`` in a signal filter."""
    digest = hashlib.sha256(signal_id.encode()).digest()
    return [int.from_bytes(digest[2 * i:2 * i + 2], "big") % FILTER_BITS
            for i in range(FILTER_HASHES)]


def signal_filter(signal_ids: list[str]) -> str:
    """A Bloom filter of the ``signal_id``s a workflow took, as ``FILTER_BITS // 4`` hex
    digits: bounded whatever the signals, so the marker stays small; it may say a
    signal was taken that was not (then that signal changes nothing instead of being
    dead-lettered), never the reverse."""
    bits = 0
    for signal_id in signal_ids:
        for bit in _filter_bits(signal_id):
            bits |= 1 << bit
    return f"{bits:0{FILTER_BITS // 4}x}"


def took_signal(marker: bytes, signal_id: str) -> bool:
    """Whether the purged workflow of ``marker`` took a signal of ``signal_id`` (by its
    filter, ``signal_filter``); False for an empty id or a marker without a filter."""
    raw = load_marker(marker).get("signals")
    if not signal_id or not isinstance(raw, str):
        return False
    try:
        bits = int(raw, 16)
    except ValueError:
        return False
    return all(bits >> bit & 1 for bit in _filter_bits(signal_id))


def submission_digest(body: str, parent: dict[str, Any] | None) -> str:
    """What names a run in a marker: 128 bits of SHA-256 over its body hash
    (``idempotency.body_hash``) and, for a child, the parent attempt that started it."""
    return _hex_digest({"body": body, "parent": parent})


def same_parent(event: ev.ChildSubmitted, marker: bytes) -> bool:
    """Whether a child submission names the parent attempt the purged workflow was the
    child of: then that attempt already had its child's end, and a refusal fails nothing;
    otherwise the attempt is failed, as before the purge (``conflicts.conflict_report``).
    """
    return load_marker(marker).get("parent") == _digest(parent_link(event))


def _digest(doc: Any) -> str | None:
    """``_hex_digest`` of ``doc``; None for None."""
    return None if doc is None else _hex_digest(doc)


def _hex_digest(doc: Any) -> str:
    """128 bits of SHA-256 (hex) over the canonical JSON of ``doc``."""
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def load_marker(raw: bytes) -> dict[str, Any]:
    """The marker's fields (``dump_marker``); ``{}`` for one that does not parse."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def after_purge(event: ev.Input, marker: bytes) -> str | None:
    """What an input for a purged workflow does: None when it changes nothing, as it
    would have changed nothing in the ended workflow (a duplicate of its submission, a
    late report, timer or cancel, a copy of a signal it took: ``took_signal``), else the
    dead letter's reason (another signal, another submission under the id, any
    submission against a marker of version 1)."""
    if isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted):
        digest = submission_digest(body_hash(event.spec, event.input, event.tenant),
                                   parent_link(event))
        if load_marker(marker).get("submission") == digest:
            return None
        return refused_after_purge(event, marker)
    if isinstance(event, ev.SignalSent):
        return None if took_signal(marker, event.signal_id) else refused_after_purge(
            event, marker)
    return None


def refused_after_purge(event: ev.Input, marker: bytes) -> str:
    """The dead letter's reason for an input to a purged workflow."""
    m = load_marker(marker)
    return (f"{type(event).__name__} for workflow {event.workflow_id} refused: the workflow "
            f"ended ({m.get('status', '?')}, seq {m.get('seq', '?')}) and was purged after "
            "its retention (HEADWATER_RETENTION_S); its id cannot be used again")
