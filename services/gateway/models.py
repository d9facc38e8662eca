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
    queue_anyway: bool = False
    """Queue tasks that no live worker of their queue serves (else 400, ``admission``)."""


class CancelRequest(BaseModel):
    """``POST /v1/workflows/{id}/cancel``: an optional reason, recorded in the history."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=1000)


MAX_INDEX = 2**31 - 1
"""The largest map item index (an Avro ``int``)."""


class SignalRequest(BaseModel):
    """``POST /v1/workflows/{id}/signals/{name}``: a signal's ``fields``, for the wait
    node declaring ``signal: <name>`` (its item ``index`` for a wait with ``over``).

    ``signal_id`` is the sender's id for the signal: another with an id already recorded
    changes nothing, so a sender may retry; none: the gateway makes a random one.
    """

    model_config = ConfigDict(extra="forbid")

    signal_id: str | None = Field(default=None, min_length=1, max_length=200)
    index: int | None = Field(default=None, ge=0, le=MAX_INDEX, strict=True)
    fields: dict[str, Any]


class DefinitionRequest(BaseModel):
    """``PUT /v1/definitions/{name}``: a workflow spec (``workflow``) and, optionally, the
    JSON Schema its input must match (``input_schema``). A bare spec (a document with
    ``nodes`` and no ``workflow``) is taken as ``{"workflow": <it>}``."""

    model_config = ConfigDict(extra="forbid")

    workflow: dict[str, Any]
    input_schema: dict[str, Any] | None = None
