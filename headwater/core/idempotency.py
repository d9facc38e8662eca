"""Idempotent submission: a workflow id names one run, defined by its spec, input and
tenant (and a child workflow by the parent attempt that started it). The same id with
the same body is the same run; with another body it is a conflict that changes nothing
(the gateway answers 409; on Kafka the record goes to the dead-letter topic with the
reason)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.state import WorkflowState


def body_hash(spec: Any, workflow_input: Any, tenant: str | None) -> str:
    """SHA-256 (hex) of the canonical JSON (keys sorted, orjson) of what defines a run.

    Raises:
        TypeError: a value that is not JSON (orjson's ``JSONEncodeError``).
    """
    doc = {"workflow": spec, "input": workflow_input, "tenant": tenant}
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def conflict(state: WorkflowState | None,
             submitted: ev.WorkflowSubmitted | ev.ChildSubmitted) -> str | None:
    """Why ``submitted`` conflicts with the run its id already names, or None when the id
    is new or the body is the same (a duplicate delivery: the same run).

    A ``ChildSubmitted`` is checked the same way, and must come from the parent attempt
    the child is linked to: a child id taken by a workflow of its own, or by another
    parent's child, is a conflict too (its end would be reported to the wrong attempt).

    Args:
        state: the workflow's state (None: unknown id).
        submitted: the submission, or a parent's child workflow.
    """
    if state is None:
        return None
    link = parent_link(submitted)
    if link is not None and state.parent != link:
        return (f"workflow id {submitted.workflow_id} is already used by "
                f"{_started_by(state.parent)}, not by the child workflow of "
                f"{_started_by(link)}; the run is unchanged")
    if submitted.tenant != state.tenant:  # never says whose: only that it is not theirs
        return (f"workflow id {submitted.workflow_id} belongs to another tenant's run; "
                "the run is unchanged")
    theirs = body_hash(submitted.spec, submitted.input, submitted.tenant)
    ours = body_hash(state.spec_doc, state.input, state.tenant)
    if theirs == ours:
        return None
    return (f"workflow id {submitted.workflow_id} is already used by a different submission "
            f"(body sha256 {ours[:16]}..., this one {theirs[:16]}...); the run is unchanged")


def parent_link(submitted: ev.WorkflowSubmitted | ev.ChildSubmitted) -> dict[str, Any] | None:
    """The parent attempt a child's submission links it to (``WorkflowState.parent``);
    None for a workflow of its own."""
    if not isinstance(submitted, ev.ChildSubmitted):
        return None
    return {"workflow_id": submitted.parent_id, "node": submitted.node,
            "index": submitted.index, "attempt": submitted.attempt}


def _started_by(link: dict[str, Any] | None) -> str:
    """Who started a workflow, for a conflict's message."""
    if link is None:
        return "a workflow of its own"
    where = link["node"] if link["index"] is None else f"{link['node']}[{link['index']}]"
    return f"attempt {link['attempt']} of node {where} of {link['workflow_id']}"
