"""The request body of a definition (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class DefinitionRequest(BaseModel):
    """``PUT /v1/definitions/{name}``: a workflow spec (``workflow``) and, optionally, the
    JSON Schema its input must match (``input_schema``). A bare spec (a document with
    ``nodes`` and no ``workflow``) is taken as ``{"workflow": <it>}``."""

    model_config = ConfigDict(extra="forbid")

    workflow: dict[str, Any]
    input_schema: dict[str, Any] | None = None
