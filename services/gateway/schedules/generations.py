"""Schedules at the edge: check a ``PUT /v1/schedules/{name}`` body, build the schedule
workflow's spec, and keep one live generation per name.

A schedule is a workflow with one node of kind ``schedule`` (``fire``) whose timer starts
runs of a registered definition (the docs/definitions.md, "Schedules"). Each ``PUT`` of other
settings is a new generation: the workflow ``schedule:<name>:<generation>`` (1, 2, ...),
submitted through ``runs.submit.submit`` with the spec inline; the generations before it are
cancelled (``control.send.request_cancel``; their runs go on). The same settings as the
live generation's (``settings_of``) answer that generation (200). Every write of a name
holds a PostgreSQL advisory lock on the name for the whole write, so generations are
chosen one at a time.

The live generation is the highest-numbered ``schedule:<name>:<n>`` in ``workflows``
whose status is not terminal. A write cancels every other generation that has not ended,
so a cancel lost to a crash (or a 503) between the submission and the cancel is sent by
the next ``PUT`` or ``DELETE`` of the name.

A schedule is its generations' tenant's (``workflows.tenant``; the runs it starts are
children of the generation and so that tenant's too). A principal of one tenant sees and
writes only its tenant's schedules (``auth.Principal.sees``): another tenant's is 404 as
an unknown name, a ``PUT`` of a name another tenant's live schedule holds is 409, and its
definition must be one the principal sees. A principal of every tenant writes every
schedule (a replaced one stays its tenant's; a new one has no tenant).
"""

from __future__ import annotations

import asyncio
import re
import zoneinfo
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import asyncpg
from croniter import croniter
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from headwater.core.definitions import NAME_PATTERN
from headwater.core.kinds.schedule.cron import MAX_CATCHUP_MAX, ScheduleSpec, next_fire_ms
from headwater.core.priority import KEY as PRIORITY_KEY
from headwater.core.priority import with_priority
from headwater.core.retry import MAX_SECONDS
from headwater.topics import Topics
from services.common.auth.tokens import OPEN, Principal
from services.common.db import name_locked
from services.gateway.control.send import request_cancel
from services.gateway.definitions.registry import Resolved, check_input, inline_children, resolve
from services.gateway.edge.body import require_storable
from services.gateway.edge.problems import Problem
from services.gateway.outlet import Headers, Outlet
from services.gateway.runs.models import Priority, SubmitRequest
from services.gateway.runs.stream import TERMINAL_STATUSES
from services.gateway.runs.submit import submit

PREFIX = "schedule:"
"""The schedule workflow's spec name is ``schedule:<name>``; its id adds
``:<generation>``."""
NODE = "fire"
"""The id of the schedule workflow's one node."""
LOCK_CLASS = 7420003
"""The first key of the per-name advisory locks of schedules (``pg_advisory_lock(int,
int)``; the definitions' are 7420002, the schema's lock 7420001)."""
MAX_CATCHUP = MAX_CATCHUP_MAX
"""The most missed fire times ``catchup: all`` may start at once (``catchup_max``)."""
CRON_FIELDS = (5, 6)
"""A cron expression's field counts: minute hour day month weekday, and croniter's
sixth field, seconds (``* * * * * */2``: every 2 s)."""
T = TypeVar("T")
_NAME = re.compile(NAME_PATTERN)
_RANDOM = re.compile(r"(?<![A-Z])[HR](?![A-Z])", re.IGNORECASE)
_PROBE_MS = 946_684_800_000
"""2000-01-01T00:00:00Z: a cron expression with no fire time after it never fires."""


class ScheduleRequest(BaseModel):
    """``PUT /v1/schedules/{name}``: when (``cron`` in ``timezone``, from ``start_at``),
    what (``definition``, ``name`` or ``name@3``, with ``input``) and the policies."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(min_length=1, max_length=200)
    timezone: str = Field(default="UTC", min_length=1, max_length=100)
    definition: str = Field(min_length=1, max_length=200)
    input: Any = None
    overlap: Literal["skip", "allow", "cancel_previous"] = "skip"
    catchup: Literal["none", "latest", "all"] = "none"
    catchup_max: int = Field(default=10, ge=1, le=MAX_CATCHUP, strict=True)
    misfire_grace: float = Field(default=60.0, ge=0, le=MAX_SECONDS)
    start_at: AwareDatetime | None = None
    priority: Priority | None = None
    """The priority of the runs it starts (``headwater.core.priority``); None: the
    definition's."""


@dataclass(frozen=True)
class Generation:
    """One generation of a schedule: a ``workflows`` row.

    Attributes:
        number: the generation, from 1.
        workflow_id: ``schedule:<name>:<number>``.
        status: the workflow's status (``accepted`` while only claimed).
        spec: the schedule workflow's spec.
        tenant: the workflow's tenant (the schedule's), or None.
    """

    number: int
    workflow_id: str
    status: str
    spec: Any
    tenant: str | None = None

    @property
    def ended(self) -> bool:
        """Whether the workflow is terminal (cancelled: the schedule was replaced or
        deleted)."""
        return self.status in TERMINAL_STATUSES


@dataclass(frozen=True)
class Applied:
    """What a ``PUT`` answers: the live generation, new (201) or unchanged (200)."""

    name: str
    generation: int
    workflow_id: str
    created: bool


def workflow_id(name: str, generation: int) -> str:
    """``schedule:<name>:<generation>`` (a valid workflow id for a valid name)."""
    return f"{PREFIX}{name}:{generation}"


def check_schedule_name(name: str) -> None:
    """Raises ``Problem`` 422 unless ``name`` is a valid schedule name (a definition
    name's form: 1-100 letters, digits and ``_.-``, starting with a letter or digit)."""
    if not _NAME.fullmatch(name):
        fault = (f"name: schedule name {name!r} is invalid: 1-100 letters, digits and _.- "
                 "starting with a letter or digit")
        raise Problem(422, "Invalid schedule name", fault, errors=[fault])


def cron_faults(expression: str, timezone: str = "UTC") -> list[str]:
    """Why ``expression`` is not a cron expression a schedule takes (empty: it is).

    Five fields (minute hour day-of-month month day-of-week) or six, the sixth being
    seconds, croniter's order (croniter's README, "About second repeats"); croniter's
    hashed ``H`` and random ``R`` fields are refused (a fire time must be the same at
    every replay), and so is one that never fires (``kinds/schedule/cron.py``, the core's rule).
    """
    fields = expression.split()
    if len(fields) not in CRON_FIELDS:
        return [f"cron: {expression!r} has {len(fields)} fields; 5 (minute hour day month "
                "weekday) or 6 (and seconds, last) are needed"]
    if _RANDOM.search(expression):
        return [f"cron: {expression!r}: croniter's hashed (H) and random (R) fields are "
                "refused: a fire time must be the same at every replay"]
    if not croniter.is_valid(expression):
        return [f"cron: {expression!r} is not a valid cron expression"]
    zone = timezone if not timezone_faults(timezone) else "UTC"
    if next_fire_ms(ScheduleSpec(expression, zone), _PROBE_MS) is None:
        return [f"cron: {expression!r} never fires"]
    return []


def timezone_faults(name: str) -> list[str]:
    """Why ``name`` is not an IANA time zone of the tz database (zoneinfo), or []."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return [f"timezone: {name!r} is not an IANA time zone (e.g. UTC, Europe/Paris)"]
    return []


def build_spec(name: str, body: ScheduleRequest, resolved: Resolved,
               workflow: dict[str, Any]) -> dict[str, Any]:
    """The schedule workflow's spec (one ``kind: schedule`` node, ``fire``).

    Args:
        name: the schedule's name.
        body: the checked body.
        resolved: the definition's version each run runs.
        workflow: its spec with its own children inlined; with the body's
            ``priority``, if any, in place of the definition's.
    """
    workflow = with_priority(workflow, body.priority)
    node: dict[str, Any] = {
        "id": NODE, "kind": "schedule", "cron": body.cron, "timezone": body.timezone,
        "workflow": workflow, "definition": resolved.name,
        "definition_version": resolved.version, "input": body.input,
        "overlap": body.overlap, "catchup": body.catchup, "catchup_max": body.catchup_max,
        "misfire_grace": body.misfire_grace}
    if body.start_at is not None:
        node["start_at"] = body.start_at.isoformat()
    return {"name": f"{PREFIX}{name}", "nodes": [node]}


def schedule_node(spec: Any) -> dict[str, Any]:
    """The ``fire`` node of a schedule workflow's spec ({} if it has none)."""
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    found = [n for n in nodes or () if isinstance(n, dict) and n.get("id") == NODE]
    return found[0] if found else {}


def settings_of(spec: Any) -> dict[str, Any]:
    """What makes two generations the same schedule: the node without its inline
    ``workflow`` (``definition_version`` stands for it), and the priority of the runs
    it starts (the inline workflow's)."""
    node = schedule_node(spec)
    workflow = node.get("workflow")
    ran_at = workflow.get(PRIORITY_KEY) if isinstance(workflow, dict) else None
    return {**{k: v for k, v in node.items() if k != "workflow"}, PRIORITY_KEY: ran_at}


async def check_body(pool: asyncpg.Pool, body: ScheduleRequest, me: Principal = OPEN,
                     ) -> tuple[Resolved, dict[str, Any]]:
    """Check a body: its cron, time zone, definition (one ``me`` sees) and input.

    Returns:
        The definition's version, and its spec with its own children inlined.

    Raises:
        Problem: 422 naming every fault: ``cron``, ``timezone``, ``definition`` (malformed,
            unknown, deleted), ``input`` (each field the definition's schema refuses).
    """
    require_storable({"input": body.input})
    faults = cron_faults(body.cron, body.timezone) + timezone_faults(body.timezone)
    try:
        resolved = await resolve(pool, body.definition, me)
    except Problem as e:
        raise _invalid([*faults, f"definition: {e.detail}"]) from e
    try:
        await asyncio.to_thread(check_input, resolved, body.input)
    except Problem as e:
        faults += e.extra.get("errors", [e.detail])
    if faults:
        raise _invalid(faults)
    return resolved, await inline_children(pool, resolved.spec, (resolved.name,), me=me)


def _invalid(faults: list[str]) -> Problem:
    return Problem(422, "Invalid schedule", "; ".join(faults), errors=faults)


def _as_body_faults(problem: Problem) -> Problem:
    """A 422 of the core's spec check with its faults named by the body's fields
    (``node 'fire': cron: ...`` is ``cron: ...``); any other problem as it is."""
    if problem.status != 422 or not isinstance(problem.extra.get("errors"), list):
        return problem
    prefix = f"node {NODE!r}: "
    faults = [f.removeprefix(prefix) for f in problem.extra["errors"]]
    return _invalid(faults)


async def generations(conn: Any, name: str) -> list[Generation]:
    """Every generation of ``name`` in ``workflows``, lowest first."""
    prefix = f"{PREFIX}{name}:"
    rows = await conn.fetch("select workflow_id, status, spec, tenant from workflows where"
                            " name = $1 and starts_with(workflow_id, $2)", f"{PREFIX}{name}",
                            prefix)
    found = [Generation(int(r["workflow_id"][len(prefix):]), r["workflow_id"], r["status"],
                        r["spec"], r["tenant"])
             for r in rows if r["workflow_id"][len(prefix):].isdigit()]
    return sorted(found, key=lambda g: g.number)


def live(found: list[Generation], me: Principal = OPEN) -> Generation | None:
    """The live generation: the highest, unless it has ended or ``me`` may not see it
    (another tenant's: None)."""
    current = found[-1] if found and not found[-1].ended else None
    return current if current is not None and me.sees(current.tenant) else None


def unknown(name: str) -> Problem:
    """The 404 of a schedule that does not exist (or is another tenant's)."""
    return Problem(404, "Not found", f"no schedule {name}", schedule=name)


@dataclass(frozen=True)
class Writer:
    """Writes of schedules (the gateway's connections and settings).

    Attributes:
        pool: the projection's pool.
        producer: the Kafka producer.
        topics: the topic names.
        produce_timeout_s: longest wait for Kafka's acknowledgement, seconds.
        auth: the headers of its submissions (``outlet.Outlet.auth``).
    """

    pool: asyncpg.Pool
    producer: Any
    topics: Topics
    produce_timeout_s: float
    auth: Headers = ()

    @property
    def _out(self) -> Outlet:
        """Where its submissions and cancels go."""
        return Outlet(self.producer, self.topics, self.produce_timeout_s, self.auth)

    async def _locked(self, name: str, write: Callable[[Any], Awaitable[T]]) -> T:
        """``write(conn)`` holding the name's advisory lock on one connection."""
        async with name_locked(self.pool, LOCK_CLASS, name) as conn:
            return await write(conn)

    async def put(self, name: str, spec: dict[str, Any], me: Principal = OPEN) -> Applied:
        """Make ``spec`` the live generation of ``name``: the live one if it has the
        same settings, else the next one (the others cancelled), ``me``'s tenant's (a
        principal of every tenant leaves a live schedule its tenant's).

        Raises:
            Problem: 409 another tenant's live schedule holds the name, 422 the core
                refuses the spec, 503 Kafka did not acknowledge (retrying is safe: the
                same body finds the generation it submitted).
        """
        return await self._locked(name, lambda conn: self._put(conn, name, spec, me))

    async def _put(self, conn: Any, name: str, spec: dict[str, Any],
                   me: Principal) -> Applied:
        found = await generations(conn, name)
        current = live(found)
        if current is not None and not me.sees(current.tenant):
            raise Problem(409, "Conflict", f"the schedule name {name} is taken; put the "
                          "schedule under another name", schedule=name)
        if current is not None and settings_of(current.spec) == settings_of(spec):
            await self._cancel_others(found, current.number, name)
            return Applied(name, current.number, current.workflow_id, False)
        tenant = current.tenant if current is not None else (
            None if me.every_tenant else me.tenant)
        number = found[-1].number + 1 if found else 1
        new_id = workflow_id(name, number)
        try:
            await submit(self.pool, self._out,
                         SubmitRequest(id=new_id, workflow=spec, tenant=tenant), me)
        except Problem as e:
            raise _as_body_faults(e) from e
        await self._cancel_others(found, number, name)
        return Applied(name, number, new_id, True)

    async def delete(self, name: str, me: Principal = OPEN) -> None:
        """Cancel every generation of ``name`` that has not ended and that ``me`` sees
        (runs go on).

        Raises:
            Problem: 404 every such generation has ended (or there is none: another
                tenant's schedule is unknown), 503 Kafka did not acknowledge.
        """
        await self._locked(name, lambda conn: self._delete(conn, name, me))

    async def _delete(self, conn: Any, name: str, me: Principal) -> None:
        found = [g for g in await generations(conn, name) if me.sees(g.tenant)]
        if all(g.ended for g in found):
            raise unknown(name)
        await self._cancel_others(found, None, name)

    async def _cancel_others(self, found: list[Generation], keep: int | None,
                             name: str) -> None:
        """Cancel each generation in ``found`` but ``keep`` that has not ended."""
        for generation in found:
            if generation.number != keep and not generation.ended:
                try:
                    await request_cancel(self.pool, self._out, generation.workflow_id,
                                         f"schedule {name} replaced or deleted")
                except Problem as e:
                    if e.status not in (404, 409):  # gone, or ended meanwhile: done
                        raise
