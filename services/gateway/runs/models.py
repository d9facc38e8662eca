"""The request body of a submission (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field

from headwater.core.labels import with_labels
from headwater.core.priority import HIGHEST, LOWEST, with_priority
from headwater.topics import WORKFLOW_ID_PATTERN as ID_PATTERN

Priority = Annotated[int, Field(ge=LOWEST, le=HIGHEST, strict=True)] | Literal[
    "low", "normal", "high"]
"""A priority as a body gives it: 0-9, higher first, or a name
(``headwater.core.priority.NAMES``)."""

CACHE_DOC = ("refresh: the run bypasses cache hits: every cached node's attempts compute "
             "and store fresh outputs (docs/architecture.md §4o)")
CacheQuery = Annotated[Literal["refresh"] | None, Query(description=CACHE_DOC)]
"""The ``?cache=`` of a submission (``POST /v1/workflows``, ``POST /v1/run/{name}``, a
rerun and a reset)."""


class SubmitRequest(BaseModel):
    """``POST /v1/workflows``: a spec (``workflow``) and its ``input``.

    ``id`` is the idempotency key: the same id with the same body answers the same run.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, pattern=ID_PATTERN)
    workflow: dict[str, Any] | None = None
    definition: str | None = None
    input: Any = None
    tenant: str | None = Field(default=None, max_length=200)
    queue_anyway: bool = False
    """Queue tasks that no live worker of their queue serves (else 400, ``queues.admission``)."""
    priority: Priority | None = None
    """The run's priority (``headwater.core.priority``): it replaces the spec's (a
    definition's default) in the spec the run records; None keeps the spec's."""

    parent: dict[str, Any] | None = None
    """The task attempt whose ``ctx.call`` submits the run (``{"workflow_id", "node",
    "index", "attempt"}``, ``headwater/core/calls.py``): the run is that workflow's
    child, cancelled when it ends; None for a run of its own. Not part of the run's
    identity: a retried attempt's call with the same id is the same run."""
    labels: dict[str, str] | None = None
    """The run's labels (``headwater.core.labels``), merged over the spec's (a
    definition's) key by key in the spec the run records; checked with the spec."""

    def prioritized(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` (a spec, or ``{"definition": ref}``) with this request's priority and
        labels set in it (``core.priority.with_priority``, ``core.labels.with_labels``),
        or as it is without them."""
        doc = doc if self.priority is None else with_priority(doc, self.priority)
        return with_labels(doc, self.labels) if self.labels else doc
