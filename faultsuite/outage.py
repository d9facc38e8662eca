"""Infrastructure faults during a batch: the broker SIGKILLed and started again, the
broker frozen (SIGSTOP) and thawed (SIGCONT), PostgreSQL stopped and started again.

They run on a private broker and database (``infra``). The fault comes mid-batch, once
``after_events`` history events of the batch have been seen (dispatches in flight,
attempts running). While it lasts the gateway is probed every ``PROBE_S``: ``/ready``
must answer 503 naming the lost part within ``unready_within_s``; a read
(``GET /v1/workflows/{id}``) must answer 503 problem+json with ``Retry-After`` while
PostgreSQL is down and 200 while only Kafka is, never a 500 or no answer. After
``down_s`` the part is started again (or thawed), and ``/ready`` must be 200 again
within ``recover_within_s`` with no process restarted by hand (the supervisor restarts
only what died, and counts it). The run's own checks then say whether every workflow
ended as in a fault-free run, nothing lost and nothing stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from faultsuite.auth import client_headers
from faultsuite.infra import PrivateInfra
from tests.polling import scaled

PROBE_S = 0.5
"""How often the gateway is probed during an outage, seconds."""
PROBE_TIMEOUT_S = 10.0
"""The longest one probe may wait for an answer, seconds: a probe answered later than
that counts as no answer."""
WHATS = ("broker_sigkill", "broker_sigstop", "postgres_stop")
"""The infrastructure faults."""
PART = {"broker_sigkill": "Kafka", "broker_sigstop": "Kafka", "postgres_stop": "PostgreSQL"}
"""Which part each fault takes away, as ``/ready`` names it."""
Progress = Callable[[], tuple[int, float]]
"""The batch's history events seen so far, and the share of its workflows terminal."""


@dataclass(frozen=True)
class Outage:
    """One infrastructure fault of a run.

    Attributes:
        what: one of ``WHATS``.
        down_s: seconds from the fault to the restart or ``SIGCONT`` (a restarted
            broker then takes a while to serve again).
        after_events: history events of the batch seen before the fault.
        unready_within_s: how soon ``/ready`` must answer 503 once the part is lost,
            seconds (scaled, see ``tests/polling.py``).
        recover_within_s: how soon ``/ready`` must answer 200 again once the part is
            back, seconds (scaled).
    """

    what: str
    down_s: float
    after_events: int = 25
    unready_within_s: float = 5.0
    recover_within_s: float = 90.0

    def __post_init__(self) -> None:
        if self.what not in WHATS:
            raise ValueError(f"unknown infrastructure fault {self.what!r} (one of {WHATS})")


@dataclass
class OutageLog:
    """What one outage did.

    Attributes:
        what: the fault.
        at_s: seconds from the start of the script to the fault (None: never came).
        lasted_s: seconds from the fault until the part served again.
        events_before: history events of the batch seen before the fault.
        events_during: history events of the batch seen from the fault until the part
            served again (while the broker is lost, none can be read: those are the
            ones read once it was back).
        terminal_share: the share of the batch terminal at the fault.
        terminal_share_after: the share terminal when the part served again.
        unready_after_s: seconds from the fault to ``/ready``'s first 503 naming the part.
        ready_again_after_s: seconds from the part serving again to ``/ready``'s 200.
        answers: ``"<route> <status>"`` -> how often the probes got it during the outage
            (status 0: no answer within ``PROBE_TIMEOUT_S``).
        violations: what the outage's checks found, one line each.
    """

    what: str
    at_s: float | None = None
    lasted_s: float | None = None
    events_before: int = 0
    events_during: int = 0
    terminal_share: float = 0.0
    terminal_share_after: float = 0.0
    unready_after_s: float | None = None
    ready_again_after_s: float | None = None
    answers: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        """The run's figures this outage adds: ``kills``, ``pauses`` and ``outages``."""
        return {"kills": {"broker SIGKILL": 1} if self.what == "broker_sigkill" else {},
                "pauses": int(self.what == "broker_sigstop"),
                "outages": {self.what: int(self.at_s is not None)}}


@dataclass
class OutageScript:
    """Runs an ``Outage`` on ``infra`` during a batch (see the module's docstring).

    Attributes:
        outage: the fault.
        infra: the private broker and database.
        gateway: the gateway's base URL.
        progress: how far the batch is.
        read_id: a workflow id of the batch, for the read probe.
        log: what happened.
    """

    outage: Outage
    infra: PrivateInfra
    gateway: str
    progress: Progress
    read_id: str
    log: OutageLog = field(init=False)

    def __post_init__(self) -> None:
        self.log = OutageLog(self.outage.what)

    async def run(self) -> None:
        """Wait for the batch to be under way, inject, probe, restore, check recovery."""
        began = time.monotonic()
        events = await self._under_way()
        if events is None:
            return
        log, part = self.log, PART[self.outage.what]
        log.at_s, log.events_before = round(time.monotonic() - began, 2), events
        log.terminal_share = round(self.progress()[1], 3)
        lost_at = time.monotonic()
        async with httpx.AsyncClient(base_url=self.gateway, timeout=PROBE_TIMEOUT_S,
                                     headers=client_headers()) as client:
            probing: asyncio.Task[None] | None = None
            try:
                await asyncio.to_thread(self._inject)  # returns once the process is gone
                probing = asyncio.create_task(self._probe(client, lost_at, part))
                await asyncio.sleep(self.outage.down_s)
            finally:
                if probing is not None:  # before the restore: it counts the outage only
                    probing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await probing
                await asyncio.to_thread(self._restore)
            back_at = time.monotonic()
            log.lasted_s = round(back_at - lost_at, 1)
            now_events, share = self.progress()
            log.events_during, log.terminal_share_after = now_events - events, round(share, 3)
            log.ready_again_after_s = await _ready_again(
                client, scaled(self.outage.recover_within_s), back_at)
        self._judge(part)

    async def _under_way(self) -> int | None:
        """Wait for ``after_events`` events of the batch; their number, or None (with a
        violation) when the batch ended first."""
        deadline = time.monotonic() + scaled(300)
        while True:
            events, share = self.progress()
            if events >= self.outage.after_events and share < 1.0:
                return events
            if share >= 1.0:
                self.log.violations.append(f"{self.outage.what}: the batch ended before the "
                                           "fault came: it proved nothing")
                return None
            if time.monotonic() > deadline:
                self.log.violations.append(
                    f"{self.outage.what}: the batch not under way after {scaled(300):g} s "
                    f"({events} history events): no fault injected")
                return None
            await asyncio.sleep(0.02)

    def _inject(self) -> None:
        what = self.outage.what
        if what == "broker_sigkill":
            self.infra.kill_broker()
        elif what == "broker_sigstop":
            self.infra.pause_broker()
        else:
            self.infra.crash_postgres()

    def _restore(self) -> None:
        what = self.outage.what
        if what == "broker_sigkill":
            self.infra.start_broker()
        elif what == "broker_sigstop":
            self.infra.resume_broker()
        else:
            self.infra.start_postgres()

    async def _probe(self, client: httpx.AsyncClient, lost_at: float, part: str) -> None:
        """Probe ``/ready`` and a read until cancelled, counting the answers."""
        answers: Counter[str] = Counter()
        while True:
            ready = await _get(client, "/ready")
            if (ready is not None and ready.status_code == 503 and part in ready.text
                    and self.log.unready_after_s is None):
                self.log.unready_after_s = round(time.monotonic() - lost_at, 2)
            read = await _get(client, f"/v1/workflows/{self.read_id}")
            for route, response in (("GET /ready", ready), ("GET /v1/workflows/{id}", read)):
                answers[f"{route} {_described(response)}"] += 1
            self.log.answers = dict(answers)
            await asyncio.sleep(PROBE_S)

    def _judge(self, part: str) -> None:
        """The outage's own checks, as violations."""
        log, out, what = self.log, self.log.violations, self.outage.what
        if log.unready_after_s is None or log.unready_after_s > scaled(
                self.outage.unready_within_s):
            out.append(f"{what}: /ready did not answer 503 naming {part} within "
                       f"{scaled(self.outage.unready_within_s):g} s (first at "
                       f"{log.unready_after_s} s; answers {log.answers})")
        if log.ready_again_after_s is None:
            out.append(f"{what}: /ready not 200 again within "
                       f"{scaled(self.outage.recover_within_s):g} s of {part} serving again")
        read_ok = "503 problem+json Retry-After" if part == "PostgreSQL" else "200"
        wrong = {k: n for k, n in log.answers.items()
                 if k.startswith("GET /v1/") and not k.endswith(read_ok)}
        if wrong:
            out.append(f"{what}: a read during the outage answered other than "
                       f"{read_ok}: {wrong}")
        if part == "PostgreSQL" and log.events_during == 0 and log.terminal_share < 1.0:
            out.append(f"{what}: no history event recorded while PostgreSQL was down: "
                       "the workflows did not go on without the projection")


async def _get(client: httpx.AsyncClient, path: str) -> httpx.Response | None:
    """GET ``path``; None when there was no answer (a connection error or timeout)."""
    try:
        return await client.get(path)
    except httpx.HTTPError:
        return None


def _described(response: httpx.Response | None) -> str:
    """``"0"`` (no answer), ``"200"``, or for a 503 ``"503 problem+json Retry-After"`` with
    whichever of the two it carried."""
    if response is None:
        return "0"
    words = [str(response.status_code)]
    if response.status_code == 503:
        if response.headers.get("content-type") == "application/problem+json":
            words.append("problem+json")
        if response.headers.get("retry-after"):
            words.append("Retry-After")
    return " ".join(words)


async def _ready_again(client: httpx.AsyncClient, timeout_s: float, since: float,
                       ) -> float | None:
    """Seconds from ``since`` to ``/ready``'s first 200, or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        response = await _get(client, "/ready")
        if response is not None and response.status_code == 200:
            return round(time.monotonic() - since, 2)
        await asyncio.sleep(0.2)
    return None
