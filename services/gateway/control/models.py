"""The request bodies of a cancel and a signal (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
