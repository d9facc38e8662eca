"""Submitting a batch over HTTP as a careful client does, and reading the projection.

A client that loses its connection mid-request does not know whether the submission was
stored, so it sends the same id and body again until it gets an answer: 202 (created)
or 200 (the same run). That is what makes a gateway killed after producing harmless.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from load.faultkit.audit import EndState
from load.faultkit.batch import Signal, Submission
from tests.waiting import scaled

RETRYABLE_STATUS = (409, 429, 502, 503)
"""Answers that mean "try again" (409: the id is being submitted right now)."""


@dataclass
class SubmitLog:
    """What submitting a batch took.

    Attributes:
        answers: workflow id -> the HTTP status of each attempt (0: no answer, the
            connection failed).
        errors: final failures, one line each (a submission that never got 200 or 202).
    """

    answers: dict[str, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def connection_errors(self) -> int:
        """POSTs that got no answer."""
        return sum(a.count(0) for a in self.answers.values())

    def same_run_after_error(self) -> int:
        """Submissions that lost a connection and, sent again, got 200 (the same run)."""
        return sum(1 for a in self.answers.values() if 0 in a and a[-1] == 200)

    def created_after_error(self) -> int:
        """Submissions that lost a connection and, sent again, got 202 (nothing had been
        kept of the first POST)."""
        return sum(1 for a in self.answers.values() if 0 in a and a[-1] == 202)

    def statuses(self) -> dict[str, int]:
        """How often each status was answered (``"0"``: no answer)."""
        return dict(Counter(str(s) for a in self.answers.values() for s in a))


async def submit_batch(base_url: str, batch: Sequence[Submission], parallel: int = 4,
                       gap_s: float = 0.0, timeout_s: float = 120.0) -> SubmitLog:
    """POST every submission, ``parallel`` at once and ``gap_s`` apart, each until it is
    answered 200 or 202 or ``timeout_s`` (scaled, see ``tests/waiting.py``) has passed."""
    log = SubmitLog()
    limit = asyncio.Semaphore(parallel)
    async with httpx.AsyncClient(base_url=base_url, timeout=15) as client:

        async def one(s: Submission) -> None:
            async with limit:
                answers = log.answers.setdefault(s.id, [])
                error = await _submit(client, s, answers, time.monotonic() + scaled(timeout_s))
                if error:
                    log.errors.append(f"{s.id}: {error}")
                    return
            for sig in s.signals:
                signals.append(asyncio.create_task(_signal_later(client, s.id, sig, log,
                                                                 scaled(timeout_s))))

        tasks = []
        signals: list[asyncio.Task[None]] = []
        for s in batch:
            tasks.append(asyncio.create_task(one(s)))
            if gap_s:
                await asyncio.sleep(gap_s)
        await asyncio.gather(*tasks)
        await asyncio.gather(*signals)
    return log


SIGNAL_RETRYABLE = {404, *RETRYABLE_STATUS}
"""Answers after which a signal is sent again: 404 while the projection has not caught up
with the submission yet, and the submission's retryable ones."""


async def _signal_later(client: httpx.AsyncClient, workflow_id: str, sig: Signal,
                        log: SubmitLog, timeout_s: float) -> None:
    """Send ``sig`` ``sig.after_s`` after the submission, again after a transport error
    or a retryable answer (same ``signal_id``: it is taken once) until 202 or
    ``timeout_s``; a failure is one of ``log.errors``."""
    await asyncio.sleep(sig.after_s)
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            response = await client.post(f"/v1/workflows/{workflow_id}/signals/{sig.name}",
                                         json={"signal_id": sig.signal_id,
                                               "fields": sig.fields})
        except httpx.TransportError as e:
            last = f"{type(e).__name__}: {e}"
            await asyncio.sleep(0.5)
            continue
        if response.status_code == 202:
            return
        last = f"{response.status_code} {response.text[:300]}"
        if response.status_code not in SIGNAL_RETRYABLE:
            break
        await asyncio.sleep(float(response.headers.get("retry-after", "0.5") or 0.5))
    log.errors.append(f"{workflow_id}: signal {sig.name} not accepted: {last}")


async def _submit(client: httpx.AsyncClient, s: Submission, answers: list[int],
                  deadline: float) -> str:
    """Submit until accepted; return ``""`` or why it never was."""
    last = ""
    while time.monotonic() < deadline:
        try:
            response = await client.post("/v1/workflows", json=s.body())
        except httpx.TransportError as e:
            answers.append(0)
            last = f"{type(e).__name__}: {e}"
            await asyncio.sleep(0.5)
            continue
        answers.append(response.status_code)
        if response.status_code in (200, 202):
            if response.json().get("id") != s.id:
                return f"answered for another id: {response.text[:200]}"
            return ""
        last = f"{response.status_code} {response.text[:300]}"
        if response.status_code not in RETRYABLE_STATUS:
            return last
        await asyncio.sleep(float(response.headers.get("retry-after", "0.5") or 0.5))
    return f"not accepted in time; last: {last}"


async def projected(base_url: str, seqs: dict[str, int], timeout_s: float = 60.0,
                    ) -> tuple[dict[str, EndState | None], list[str]]:
    """``GET /v1/workflows/{id}`` for each workflow once the projection has caught up
    with its history (``seq`` at least the given one), all within ``timeout_s`` (scaled,
    see ``tests/waiting.py``).

    Returns:
        The outcome the gateway shows per workflow (None when it never caught up), and
        a line per workflow that did not.
    """
    got: dict[str, EndState | None] = {}
    behind: list[str] = []
    deadline = time.monotonic() + scaled(timeout_s)
    async with httpx.AsyncClient(base_url=base_url, timeout=15) as client:
        for wid, seq in sorted(seqs.items()):
            doc: dict[str, Any] = {}
            while True:
                try:
                    response = await client.get(f"/v1/workflows/{wid}")
                    doc = response.json() if response.status_code == 200 else {}
                except httpx.TransportError:
                    doc = {}
                if doc.get("seq", -1) >= seq or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            if doc.get("seq", -1) >= seq:
                got[wid] = EndState(doc["status"], {n["id"]: n["status"] for n in doc["nodes"]},
                                   doc.get("output"))
            else:
                got[wid] = None
                behind.append(f"{wid}: projection at seq {doc.get('seq')}, history at {seq}")
    return got, behind
