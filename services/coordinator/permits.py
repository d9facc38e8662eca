"""The records between attempts held for a permit and their limiters
(docs/architecture.md §4n; the rules are the core's: ``headwater/core/machine/holds.py``
and ``headwater/core/kinds/limiter/``).

A held attempt's ``TaskHeld`` asks its limiter for a permit (``PermitRequested`` on
``control``, keyed by the limiter's id, so its limiter's coordinator applies it whatever
partition the attempt's workflow is on); the end of an attempt of a node with limits
(``TaskSucceeded``, ``TaskFailed``, ``TaskCancelled``, which the core follows with
``PermitsReturned`` naming the limiters the attempt asked) gives each its permit, or
its place in the queue, back (``PermitReleased``; a rate limiter with the units the
attempt reported it used, ``TaskSucceeded.units``); a limiter's
``PermitIssued`` grants the attempt (``PermitGranted`` on ``reports``, keyed by the
attempt's workflow id), and its ``PermitRefused`` (a full queue) refuses it
(``PermitDenied``, the same way). All of them go through the batch's intent with its history, so
a batch carried out again sends them again, and the limiter's and the attempt's rules
take a copy as nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from headwater import codec
from headwater.core import events as ev
from headwater.core.ids import dispatch_id, parse_dispatch_id
from headwater.core.limits import is_rate
from headwater.core.state import WorkflowState
from headwater.topics import Topics


class Permit(NamedTuple):
    """One record to publish: its topic, key, encoded value, and whose record it is."""

    topic: str
    key: bytes
    value: bytes
    workflow_id: str


def permit_records(topics: Topics, body: ev.Body, state: WorkflowState | None,
                   ) -> list[Permit]:
    """The permit records one history event gives rise to (none for most)."""
    wid = body.workflow_id
    if isinstance(body, ev.TaskHeld):
        request = ev.PermitRequested(body.limiter, dispatch_id(wid, body.node, body.index,
                                                               body.attempt),
                                     body.kind, body.key, body.limit, body.window_ms,
                                     body.units, body.at_ms)
        return [Permit(topics.control, body.limiter.encode(), codec.encode(request), wid)]
    if isinstance(body, ev.PermitIssued | ev.PermitRefused):
        return _answer(topics, body)
    if isinstance(body, ev.PermitsReturned):
        ended = dispatch_id(wid, body.node, body.index, body.attempt)
        return [Permit(topics.control, lid.encode(), codec.encode(ev.PermitReleased(
            lid, ended, body.at_ms, units=body.units if is_rate(lid) else None)), wid)
            for lid in body.limiters]
    return []


def _answer(topics: Topics, body: ev.PermitIssued | ev.PermitRefused) -> list[Permit]:
    """A limiter's grant (``PermitGranted``) or refusal (``PermitDenied``) for the
    attempt its holder id names, keyed by that attempt's workflow id."""
    holder = parse_dispatch_id(body.holder)
    if holder is None:
        return []
    hwid, node, index, attempt = holder
    answer: ev.PermitGranted | ev.PermitDenied = (
        ev.PermitGranted(hwid, node, index, attempt, body.workflow_id, body.at_ms)
        if isinstance(body, ev.PermitIssued)
        else ev.PermitDenied(hwid, node, index, attempt, body.workflow_id, body.bound,
                             body.at_ms))
    return [Permit(topics.reports, hwid.encode(), codec.encode(answer), body.workflow_id)]
