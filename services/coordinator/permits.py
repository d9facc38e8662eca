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

from collections.abc import Sequence
from typing import NamedTuple

from headwater import codec
from headwater.core import events as ev
from headwater.core.kinds.limiter.routing import permit_inputs
from headwater.topics import Topics


class Permit(NamedTuple):
    """One record to publish: its topic, key, encoded value, and whose record it is."""

    topic: str
    key: bytes
    value: bytes
    workflow_id: str


ANSWERS = (ev.PermitGranted, ev.PermitDenied, ev.CacheAnswered)
"""The inputs that answer an attempt (on ``reports``, keyed by its workflow id); the
others go to a limiter or a cache (on ``control``, keyed by its id)."""


def permit_records(topics: Topics, body: ev.Body) -> list[Permit]:
    """The permit records one history event gives rise to (none for most)."""
    return routed(topics, body, permit_inputs(body))


def routed(topics: Topics, body: ev.Body, inputs: Sequence[ev.Input]) -> list[Permit]:
    """``body``'s inputs for limiters, caches and attempts as records: each keyed by the
    id of the run that applies it, on ``reports`` when it answers an attempt, else on
    ``control``."""
    return [Permit(topics.reports if isinstance(item, ANSWERS) else topics.control,
                   item.workflow_id.encode(), codec.encode(item), body.workflow_id)
            for item in inputs]
