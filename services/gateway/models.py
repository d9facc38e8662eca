"""HTTP request bodies (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from headwater.topics import WORKFLOW_ID_PATTERN as ID_PATTERN


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


class CancelRequest(BaseModel):
    """``POST /v1/workflows/{id}/cancel``: an optional reason, recorded in the history."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=1000)
