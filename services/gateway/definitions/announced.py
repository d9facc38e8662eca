"""Definitions of the ``@workflow``s workers announce: each workflow a live worker
serves becomes a stored definition under its name, a new version only when its spec,
input schema, path or code version changes.

A worker names the workflows it serves in its announcements
(``headwater.announcement.AnnouncedWorkflow``, ``services/worker/workflows.py``); the
gateway's ``WorkerRegistry`` hands each announcement it takes to the ``Registrar``,
which registers through the registry's own writer (``definitions.store.Store``: the
per-name lock, the claim, the records on the ``definitions`` topic), as a ``PUT`` would
with an operator's token: the definition is shared by every tenant. Writing through
the gateway keeps one writer of the definitions topic and its claim-then-produce rule;
a projector that wrote definitions too would need that rule twice.

Which body a name gets when workers disagree (a rolling deploy, a rollback): that of
the live worker that started last (``started_at_ms``, then ``worker_id``), so two
generations of workers serving side by side do not make a new version at each of
their announcements, and the newest code is the definition's head. The same body as
the head is no new version (``headwater.core.definitions.decide_put``), so a gateway
that starts, or hears the same announcement again, writes nothing new. A name an
operator rolled back (``headwater rollback``) is left on its version
(``Store.put_announced``): the workers of the newer code that still run would otherwise
register it again at once.

A body the registry refuses (a workflow name that is no definition name, an invalid
spec, a name another tenant holds) is logged once per body and left alone; a write
that fails for Kafka or PostgreSQL is tried again after ``RETRY_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.routing import BaseRoute

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.core.definitions import DefinitionRefError, check_name, digest
from headwater.core.spec import parse_spec
from headwater.errors import SpecError
from services.gateway.definitions.registry import schema_faults
from services.gateway.definitions.store import Registered, Store
from services.gateway.edge.problems import Problem
from services.gateway.runs.path_route import taken_paths

log = logging.getLogger("headwater.gateway")

RETRY_S = 1.0
"""How long to wait before writing again after Kafka or PostgreSQL failed, seconds."""
MAX_SEEN = 10_000
"""How many workers' last workflows the registrar remembers (all forgotten past it:
they are looked at again once)."""
MAX_WORKFLOWS = 1000
"""The most workflows one announcement may name; those past it are ignored (logged)."""


@dataclass(frozen=True)
class Body:
    """What a workflow's definition holds: the spec (its code node naming the code
    version and the path) and the input schema; ``digest`` as the registry's."""

    name: str
    spec: dict[str, Any]
    input_schema: Any
    digest: str


def body_of(workflow: AnnouncedWorkflow) -> Body:
    """The definition body of an announced workflow: its spec document with the code
    version and the path on its code node (so that a change of either is a new
    version, and a run records the code version it started on)."""
    spec = copy.deepcopy(workflow.spec) if isinstance(workflow.spec, dict) else {}
    for node in spec.get("nodes") or ():
        if isinstance(node, dict) and node.get("kind") == "code":
            node["code_version"] = workflow.code_version
            if workflow.path is not None:
                node["path"] = workflow.path
    return Body(workflow.name, spec, workflow.input_schema,
                digest(spec, workflow.input_schema))


def body_faults(body: Body, routes: Iterable[BaseRoute] = ()) -> list[str]:
    """Why the registry cannot hold ``body`` (empty: it can): a name that is no
    definition name, a spec that does not parse, an input schema that is no JSON
    Schema, a path one of the gateway's ``routes`` takes (``path_route.taken``)."""
    faults: list[str] = taken_paths(routes, body.spec)
    try:
        check_name(body.name)
    except DefinitionRefError as e:
        faults.append(str(e))
    try:
        parse_spec(body.spec)
    except SpecError as e:
        faults += [f"workflow: {f}" for f in e.faults]
    if body.input_schema is not None:
        faults += schema_faults(body.input_schema)
    return faults


def newest(records: Iterable[WorkerAnnounced]) -> dict[str, AnnouncedWorkflow]:
    """Each workflow name -> what the worker that started last says of it, among
    ``records`` (the live workers' last announcements)."""
    found: dict[str, tuple[tuple[int, str], AnnouncedWorkflow]] = {}
    for record in records:
        rank = (record.started_at_ms, record.worker_id)
        for workflow in record.workflows[:MAX_WORKFLOWS]:
            held = found.get(workflow.name)
            if held is None or held[0] < rank:
                found[workflow.name] = (rank, workflow)
    return {name: w for name, (_, w) in found.items()}


class Registrar:
    """Registers the announced workflows' definitions in the background.

    Args:
        store: the registry's writer.
        live: the live workers' last announcements (``WorkerRegistry.live``).
        routes: the gateway's routes (a path one of them takes is not registered).
    """

    def __init__(self, store: Store, live: Callable[[], list[WorkerAnnounced]],
                 routes: Iterable[BaseRoute] = ()) -> None:
        self.store = store
        self.live = live
        self.routes = list(routes)
        self.written: dict[str, str] = {}  # name -> the digest last registered (or refused)
        self.refused: set[str] = set()  # digests refused (logged once)
        self.seen: dict[str, tuple[AnnouncedWorkflow, ...]] = {}  # worker id -> its last
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start registering (from the event loop): what the live workers announced so
        far first."""
        self._wake.set()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop registering."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def heard(self, record: WorkerAnnounced) -> None:
        """A worker announced itself: look again when it names other workflows than it
        did last time (called for every announcement the registry takes; a worker
        announces the same every interval, which changes nothing)."""
        if record.workflows and self.seen.get(record.worker_id) != record.workflows:
            if len(self.seen) >= MAX_SEEN:
                self.seen.clear()
            self.seen[record.worker_id] = record.workflows
            self._wake.set()

    def due(self) -> list[Body]:
        """The bodies to register now: each workflow's chosen one whose digest is not
        the one last registered."""
        bodies = [body_of(w) for w in newest(self.live()).values()]
        return [b for b in bodies if self.written.get(b.name) != b.digest]

    async def register(self, body: Body) -> Registered | None:
        """Register one body (None: refused, logged once).

        Raises:
            Problem: 503 (Kafka), and what PostgreSQL raises: try again later.
        """
        faults = body_faults(body, self.routes)
        if faults:
            self._refuse(body, "; ".join(faults))
            return None
        try:
            stored = await self.store.put_announced(body.name, body.spec, body.input_schema)
        except Problem as e:
            if e.status >= 500:
                raise
            self._refuse(body, e.detail)
            return None
        self.written[body.name] = body.digest
        if stored.created:
            log.info("registered workflow %s as definition version %d (code version %s)",
                     body.name, stored.version, _code_version(body))
        return stored

    def _refuse(self, body: Body, why: str) -> None:
        self.written[body.name] = body.digest
        if body.digest not in self.refused:
            self.refused.add(body.digest)
            log.warning("workflow %s announced by a worker is not registered as a "
                        "definition: %s", body.name[:200], why)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            for body in self.due():
                try:
                    await self.register(body)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("registering workflow %s failed (%r); trying again",
                                body.name, e)
                    self._wake.set()
                    await asyncio.sleep(RETRY_S)


def _code_version(body: Body) -> str:
    for node in body.spec.get("nodes") or ():
        if isinstance(node, dict) and "code_version" in node:
            return str(node["code_version"])
    return "?"
