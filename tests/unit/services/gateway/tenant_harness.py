"""A gateway with auth on, tokens of two tenants and of every tenant, and an in-memory
definitions registry (``RegistryPool``) that answers the registry's statements as the
``definitions`` and ``definition_heads`` tables would, for the tenant tests.

``RegistryPool`` also answers a schedule's generations (``schedules.generations``) from
the ``workflows`` rows ``submit`` claims (``FakePool``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from gateway_harness import UNREACHABLE, FakePool, FakeProducer, Gateway

from services.common.auth.settings import ServiceAuth
from services.common.auth.tokens import Authenticator, KeysFile, bearer, new_key
from services.gateway.app import create_app

SPEC: dict[str, Any] = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}


@dataclass
class RegistryPool(FakePool):
    """``FakePool`` with the registry's tables in memory (see the module docstring)."""

    heads: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        """A head (``state = $2``: only one in that state) or a version; else a row."""
        await self._enter()
        if "from definition_heads" in sql:
            head = self.heads.get(args[0])
            if head is not None and "state = $2" in sql and head["state"] != args[1]:
                return None
            return head
        if "from definitions" in sql:
            return self.versions.get((args[0], args[1]))
        if "from schedules" in sql:
            return None
        return await super().fetchrow(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        """The list (``$3``: the tenant), the names a 404 suggests from, the names
        serving a path, a name's versions, a schedule's generations."""
        await self._enter()
        if sql.startswith("select name from definition_heads"):
            tenant, limit = args
            return [{"name": n} for n, h in sorted(self.heads.items()) if not h["deleted"]
                    and (tenant is None or h["tenant"] in (None, tenant))][:limit]
        if "n->>'path' = $1" in sql:  # the definitions serving a path (runs.paths)
            path, tenant, limit = args
            return [{"name": n} for n, h in sorted(self.heads.items()) if not h["deleted"]
                    and (tenant is None or h["tenant"] in (None, tenant))
                    and any(node.get("path") == path for node in
                            self.versions[(n, h["version"])]["spec"].get("nodes", []))][:limit]
        if "from definition_heads h" in sql:
            cursor, limit, tenant = args
            return [{**self.versions[(n, h["version"])], "name": n, "version": h["version"]}
                    for n, h in sorted(self.heads.items())
                    if not h["deleted"] and (cursor is None or n > cursor)
                    and (tenant is None or h["tenant"] in (None, tenant))][:limit]
        if "from definitions" in sql:
            return [{"version": v, **row} for (n, v), row in sorted(self.versions.items())
                    if n == args[0] and (len(args) < 2 or row["state"] == args[1])]
        if "starts_with(workflow_id" in sql:
            return [{"workflow_id": k, **v} for k, v in self.rows.items()
                    if k.startswith(args[1])]
        return []

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """A version's ``created_at``, a name's highest version, a claim of a run by
        name; else ``FakePool``'s."""
        if sql.startswith("select created_at from definitions"):
            return self.versions[(args[0], args[1])]["created_at"]
        if sql.startswith("select max(version) from definitions"):
            return max((v for n, v in self.versions if n == args[0]), default=None)
        return await super().fetchval(sql, *args)

    async def execute(self, sql: str, *args: Any) -> str:
        """The registry's inserts and updates; advisory locks; else ``FakePool``'s."""
        await self._enter()
        if sql.startswith("insert into definitions"):
            name, version, spec, schema, digest, state, at, tenant = args
            self.versions[(name, version)] = {
                "spec": spec, "input_schema": schema, "digest": digest, "state": state,
                "created_at": at, "tenant": tenant}
        elif sql.startswith("insert into definition_heads"):
            name, version, deleted, state, at, tenant, revision = args
            self.heads[name] = {"version": version, "deleted": deleted, "state": state,
                                "updated_at": at, "tenant": tenant, "revision": revision}
        elif sql.startswith("update definitions set state"):
            self.versions[(args[0], args[1])]["state"] = args[2]
        elif sql.startswith("update definition_heads set state"):
            self.heads[args[0]]["state"] = args[1]
        elif "pg_advisory" not in sql:
            return await super().execute(sql, *args)
        return "OK"

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """No rollback: the statements of a transaction here never fail halfway."""
        yield

    def is_closed(self) -> bool:
        """The pool stands in for a connection that is open."""
        return False

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[RegistryPool]:
        """The pool itself stands in for a connection."""
        await self._enter()
        yield self


@dataclass
class Tenants:
    """A gateway with auth on, connected to a ``RegistryPool`` and a ``FakeProducer``.

    Attributes:
        gw: the gateway.
        pool: its registry.
        producer: what it produced.
        tokens: ``"A"``, ``"B"`` (admin tokens of tenants A and B), ``"A-read"``,
            ``"*"`` (an admin token for every tenant).
    """

    gw: Gateway
    pool: RegistryPool
    producer: FakeProducer
    tokens: dict[str, str]

    def call(self, who: str, method: str, url: str, **kwargs: Any) -> Any:
        """``method url`` with the bearer token of ``who``."""
        return self.gw.client.request(method, url, headers={
            "Authorization": bearer(self.tokens[who])}, **kwargs)


@contextlib.contextmanager
def tenants(tmp_path: Path) -> Iterator[Tenants]:
    """Start the gateway with a keys file in ``tmp_path`` (see ``Tenants``)."""
    keys = {"A": new_key("A", "admin"), "B": new_key("B", "admin"),
            "A-read": new_key("A", "read"), "*": new_key("*", "admin")}
    path = tmp_path / "keys"
    path.write_text("".join(line + "\n" for _, line in keys.values()))
    auth = ServiceAuth(Authenticator(KeysFile(path), None), keys["*"][0])
    app = create_app(dataclasses.replace(UNREACHABLE, auth=auth))
    with TestClient(app) as client:
        gw = Gateway(client, app.state.hw)
        pool, producer = RegistryPool(), FakeProducer()
        gw.connect(pool, producer)
        yield Tenants(gw, pool, producer, {k: token for k, (token, _) in keys.items()})
