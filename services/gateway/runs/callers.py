"""A submission's ``parent``: the task attempt whose ``ctx.call`` submits the run
(``headwater/core/calls.py``), checked at the edge and kept with the id's claim.

The claim's ``parent_*`` columns hold it from the start, so the run's document names
its parent before its acceptance is projected, and a claim produced again after a crash
(``claims.existing``) carries the same link.
"""

from __future__ import annotations

from typing import Any

from headwater.core.calls import LINK_KEYS, caller_link, link_fault
from services.gateway.edge.problems import Problem


def caller_of(parent: Any) -> dict[str, Any] | None:
    """The link a submission's ``parent`` gives (None: a run of its own).

    Raises:
        Problem: 422 naming the field when it is not ``{"workflow_id", "node", "index",
            "attempt"}`` of an attempt.
    """
    fault = link_fault(parent)
    if fault is None and isinstance(parent, dict) and parent.keys() - LINK_KEYS:
        fault = f"a link has no field {sorted(parent.keys() - LINK_KEYS)[0]!r}"[:200]
    if fault is not None:
        raise Problem(422, "Invalid request", fault, errors=[f"parent: {fault}"])
    return caller_link(parent)


def link_columns(caller: dict[str, Any] | None) -> tuple[Any, ...]:
    """A claim's ``parent_id``, ``parent_node``, ``parent_index`` and
    ``parent_attempt``: the link's, or nulls."""
    if caller is None:
        return None, None, None, None
    return caller["workflow_id"], caller["node"], caller["index"], caller["attempt"]
