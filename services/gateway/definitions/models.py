"""The request body of a definition (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DefinitionRequest(BaseModel):
    """``PUT /v1/definitions/{name}``: a workflow spec (``workflow``) and, optionally, the
    JSON Schema its input must match (``input_schema``). A bare spec (a document with
    ``nodes`` and no ``workflow``) is taken as ``{"workflow": <it>}``."""

    model_config = ConfigDict(extra="forbid")

    workflow: dict[str, Any]
    input_schema: dict[str, Any] | None = None


class RollbackRequest(BaseModel):
    """``POST /v1/definitions/{name}/rollback``: the version to make current (``to``);
    none: the highest version below the current one."""

    model_config = ConfigDict(extra="forbid")

    to: int | None = Field(default=None, ge=1, le=2**31 - 1)
