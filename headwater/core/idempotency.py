"""Idempotent submission: a workflow id names one run, defined by its spec, input and
tenant. The same id with the same body is the same run; with another body it is a
conflict that changes nothing (the gateway answers 409; on Kafka the record goes to the
dead-letter topic with the reason)."""

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


def conflict(state: WorkflowState | None, submitted: ev.WorkflowSubmitted) -> str | None:
    """Why ``submitted`` conflicts with the run its id already names, or None when the id
    is new or the body is the same (a duplicate delivery: the same run).

    Args:
        state: the workflow's state (None: unknown id).
        submitted: the submission.
    """
    if state is None:
        return None
    theirs = body_hash(submitted.spec, submitted.input, submitted.tenant)
    ours = body_hash(state.spec_doc, state.input, state.tenant)
    if theirs == ours:
        return None
    return (f"workflow id {submitted.workflow_id} is already used by a different submission "
            f"(body sha256 {ours[:16]}..., this one {theirs[:16]}...); the run is unchanged")
