"""The ``@workflow``s workers announce become definitions (``definitions.announced``):
the body names the code version and the path, the worker that started last decides a
name's body, a body is registered once (a new version only when it changes), and one
the registry refuses is logged once and left alone."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.core.definitions import digest
from headwater.core.spec import parse_spec
from services.common.auth.tokens import OPEN, Principal
from services.gateway.definitions.announced import (
    Registrar,
    body_faults,
    body_of,
    newest,
)
from services.gateway.definitions.store import Registered
from services.gateway.edge.problems import Problem

SPEC = {"name": "research", "nodes": [{"id": "main", "kind": "code", "task": "research",
                                       "queue": "cpu", "input": "${input}"}],
        "output": "${nodes.main.output}"}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def flow(version: str = "abc", path: str | None = "/research", name: str = "research",
         spec: Any = None) -> AnnouncedWorkflow:
    return AnnouncedWorkflow(name, spec or SPEC, SCHEMA, path, version)


def worker(worker_id: str, started: int, *flows: AnnouncedWorkflow) -> WorkerAnnounced:
    return WorkerAnnounced(worker_id, "cpu", tuple(f.name for f in flows), 1, 0, "v", "h", 1,
                           started, started, 1000, False, tuple(flows))


def test_the_body_names_the_code_version_and_the_path() -> None:
    body = body_of(flow())
    main = body.spec["nodes"][0]
    assert main["code_version"] == "abc" and main["path"] == "/research"
    assert "code_version" not in SPEC["nodes"][0]  # the announcement is not changed
    assert body.digest == digest(body.spec, SCHEMA) and body_faults(body) == []
    assert parse_spec(body.spec).nodes[0].code.code_version == "abc"  # type: ignore[union-attr]
    assert body_of(flow(path=None)).spec["nodes"][0].get("path") is None
    assert body_of(flow("abd")).digest != body.digest  # another code version, another body


def test_a_body_the_registry_cannot_hold_is_named() -> None:
    assert "invalid" in body_faults(body_of(flow(name="_private")))[0]
    assert any("unknown field" in f for f in body_faults(body_of(flow(spec={
        "name": "x", "nodes": [{"id": "main", "kind": "code", "task": "x", "wat": 1}]}))))


def test_the_worker_started_last_decides_a_names_body() -> None:
    old, new = worker("a", 1, flow("v1")), worker("b", 2, flow("v2"), flow(name="other"))
    assert newest([old, new])["research"].code_version == "v2"
    assert newest([new, old])["research"].code_version == "v2"
    assert set(newest([old, new])) == {"research", "other"}


@dataclass
class Store:
    """Records the puts; ``refuse`` answers a put with that problem."""

    puts: list[tuple[str, Any, Any, Principal]] = field(default_factory=list)
    refuse: Problem | None = None

    async def put(self, name: str, spec: Any, input_schema: Any,
                  me: Principal = OPEN) -> Registered:
        if self.refuse is not None:
            raise self.refuse
        self.puts.append((name, spec, input_schema, me))
        return Registered(name, len(self.puts), digest(spec, input_schema),
                          datetime.now(tz=UTC), True)

    async def put_announced(self, name: str, spec: Any, input_schema: Any) -> Registered:
        return await self.put(name, spec, input_schema, OPEN)


async def test_a_body_is_registered_once_and_again_when_it_changes() -> None:
    store = Store()
    live = [worker("a", 1, flow("v1"))]
    registrar = Registrar(store, lambda: live)  # type: ignore[arg-type]
    for body in registrar.due():
        await registrar.register(body)
    assert [(n, me) for n, _, _, me in store.puts] == [("research", OPEN)]
    assert registrar.due() == []  # the same announcement again: nothing to write
    live.append(worker("b", 2, flow("v2")))
    due = registrar.due()
    assert [b.spec["nodes"][0]["code_version"] for b in due] == ["v2"]


async def test_a_refused_body_is_logged_once_and_left(caplog: pytest.LogCaptureFixture) -> None:
    store = Store(refuse=Problem(409, "Conflict", "the definition name research is taken"))
    registrar = Registrar(store, lambda: [worker("a", 1, flow())])  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, "headwater.gateway"):
        for _ in range(3):
            for body in registrar.due():
                assert await registrar.register(body) is None
    assert [r.getMessage() for r in caplog.records].count(
        "workflow research announced by a worker is not registered as a definition: the "
        "definition name research is taken") == 1
    store.refuse = Problem(503, "Kafka unavailable", "later")
    registrar.written.clear()
    with pytest.raises(Problem):  # tried again later
        await registrar.register(registrar.due()[0])


async def test_the_registrar_runs_in_the_background_on_new_announcements() -> None:
    store = Store()
    live: list[WorkerAnnounced] = []
    registrar = Registrar(store, lambda: live)  # type: ignore[arg-type]
    registrar.start()
    try:
        record = worker("a", 1, flow())
        live.append(record)
        registrar.heard(record)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if store.puts:
                break
        assert [p[0] for p in store.puts] == ["research"]
        registrar.heard(record)  # the same again: not looked at
        assert not registrar._wake.is_set()
    finally:
        await registrar.stop()
