"""A ``schedule`` node: a cron expression, its time zone, the workflow each fire time
runs, and the policies for overlapping runs and missed fire times.

A schedule's spec has exactly this one node (no needs, no condition, no error route):
the node's durable timer (``schedule:<node>``) fires runs of its inline ``workflow`` as
child workflows (``rules.py``). The cron expression is croniter's
(https://github.com/kiorky/croniter): five fields (minute, hour, day of month, month, day
of week) or six, the sixth being seconds (croniter's order: ``"* * * * * */2"`` fires
every two seconds; croniter's hashed ``H`` and random ``R`` fields are refused). It is
read in ``timezone``, an IANA zone name (``zoneinfo``), so a daily ``0 9 * * *`` in
``Europe/Paris`` follows its summer time.

This module alone of the core imports ``croniter`` and ``zoneinfo``: both only compute
over given instants and the time zone database; neither reads the clock here (every
computation starts from an instant it is given). Like ``spec.fields``, the parser
appends what is wrong to ``faults`` (``"<where>: <what>"``) and returns a usable value.

The parser checks a schedule's form only (a string of 5 or 6 fields, no ``H``/``R``, a
zone name); what croniter and the time zone database say of it
(``schedule_environment_faults``) is asked once, when a spec is submitted. An accepted
spec is read again at every restore and replay, and an upgrade of croniter or tzdata must
not turn a running schedule's spec invalid there: a fire time it can no longer compute
arms nothing (``next_fire_ms`` is None), and the fire times already armed are in the
history (``ScheduleArmed.fire_ms``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from headwater.core.instants import RFC3339_HINT, parse_instant
from headwater.core.kinds.workflow.records import ChildSpec, parse_child
from headwater.core.retry import finite_number

OVERLAPS = ("skip", "allow", "cancel_previous")
"""What a fire time does while an earlier run still runs: skip it, start beside it, or
cancel the running ones and start."""
CATCHUPS = ("none", "latest", "all")
"""What the fire times missed by more than ``misfire_grace`` do: nothing, run the latest
one, or run each (at most ``catchup_max``, the latest ones)."""
DEFAULT_CATCHUP_MAX = 10
MAX_CATCHUP_MAX = 1000
DEFAULT_MISFIRE_GRACE = 60.0
SCHEDULE_KEYS = frozenset({"cron", "timezone", "workflow", "definition", "definition_version",
                           "input", "overlap", "catchup", "catchup_max", "misfire_grace",
                           "start_at"})
"""The fields a schedule node takes besides ``id`` and ``kind``."""
SCHEDULE_TIMER = "schedule"
PAUSE_SIGNAL = "pause"
RESUME_SIGNAL = "resume"
"""The signals a schedule workflow takes (no fields)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_RANDOM = re.compile(r"(?<![A-Z])[HR](?![A-Z])", re.IGNORECASE)
"""croniter's hashed (``H``) and random (``R``) fields: refused, since a fire time must
be the same at every replay."""
_PROBE_MS = 946_684_800_000  # 2000-01-01T00:00:00Z: a cron that never fires after it is refused


class ScheduleNode(Protocol):
    """What ``schedule_spec_faults`` reads of a parsed node (``spec.NodeSpec``)."""

    @property
    def id(self) -> str: ...
    @property
    def needs(self) -> tuple[str, ...]: ...
    @property
    def when(self) -> str | None: ...
    @property
    def on_error(self) -> str | None: ...
    @property
    def schedule(self) -> ScheduleSpec | None: ...


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule node's own fields (its run's spec is the node's ``ChildSpec``).

    Attributes:
        cron: croniter's expression, 5 fields, or 6 with seconds last.
        timezone: the IANA zone the expression is read in.
        overlap: one of ``OVERLAPS``.
        catchup: one of ``CATCHUPS``.
        catchup_max: with ``all``, at most this many missed fire times run (>= 1).
        misfire_grace: seconds: a fire time whose timer fires later than this after it
            is missed.
        start_at_ms: the first fire time is the first after this instant (ms since the
            epoch), or after the workflow's acceptance when None.
    """

    cron: str
    timezone: str = "UTC"
    overlap: str = "skip"
    catchup: str = "none"
    catchup_max: int = DEFAULT_CATCHUP_MAX
    misfire_grace: float = DEFAULT_MISFIRE_GRACE
    start_at_ms: int | None = None


def schedule_timer_id(node: str) -> str:
    """The id of a schedule node's timer: ``schedule:<node>``."""
    return f"{SCHEDULE_TIMER}:{node}"


def is_schedule_timer(timer_id: str) -> bool:
    """Whether ``timer_id`` is a schedule node's timer."""
    return timer_id.startswith(SCHEDULE_TIMER + ":")


def next_fire_ms(spec: ScheduleSpec, after_ms: int) -> int | None:
    """The first fire time strictly after ``after_ms`` (ms since the epoch), or None
    when the expression has none (croniter finds no such date)."""
    ms = _step(spec, after_ms, forward=True)
    return ms if ms is not None and ms > after_ms else None


def instant_text(ms: int) -> str:
    """``ms`` (since the epoch) as an RFC 3339 UTC date-time, e.g.
    ``2026-01-01T09:00:00.000Z``."""
    return (_EPOCH + ms * _MS).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prev_fire_ms(spec: ScheduleSpec, before_ms: int) -> int | None:
    """The last fire time strictly before ``before_ms`` (ms since the epoch), or None."""
    ms = _step(spec, before_ms, forward=False)
    return ms if ms is not None and ms < before_ms else None


def _croniter() -> Any:
    """croniter's class, imported on first use: croniter imports ``subprocess``, which
    task code importing ``headwater`` (and so the core, ``headwater.core.kinds``) must not
    load (``test_core_boundary``)."""
    from croniter import croniter

    return croniter


def _step(spec: ScheduleSpec, from_ms: int, forward: bool) -> int | None:
    """croniter's next (or previous) fire time from the instant ``from_ms``, read in the
    schedule's zone (``tzinfo.fromutc``: the zone's wall time of a UTC instant)."""
    try:
        zone = ZoneInfo(spec.timezone)
        local = zone.fromutc((_EPOCH + from_ms * _MS).replace(tzinfo=zone))
        it = _croniter()(spec.cron, local)
        found = it.get_next(datetime) if forward else it.get_prev(datetime)
    except (OverflowError, ValueError, OSError, ZoneInfoNotFoundError):  # croniter: ValueError
        return None
    return int((found - _EPOCH) // _MS)


def due_fire_times(spec: ScheduleSpec, first_ms: int, now_ms: int) -> list[int]:
    """The fire times due at ``now_ms``: those from ``first_ms`` (the armed one) to
    ``now_ms`` included, oldest first, at most the latest ``catchup_max + 1`` of them
    (found backwards from ``now_ms``, so a long outage costs no more than that)."""
    due: list[int] = []
    before = now_ms + 1
    while len(due) <= spec.catchup_max:
        prev = prev_fire_ms(spec, before)
        if prev is None or prev < first_ms:
            break
        due.append(prev)
        before = prev
    return due[::-1]


def parse_schedule(raw: Mapping[str, Any], where: str, validate: Callable[[Any], list[str]],
                   faults: list[str]) -> tuple[ScheduleSpec, ChildSpec]:
    """The schedule node ``raw``: its own fields, and the run's spec (``workflow``,
    ``definition``, ``definition_version``, as a workflow node's child)."""
    child = parse_child(raw, where, validate, faults)
    zone = _timezone(raw.get("timezone", "UTC"), where, faults)
    spec = ScheduleSpec(
        cron="", timezone=zone,
        overlap=_choice(raw, "overlap", OVERLAPS, where, faults),
        catchup=_choice(raw, "catchup", CATCHUPS, where, faults),
        catchup_max=_catchup_max(raw.get("catchup_max"), where, faults),
        misfire_grace=_grace(raw.get("misfire_grace"), where, faults),
        start_at_ms=_start_at(raw.get("start_at"), where, faults))
    cron = raw.get("cron")
    if not isinstance(cron, str) or len(cron.split()) not in (5, 6) or _RANDOM.search(cron):
        faults.append(_CRON_FAULT.format(where=where))
        return spec, child
    spec = ScheduleSpec(cron, zone, spec.overlap, spec.catchup, spec.catchup_max,
                        spec.misfire_grace, spec.start_at_ms)
    return spec, child


_CRON_FAULT = ("{where}: cron: required, a cron expression of 5 fields (minute hour day "
               "month weekday) or 6 (seconds last), such as \"*/5 * * * *\"")
_ZONE_FAULT = ("{where}: timezone: {zone!r} is not an IANA time zone (such as \"UTC\" or "
               "\"Europe/Paris\")")


def schedule_environment_faults(spec: ScheduleSpec, where: str) -> list[str]:
    """What croniter and the time zone database say of a schedule whose form
    ``parse_schedule`` accepted: an expression croniter refuses, a zone the database does
    not have, an expression that never fires. Asked at submission only (the module's
    docstring says why)."""
    faults: list[str] = []
    if spec.timezone:  # "": its form was refused already (so with the cron's)
        try:
            ZoneInfo(spec.timezone)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            faults.append(_ZONE_FAULT.format(where=where, zone=spec.timezone[:80]))
    if not spec.cron:
        return faults
    if not _croniter().is_valid(spec.cron):
        faults.append(_CRON_FAULT.format(where=where))
    elif not faults and next_fire_ms(spec, _PROBE_MS) is None:
        faults.append(f"{where}: cron: {spec.cron!r} never fires")
    return faults


def _timezone(value: Any, where: str, faults: list[str]) -> str:
    if (isinstance(value, str) and value and "\x00" not in value
            and len(value) <= _MAX_ZONE_NAME):
        return value
    faults.append(_ZONE_FAULT.format(where=where, zone=str(value)[:80]))
    return ""


_MAX_ZONE_NAME = 255
"""Longer is not a zone name (and is refused without asking the database)."""


def _choice(raw: Mapping[str, Any], key: str, allowed: Sequence[str], where: str,
            faults: list[str]) -> str:
    value = raw.get(key, allowed[0])
    if value not in allowed:
        faults.append(f"{where}: {key} must be one of {', '.join(allowed)}")
        return allowed[0]
    return str(value)


def _catchup_max(value: Any, where: str, faults: list[str]) -> int:
    if value is None:
        return DEFAULT_CATCHUP_MAX
    if type(value) is not int or not 1 <= value <= MAX_CATCHUP_MAX:
        faults.append(f"{where}: catchup_max must be an integer from 1 to {MAX_CATCHUP_MAX}")
        return DEFAULT_CATCHUP_MAX
    return value


def _grace(value: Any, where: str, faults: list[str]) -> float:
    if value is None:
        return DEFAULT_MISFIRE_GRACE
    if not finite_number(value) or value < 0:
        faults.append(f"{where}: misfire_grace must be a number of seconds >= 0")
        return DEFAULT_MISFIRE_GRACE
    return float(value)


def _start_at(value: Any, where: str, faults: list[str]) -> int | None:
    if value is None:
        return None
    at = parse_instant(value) if isinstance(value, str) else None
    if at is None:
        faults.append(f"{where}: start_at must be {RFC3339_HINT}")
    return at


def schedule_spec_faults(nodes: Sequence[ScheduleNode], faults: list[str]) -> None:
    """A spec with a schedule node has exactly that one node, which has no ``needs``,
    ``when`` or ``on_error`` (it starts with the workflow and never finishes)."""
    scheduled = [n for n in nodes if n.schedule is not None]
    if not scheduled:
        return
    if len(nodes) != 1:
        faults.append(f"node {scheduled[0].id!r}: a schedule's spec has exactly one node, "
                      f"the schedule (got {len(nodes)})")
    for n in scheduled:
        for key, value in (("needs", n.needs), ("when", n.when), ("on_error", n.on_error)):
            if value:
                faults.append(f"node {n.id!r}: a schedule node takes no {key!r}")
