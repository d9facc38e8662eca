"""The request bodies of a pause or a resume (pydantic lives at the HTTP edge only):
each takes only the fields its route uses, so a field the route would drop (a resume's
``reason``, a definition's ``request_id``) is a 422 naming it rather than ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PauseRequest(BaseModel):
    """``POST /v1/workflows/{id}/pause``: an optional reason (recorded in the history)
    and the sender's ``request_id``: a request whose id the run recorded changes
    nothing, so a sender may retry; none: the gateway makes a random one."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=1000)
    request_id: str | None = Field(default=None, min_length=1, max_length=200)


class ResumeRequest(BaseModel):
    """``POST /v1/workflows/{id}/resume``: the sender's ``request_id`` (as a pause's); a
    resume records no reason."""

    model_config = ConfigDict(extra="forbid")

    request_id: str | None = Field(default=None, min_length=1, max_length=200)


class DefinitionPauseRequest(BaseModel):
    """``POST /v1/definitions/{name}/pause``: an optional reason. No ``request_id``: the
    request sent to each run has one derived from the operation and the run."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=1000)


class DefinitionResumeRequest(BaseModel):
    """``POST /v1/definitions/{name}/resume``: no fields (an empty object, or no body)."""

    model_config = ConfigDict(extra="forbid")
