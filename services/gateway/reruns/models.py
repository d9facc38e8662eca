"""The request bodies of a rerun and a reset (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from headwater.topics import WORKFLOW_ID_PATTERN as ID_PATTERN


class RerunRequest(BaseModel):
    """``POST /v1/workflows/{id}/rerun``: the new run's ``id`` (the idempotency key: the
    same id and body again answer the same run; none: the gateway makes one) and its
    ``input`` (left out: the source's)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, pattern=ID_PATTERN)
    input: Any = None

    @property
    def new_input(self) -> tuple[bool, Any]:
        """Whether the body gave an input (``null`` included), and that input."""
        return "input" in self.model_fields_set, self.input


class ResetRequest(RerunRequest):
    """``POST /v1/workflows/{id}/reset``: a rerun that runs ``node`` and everything
    downstream of it again, whatever their outcome in the source; for a code workflow
    ``main:<step>`` runs its function again reusing the steps before ``step``."""

    node: str = Field(min_length=1, max_length=200)
