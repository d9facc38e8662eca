"""The schedule a fault run keeps firing beside its batch, and its audit.

Before the batch is submitted, the run puts the schedule ``NAME`` (``PUT
/v1/schedules/{name}``, sent again after a lost connection or a retryable answer, like a
definition's ``PUT``: the same body answers the same generation). It starts a run of the
definition ``RUN_DEFINITION`` every 2 s (``CRON``), with ``overlap: allow`` and
``catchup: all`` (``catchup_max`` as large as allowed, a short ``misfire_grace``): no
fire time may be skipped, so a coordinator killed meanwhile makes runs late, never lost.
Once every workflow of the batch has ended, the run deletes the schedule (``DELETE``)
and waits until the schedule workflow is cancelled and every run it started has ended.

The audit, on the events topic (docs/definitions.md, "Schedules"): each fire time is recorded by one
``ScheduleFired`` only, whatever was killed; the fire times are consecutive cron times
from the first to the last (none missing, none skipped); each started fire's run was
accepted once (one ``WorkflowAccepted``), ran ``RUN_DEFINITION`` and succeeded; the
schedule workflow ends cancelled; and no run exists that no fire started. The schedule
workflow and its runs are not compared with the fault-free run (how many fire depends on
time): their figures are reported instead (``ScheduleAudit.figures``).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from faultsuite.audit import WorkflowAudit, timeline
from faultsuite.auth import client_headers
from faultsuite.batch import Definition, definitions
from faultsuite.client import PUT_RETRYABLE_STATUS, until_answered
from faultsuite.shapes import CHILD_DEFINITION, Sizes
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.kinds.schedule.cron import MAX_CATCHUP_MAX, ScheduleSpec, next_fire_ms
from load.kafka_io import Seen
from tests.polling import scaled

NAME = "fault-tick"
"""The schedule's name (its workflow: ``schedule:fault-tick:1`` on a fresh sandbox)."""
CRON = "* * * * * */2"
"""Every 2 s (croniter's sixth field: seconds)."""
RUN_DEFINITION = f"{CHILD_DEFINITION}@1"
"""What each fire runs: two short digests (``shapes.child_inner``)."""
RUN_INPUT = {"value": "tick"}
"""Each run's input (the same every time: every run ends with the same output)."""
MISFIRE_GRACE_S = 1.0
"""A fire time whose timer fires later than this is caught up (``catchup: all``)."""
DELETE_DONE_STATUSES = (204,)
"""``DELETE``'s answer that it took effect (a later 404 after a lost answer too)."""


def body() -> dict[str, Any]:
    """The ``PUT /v1/schedules/{NAME}`` body (the same on every retry)."""
    return {"cron": CRON, "definition": RUN_DEFINITION, "input": RUN_INPUT,
            "overlap": "allow", "catchup": "all", "catchup_max": MAX_CATCHUP_MAX,
            "misfire_grace": MISFIRE_GRACE_S}


def with_run_definition(needed: Sequence[Definition]) -> list[Definition]:
    """``needed`` and, when it lacks it, the definition the schedule's runs run."""
    if any(d.name == CHILD_DEFINITION for d in needed):
        return list(needed)
    return [*needed, definitions(Sizes())[CHILD_DEFINITION]]


@dataclass
class ScheduleRun:
    """The schedule of one run, as the HTTP answers and the events topic show it.

    Attributes:
        base_url: the gateway.
        workflow_id: the schedule workflow (``PUT``'s answer), or ``""`` before it.
        answers: ``put`` and ``delete`` -> the HTTP status of each attempt (0: no answer).
        errors: final failures, one line each.
        ended: the schedule workflow's terminal event was seen.
        started: the run ids of ``started`` fires seen.
        runs_ended: runs whose terminal event was seen.
    """

    base_url: str
    workflow_id: str = ""
    answers: dict[str, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    ended: bool = False
    started: set[str] = field(default_factory=set)
    runs_ended: set[str] = field(default_factory=set)

    def on_event(self, seen: Seen) -> None:
        """Follow one record of the events topic (a ``Tail``'s ``on_record``)."""
        e = seen.value
        wid = e.workflow_id
        if self.workflow_id and wid == self.workflow_id:
            self.ended = self.ended or e.terminal
            if isinstance(e.body, ev.ScheduleFired) and e.body.run_id is not None:
                self.started.add(e.body.run_id)
        elif self.workflow_id and wid.startswith(f"{self.workflow_id}:") and e.terminal:
            self.runs_ended.add(wid)

    def done(self) -> bool:
        """Whether the schedule workflow ended and every run it started did too (True
        when it was never put)."""
        return not self.workflow_id or (self.ended and self.started <= self.runs_ended)

    def pending(self) -> str:
        """What ``done`` still waits for (a violation's wording)."""
        runs = sorted(self.started - self.runs_ended)
        return (f"schedule {self.workflow_id}: {'ended' if self.ended else 'not ended'}, "
                f"{len(runs)} runs not ended {runs[:5]}")

    async def put(self, timeout_s: float = 120.0) -> None:
        """``PUT`` the schedule until answered 200 or 201 or ``timeout_s`` (scaled)."""
        async with httpx.AsyncClient(base_url=self.base_url, timeout=15,
                                     headers=client_headers()) as client:
            send = functools.partial(client.put, f"/v1/schedules/{quote(NAME, safe='')}",
                                     json=body())
            response, last = await until_answered(
                send, self.answers.setdefault("put", []), time.monotonic() + scaled(timeout_s),
                PUT_RETRYABLE_STATUS)
        if response is None or response.status_code not in (200, 201):
            self.errors.append(f"schedule {NAME}: not put: {last}")
            return
        self.workflow_id = str(response.json()["workflow_id"])

    async def delete(self, timeout_s: float = 120.0) -> None:
        """``DELETE`` the schedule until answered 204 (or 404 after an attempt whose
        answer was lost or retryable: that one took effect) or ``timeout_s`` (scaled)."""
        if not self.workflow_id:
            return
        answers = self.answers.setdefault("delete", [])
        async with httpx.AsyncClient(base_url=self.base_url, timeout=15,
                                     headers=client_headers()) as client:
            send = functools.partial(client.delete, f"/v1/schedules/{quote(NAME, safe='')}")
            response, last = await until_answered(
                send, answers, time.monotonic() + scaled(timeout_s), PUT_RETRYABLE_STATUS)
        if response is not None and (response.status_code in DELETE_DONE_STATUSES or (
                response.status_code == 404 and len(answers) > 1)):
            return
        self.errors.append(f"schedule {NAME}: not deleted: {last}")

    async def delete_and_wait(self, wait: Callable[[Callable[[], bool], float, str],
                                                   Awaitable[None]],
                              timeout_s: float) -> None:
        """``delete``, then ``await wait(self.done, timeout_s, what)`` (a ``Tail``'s
        ``wait_until``); a timeout is one of ``errors``."""
        await self.delete()
        try:
            await wait(self.done, scaled(timeout_s), "the schedule and its runs ended")
        except TimeoutError:
            self.errors.append(f"not ended after its DELETE: {self.pending()}")


@dataclass
class ScheduleAudit:
    """What the schedule workflow's history and its runs' say.

    Attributes:
        workflow_id: the schedule workflow.
        run_ids: the runs (children of the schedule workflow, and started fires' runs).
        fires: fire time (ms) -> how many ``ScheduleFired`` (distinct events) record it.
        outcomes: fire outcome -> how many.
        lateness_ms: per fire, ``at_ms - fire_ms``.
        violations: broken invariants, one line each.
        evidence: the events-topic timeline of the schedule workflow when any.
    """

    workflow_id: str
    run_ids: set[str] = field(default_factory=set)
    fires: Counter[int] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    lateness_ms: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    evidence: dict[str, list[str]] = field(default_factory=dict)

    def ids(self) -> set[str]:
        """The schedule workflow and its runs (kept out of the batch's comparison)."""
        return {self.workflow_id, *self.run_ids}

    def figures(self) -> dict[str, Any]:
        """``fires`` (distinct fire times), ``runs``, ``outcomes`` and the most a fire
        came late (``latest_fire_s``)."""
        return {"fires": len(self.fires), "runs": len(self.run_ids),
                "outcomes": dict(self.outcomes),
                "latest_fire_s": round(max(self.lateness_ms, default=0) / 1000, 1)}


def set_apart(workflow_id: str, records: Sequence[Record],
              audits: Mapping[str, WorkflowAudit],
              ) -> tuple[dict[str, WorkflowAudit], ScheduleAudit | None]:
    """The audits but the schedule workflow's and its runs', and the schedule's audit
    (None, and every audit, when no schedule was put: ``workflow_id`` is ``""``)."""
    if not workflow_id:
        return dict(audits), None
    found = audit_schedule(workflow_id, records, audits)
    if found.violations:
        found.evidence[workflow_id] = timeline(workflow_id, records)
    return {w: a for w, a in audits.items() if w not in found.ids()}, found


def _history(workflow_id: str, records: Iterable[Record]) -> list[ev.HistoryEvent]:
    """The first record of each seq of ``workflow_id``, in seq order."""
    first: dict[int, ev.HistoryEvent] = {}
    for r in records:
        if isinstance(r.value, ev.HistoryEvent) and r.value.workflow_id == workflow_id:
            first.setdefault(r.value.seq, r.value)
    return [first[s] for s in sorted(first)]


def audit_schedule(workflow_id: str, records: Sequence[Record],
                   audits: Mapping[str, WorkflowAudit]) -> ScheduleAudit:
    """Check the schedule workflow ``workflow_id`` and its runs (see the module's
    docstring) on the events topic's ``records``, with every workflow's ``audits``."""
    a = ScheduleAudit(workflow_id)
    started: list[str] = []
    for e in _history(workflow_id, records):
        if isinstance(e.body, ev.ScheduleFired):
            a.fires[e.body.fire_ms] += 1
            a.outcomes[e.body.outcome] += 1
            a.lateness_ms.append(e.body.at_ms - e.body.fire_ms)
            if e.body.run_id is not None:
                started.append(e.body.run_id)
    a.run_ids = {*started, *(r.value.workflow_id for r in records
                             if isinstance(r.value, ev.HistoryEvent)
                             and isinstance(r.value.body, ev.ParentLinked)
                             and r.value.body.parent_id == workflow_id)}
    own = audits.get(workflow_id)
    if own is None:
        a.violations.append(f"{workflow_id}: the schedule workflow has no history")
        return a
    a.violations += own.violations()
    if own.outcome is not None and own.outcome.status != "cancelled":
        a.violations.append(f"{workflow_id}: ended {own.outcome.status}, not cancelled")
    a.violations += _fire_faults(a)
    a.violations += _run_faults(a, started, records, audits)
    return a


def _fire_faults(a: ScheduleAudit) -> list[str]:
    """Fire times recorded twice, skipped, or missing between the first and the last."""
    wid, out = a.workflow_id, []
    if not a.fires:
        return [f"{wid}: the schedule never fired"]
    twice = sorted(ms for ms, n in a.fires.items() if n > 1)
    if twice:
        out.append(f"{wid}: {len(twice)} fire times recorded more than once: {twice[:5]}")
    skipped = {o: n for o, n in a.outcomes.items() if o != "started"}
    if skipped:
        out.append(f"{wid}: fires skipped ({skipped}) though overlap allow, catchup all")
    spec, times = ScheduleSpec(CRON), sorted(a.fires)
    missing = [f"{t}->{u}" for t, u in itertools.pairwise(times)
               if next_fire_ms(spec, t) != u]
    if missing:
        out.append(f"{wid}: cron times missing between fires {missing[:5]}")
    return out


def _run_faults(a: ScheduleAudit, started: Sequence[str], records: Sequence[Record],
                audits: Mapping[str, WorkflowAudit]) -> list[str]:
    """Runs started twice, accepted other than once, not succeeded, of another
    definition, or never started by a fire; and each run's own history invariants."""
    wid, out = a.workflow_id, []
    counted = Counter(started)
    out += [f"{wid}: run {r} started by {n} fires" for r, n in counted.items() if n > 1]
    out += [f"{wid}: run {r} exists but no fire started it"
            for r in sorted(a.run_ids - set(counted))]
    accepted = Counter(r for r in a.run_ids for e in _history(r, records)
                       if isinstance(e.body, ev.WorkflowAccepted))
    for run_id in sorted(counted):
        audit = audits.get(run_id)
        if accepted[run_id] != 1:
            out.append(f"{run_id}: {accepted[run_id]} WorkflowAccepted (expected 1)")
        if audit is None:
            continue
        out += audit.violations()
        status = audit.outcome.status if audit.outcome is not None else "not terminal"
        if status != "succeeded":
            out.append(f"{run_id}: ended {status}, not succeeded")
        if audit.definition != RUN_DEFINITION:
            out.append(f"{run_id}: ran definition {audit.definition}, "
                       f"expected {RUN_DEFINITION}")
    return out
