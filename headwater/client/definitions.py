"""``Client.definitions`` and ``AsyncClient.definitions``: the registry of definitions
(``/v1/definitions``, docs/definitions.md). Each method's request and the reading of its
answer are ``requests``'s, sent by the client's ``fetch`` (so they retry as its other
calls do)."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

from headwater.client import requests as req
from headwater.client.requests import Fetches, FetchesAsync
from headwater.client.types import Definition

__all__ = ["AsyncDefinitions", "Definitions"]


class Definitions:
    """``Client.definitions``: the registry (``/v1/definitions``)."""

    def __init__(self, client: Fetches) -> None:
        self._client = client

    def put(self, name: str, spec: dict[str, Any] | str | Path, *,
            input_schema: dict[str, Any] | None = None) -> Definition:
        """Store a version (``PUT /v1/definitions/{name}``): a new one (``raw`` of a
        201), or the current one when the body is the same. Raises ``Unprocessable``
        naming every fault of the spec or the schema."""
        return self._client.fetch(req.definition_put(name, spec, input_schema))

    def list(self) -> builtins.list[Definition]:
        """Every definition's latest version (deleted ones aside), by name (every page
        of ``GET /v1/definitions``)."""
        return self._client.fetch_all(req.definitions())

    def get(self, name: str, version: int | None = None) -> Definition:
        """One version (None: the latest); ``raw["workflow"]`` is its spec. Raises
        ``NotFound`` (unknown name or version), ``Gone`` (deleted, without
        ``version``)."""
        return self._client.fetch(req.definition_get(name, version))

    def delete(self, name: str) -> None:
        """Stop new runs of ``name`` (they get ``Gone``; running ones go on); deleting
        it again changes nothing. Raises ``NotFound`` when unknown."""
        self._client.fetch(req.definition_delete(name))

    def rollback(self, name: str, to: int | None = None) -> Definition:
        """Make an earlier version current (``POST /v1/definitions/{name}/rollback``):
        version ``to``, or None for the one before the current. New runs use it; runs
        already started keep theirs. The answer's ``version`` is now current;
        ``raw`` adds ``previous``, ``latest`` and ``changed``. Raises ``NotFound`` (no
        such name or version), ``Conflict`` (deleted, or no earlier version)."""
        return self._client.fetch(req.definition_rollback(name, to))


class AsyncDefinitions:
    """``AsyncClient.definitions``: as ``headwater.client.Definitions``, to await."""

    def __init__(self, client: FetchesAsync) -> None:
        self._client = client

    async def put(self, name: str, spec: dict[str, Any] | str | Path, *,
                  input_schema: dict[str, Any] | None = None) -> Definition:
        """As ``Definitions.put``."""
        return await self._client.fetch(req.definition_put(name, spec, input_schema))

    async def list(self) -> builtins.list[Definition]:
        """As ``Definitions.list``."""
        return await self._client.fetch_all(req.definitions())

    async def get(self, name: str, version: int | None = None) -> Definition:
        """As ``Definitions.get``."""
        return await self._client.fetch(req.definition_get(name, version))

    async def delete(self, name: str) -> None:
        """As ``Definitions.delete``."""
        await self._client.fetch(req.definition_delete(name))

    async def rollback(self, name: str, to: int | None = None) -> Definition:
        """As ``Definitions.rollback``."""
        return await self._client.fetch(req.definition_rollback(name, to))
