"""The request body of a pause or a resume (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PauseRequest(BaseModel):
    """``POST .../pause`` or ``.../resume``: an optional reason (a pause's, recorded in
    the history) and the sender's ``request_id``: a request whose id the run recorded
    changes nothing, so a sender may retry; none: the gateway makes a random one."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=1000)
    request_id: str | None = Field(default=None, min_length=1, max_length=200)
