"""Registering a batch's definitions and submitting the batch over HTTP as a careful
client does, and reading the projection.

A client that loses its connection mid-request does not know whether the submission was
stored, so it sends the same id and body again until it gets an answer: 202 (created)
or 200 (the same run). That is what makes a gateway killed after producing harmless.
A definition's ``PUT`` is sent again likewise: the same body as the latest version
answers that version (200), so a repeated ``PUT`` never makes another one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from faultsuite.audit import EndState, definition_ref
from faultsuite.auth import client_headers
from faultsuite.batch import Definition, Signal, Submission
from headwater.blobs import without_hrefs
from tests.polling import scaled

TERMINAL = ("succeeded", "failed", "cancelled")
"""The statuses of a run that has ended."""

RETRYABLE_STATUS = (409, 429, 502, 503)
"""Answers that mean "try again" (409: the id is being submitted right now)."""
PUT_RETRYABLE_STATUS = (429, 502, 503)
"""Answers after which a definition's ``PUT`` is sent again (its 409 means the name has
used every version number: final)."""


@dataclass
class Registered:
    """What registering a batch's definitions took.

    Attributes:
        answers: ``name@version`` -> the HTTP status of each ``PUT`` of that version
            (0: no answer, the connection failed).
        errors: final failures, one line each (a version never stored, or stored as
            another version than expected).
    """

    answers: dict[str, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        """``versions`` stored (answered 200 or 201), the ``statuses`` answered (``"0"``:
        no answer)."""
        return {"versions": sum(1 for a in self.answers.values() if a and a[-1] in (200, 201)),
                "statuses": dict(Counter(str(s) for a in self.answers.values() for s in a))}


async def register(base_url: str, definitions: Sequence[Definition],
                   timeout_s: float = 120.0) -> Registered:
    """``PUT /v1/definitions/{name}`` each version of each definition in order, each
    until answered 200 or 201 or ``timeout_s`` (scaled, see ``tests/polling.py``) has
    passed, and check that it was stored as the version expected (on a fresh sandbox:
    its place in ``versions``). A definition whose version failed gets no later ones
    (they would take its number)."""
    log = Registered()
    async with httpx.AsyncClient(base_url=base_url, timeout=15,
                                 headers=client_headers()) as client:
        for d in definitions:
            for version, spec in enumerate(d.versions, 1):
                error = await _put(client, d.name, version, spec,
                                   log.answers.setdefault(f"{d.name}@{version}", []),
                                   time.monotonic() + scaled(timeout_s))
                if error:
                    log.errors.append(f"definition {d.name}@{version}: {error}")
                    break
    return log


async def _put(client: httpx.AsyncClient, name: str, version: int, spec: dict[str, Any],
               answers: list[int], deadline: float) -> str:
    """Register ``spec`` as ``name``'s version ``version``; ``""`` or why it was not."""
    send = functools.partial(client.put, f"/v1/definitions/{quote(name, safe='')}",
                             json={"workflow": spec})
    response, last = await until_answered(send, answers, deadline, PUT_RETRYABLE_STATUS)
    if response is None:
        return f"not stored in time; last: {last}"
    if response.status_code not in (200, 201):
        return last
    stored = response.json().get("version")
    return "" if stored == version else f"stored as version {stored}"


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

    def retried(self) -> list[str]:
        """The workflows whose submission lost a connection (and was sent again)."""
        return sorted(wid for wid, a in self.answers.items() if 0 in a)

    def statuses(self) -> dict[str, int]:
        """How often each status was answered (``"0"``: no answer)."""
        return dict(Counter(str(s) for a in self.answers.values() for s in a))


async def submit_batch(base_url: str, batch: Sequence[Submission], parallel: int = 4,
                       gap_s: float = 0.0, timeout_s: float = 120.0) -> SubmitLog:
    """POST every submission, ``parallel`` at once and ``gap_s`` apart, each until it is
    answered 200 or 202 or ``timeout_s`` (scaled, see ``tests/polling.py``) has passed."""
    log = SubmitLog()
    limit = asyncio.Semaphore(parallel)
    async with httpx.AsyncClient(base_url=base_url, timeout=15,
                                 headers=client_headers()) as client:

        async def one(s: Submission) -> None:
            if s.rerun_of is not None:  # once its source has ended, not holding a slot
                await _ended(client, s.rerun_of, time.monotonic() + scaled(3 * timeout_s))
            async with limit:
                answers = log.answers.setdefault(s.id, [])
                error = await _submit(client, s, answers, time.monotonic() + scaled(timeout_s))
                if error:
                    log.errors.append(f"{s.id}: {error}")
                    return
            for sig in s.signals:
                signals.append(asyncio.create_task(_signal_later(client, s.id, sig, log,
                                                                 scaled(timeout_s))))
            if s.pause is not None:
                signals.append(asyncio.create_task(_pause_later(client, s.id, s.pause, log,
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


async def signal_all(base_url: str, signals: Sequence[tuple[str, Signal]],
                     parallel: int = 8, timeout_s: float = 120.0) -> SubmitLog:
    """Send each ``(workflow id, signal)`` now (``Signal.after_s`` is not waited for),
    ``parallel`` at once, each as a signal of a batch is sent (again after an error,
    until 202 or ``timeout_s``, scaled: see ``tests/polling.py``).

    Returns:
        The failures in ``errors``, one line each.
    """
    log = SubmitLog()
    limit = asyncio.Semaphore(parallel)
    async with httpx.AsyncClient(base_url=base_url, timeout=15,
                                 headers=client_headers()) as client:

        async def one(workflow_id: str, sig: Signal) -> None:
            async with limit:
                await _signal_later(client, workflow_id, dataclasses.replace(sig, after_s=0),
                                    log, scaled(timeout_s))

        await asyncio.gather(*(one(wid, sig) for wid, sig in signals))
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


async def _pause_later(client: httpx.AsyncClient, workflow_id: str,
                       pause: tuple[float, float], log: SubmitLog, timeout_s: float) -> None:
    """Pause the workflow ``pause[0]`` after its submission and resume it ``pause[1]``
    after the pause was accepted, each sent again (same ``request_id``: the run records
    it once) as a signal is; a run that has ended first (409) is left alone."""
    for verb, after_s in (("pause", pause[0]), ("resume", pause[1])):
        await asyncio.sleep(after_s)
        deadline, last = time.monotonic() + timeout_s, ""
        while time.monotonic() < deadline:
            try:
                response = await client.post(f"/v1/workflows/{workflow_id}/{verb}",
                                             json={"request_id": f"{workflow_id}-{verb}"})
            except httpx.TransportError as e:
                last = f"{type(e).__name__}: {e}"
                await asyncio.sleep(0.5)
                continue
            if response.status_code == 409:
                return  # it ended before: nothing to pause or resume
            if response.status_code == 202:
                break
            last = f"{response.status_code} {response.text[:300]}"
            if response.status_code not in SIGNAL_RETRYABLE:
                deadline = 0.0
                break
            await asyncio.sleep(float(response.headers.get("retry-after", "0.5") or 0.5))
        else:
            deadline = 0.0
        if deadline == 0.0:
            log.errors.append(f"{workflow_id}: {verb} not accepted: {last}")
            return


async def _submit(client: httpx.AsyncClient, s: Submission, answers: list[int],
                  deadline: float) -> str:
    """Submit until accepted (a rerun: rerun); return ``""`` or why it never was."""
    path = "/v1/workflows" if s.rerun_of is None else f"/v1/workflows/{s.rerun_of}/rerun"
    send = functools.partial(client.post, path, json=s.body())
    response, last = await until_answered(send, answers, deadline, RETRYABLE_STATUS)
    if response is None:
        return f"not accepted in time; last: {last}"
    if response.status_code not in (200, 202):
        return last
    if response.json().get("id") != s.id:
        return f"answered for another id: {response.text[:200]}"
    return ""


async def _ended(client: httpx.AsyncClient, workflow_id: str, deadline: float) -> None:
    """Return once the gateway shows ``workflow_id`` ended, or at ``deadline`` (the rerun
    then gets its 409 and says so); errors and 404s are waited out."""
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            response = await client.get(f"/v1/workflows/{workflow_id}")
            if response.status_code == 200 and response.json().get("status") in TERMINAL:
                return
        await asyncio.sleep(0.5)


async def until_answered(send: Callable[[], Awaitable[httpx.Response]], answers: list[int],
                          deadline: float, retryable: Collection[int],
                          ) -> tuple[httpx.Response | None, str]:
    """Send the request again after a transport error (0.5 s later) or a ``retryable``
    status (after its ``Retry-After``, else 0.5 s) until ``deadline`` (monotonic
    seconds); each attempt's status goes to ``answers`` (0: no answer).

    Returns:
        The first answer of another status (None when the deadline passed first), and a
        line on the last failure (``"<status> <body>"``, or the transport error).
    """
    last = ""
    while time.monotonic() < deadline:
        try:
            response = await send()
        except httpx.TransportError as e:
            answers.append(0)
            last = f"{type(e).__name__}: {e}"
            await asyncio.sleep(0.5)
            continue
        answers.append(response.status_code)
        last = f"{response.status_code} {response.text[:300]}"
        if response.status_code not in retryable:
            return response, last
        await asyncio.sleep(float(response.headers.get("retry-after", "0.5") or 0.5))
    return None, last


async def projected(base_url: str, seqs: dict[str, int], timeout_s: float = 60.0,
                    parallel: int = 8) -> tuple[dict[str, EndState | None], list[str]]:
    """``GET /v1/workflows/{id}`` for each workflow once the projection has caught up
    with its history (``seq`` at least the given one), ``parallel`` at once, all within
    ``timeout_s`` (scaled, see ``tests/polling.py``).

    Returns:
        The outcome the gateway shows per workflow (with the definition it shows the
        run ran; None when it never caught up), and a line per workflow that did not.
        References in an output are compared as the history holds them: without the
        ``href`` the gateway adds (``headwater/blobs.py``).
    """
    got: dict[str, EndState | None] = {}
    behind: list[str] = []
    deadline = time.monotonic() + scaled(timeout_s)
    limit = asyncio.Semaphore(parallel)
    async with httpx.AsyncClient(base_url=base_url, timeout=15,
                                 headers=client_headers()) as client:

        async def one(wid: str, seq: int) -> None:
            async with limit:
                doc = await _caught_up(client, wid, seq, deadline)
            if doc.get("seq", -1) >= seq:
                ran = doc.get("definition") or {}
                got[wid] = EndState(doc["status"], {n["id"]: n["status"] for n in doc["nodes"]},
                                   without_hrefs(doc.get("output")),
                                   definition_ref(ran.get("name"), ran.get("version")))
            else:
                got[wid] = None
                behind.append(f"{wid}: projection at seq {doc.get('seq')}, history at {seq}")

        await asyncio.gather(*(one(wid, seq) for wid, seq in sorted(seqs.items())))
    return dict(sorted(got.items())), sorted(behind)


async def _caught_up(client: httpx.AsyncClient, workflow_id: str, seq: int,
                     deadline: float) -> dict[str, Any]:
    """The run document once it shows ``seq`` (or the last one read at ``deadline``,
    monotonic seconds; ``{}`` when none was)."""
    while True:
        try:
            response = await client.get(f"/v1/workflows/{workflow_id}")
            doc: dict[str, Any] = response.json() if response.status_code == 200 else {}
        except httpx.TransportError:
            doc = {}
        if doc.get("seq", -1) >= seq or time.monotonic() > deadline:
            return doc
        await asyncio.sleep(0.2)
