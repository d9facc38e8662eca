"""The request body of a bulk operation (pydantic lives at the HTTP edge only)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from headwater.topics import WORKFLOW_ID_PATTERN


class OperationFilter(BaseModel):
    """Which runs: the filters of ``GET /v1/workflows`` (all of them must hold)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["accepted", "running", "succeeded", "failed", "cancelled"] | None = None
    name: str | None = Field(default=None, min_length=1)
    tenant: str | None = None
    definition: str | None = Field(default=None,
                                   description="a definition's name, or name@version")
    label: list[str] = Field(default_factory=list,
                             description="key:value (or key: any value), all of them")
    created_after: str | None = None
    created_before: str | None = None
    paused: StrictBool | None = Field(default=None,
                                      description="true: only runs paused now; false: "
                                                  "only the others")

    def given(self) -> dict[str, Any]:
        """The fields given (the operation's document shows them)."""
        return self.model_dump(exclude_defaults=True)


class SignalArgs(BaseModel):
    """A bulk signal: the signal's name and fields, and the wait item (a map's)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    fields: dict[str, Any] = Field(default_factory=dict)
    index: int | None = Field(default=None, ge=0)


class OperationRequest(BaseModel):
    """``POST /v1/operations``: do ``action`` to every run ``filter`` matches.

    ``dry_run`` answers how many runs match and a sample, and records nothing. ``id``
    is the idempotency key: the same id again answers the same operation.
    """

    model_config = ConfigDict(extra="forbid")

    action: str = Field(description="cancel, signal, rerun, pause or resume")
    filter: OperationFilter
    dry_run: bool = False
    id: str | None = Field(default=None, pattern=WORKFLOW_ID_PATTERN, max_length=100)
    reason: str = Field(default="", max_length=1000,
                        description="a cancel's or a pause's reason, recorded in each "
                                    "run's history")
    signal: SignalArgs | None = None
    cache: Literal["refresh"] | None = Field(
        default=None, description="a rerun's: its cached nodes compute afresh")

    def args(self) -> dict[str, Any]:
        """The action's arguments, as the operation keeps them."""
        out: dict[str, Any] = {}
        if self.reason:
            out["reason"] = self.reason
        if self.signal is not None:
            out["signal"] = self.signal.model_dump()
        if self.cache is not None:
            out["cache"] = self.cache
        return out
