"""Valid workflows paused and resumed while they run, between the bad inputs: each must
still succeed with its expected output (docs/architecture.md §4s).

A paused run's workflow sleeps ``NAP_S`` seconds between its first task and the rest,
so that the pause lands while it runs (its sleep's timer comes due while it is paused
and fires at the resume). Each run is paused (request id ``<id>-p``), held paused for
``NAP_S``, resumed (``<id>-r``), and at once sent a copy of its pause (the same request
id; both are keyed by the run's id, so the copy follows the resume on its partition),
which must change nothing: a run that recorded a request's id ignores it. Half
of them are asked over HTTP (``POST /v1/workflows/{id}/pause|resume``), half straight
on ``control`` (``PauseRequested``, ``ResumeRequested``).

Once the runs have ended, ``history_faults`` reads each one's history: one
``WorkflowPaused``, one ``WorkflowResumed``, nothing dispatched between them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from fuzzer.bases import avro
from fuzzer.kafka_side import send
from fuzzer.mutants import Mutant
from headwater.core import events as ev
from headwater.core.status import WorkflowStatus
from ops.sandbox import Sandbox

NAP_S = 2
"""The paused workflow's sleep, and how long each run is held paused, seconds."""
PAUSED_SPEC: dict[str, Any] = {
    "name": "fuzz-valid-paused",
    "nodes": [
        {"id": "a", "task": "bench.noop"},
        {"id": "s", "kind": "sleep", "duration": NAP_S, "needs": ["a"]},
        {"id": "b", "task": "bench.noop", "needs": ["s"], "input": {"x": "${nodes.a.output}"}},
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "bench.noop",
         "needs": ["b"], "input": {"i": "${item}"}},
    ],
    "output": {"items": "${input.items}", "mapped": "${nodes.m.output}"},
}
"""A task, a sleep, a task and a three-item map, on the sandbox's workers."""
PAUSED_INPUT = {"items": [1, 2, 3]}
PAUSED_OUTPUT = {"items": [1, 2, 3], "mapped": [None, None, None]}
"""What every paused run must end with (``bench.noop`` returns null)."""
BY = "fuzz"
TERMINAL = {s.value for s in WorkflowStatus if s.terminal}


@dataclass
class Pausing:
    """One run paused and resumed, and what happened on the way.

    Attributes:
        wid: the run's id.
        how: ``http`` or ``kafka``: how it was submitted, paused and resumed.
        steps: what each step saw, in order (for the report).
        paused: whether the run was seen paused (False: it ended first, or was never
            seen paused before the wait gave up).
        faults: broken promises seen on the way (an answer other than 202, a run that
            stayed paused after its resume).
    """

    wid: str
    how: str
    steps: list[str] = field(default_factory=list)
    paused: bool = False
    faults: list[str] = field(default_factory=list)

    @property
    def pause_id(self) -> str:
        """The pause's request id (its copy after the resume carries it too)."""
        return f"{self.wid}-p"

    @property
    def resume_id(self) -> str:
        """The resume's request id."""
        return f"{self.wid}-r"


def pause_records(wid: str, at_ms: int) -> tuple[ev.PauseRequested, ev.ResumeRequested]:
    """The pause and the resume of ``wid``, as a producer on ``control`` sends them."""
    p = Pausing(wid, "kafka")
    return (ev.PauseRequested(wid, at_ms, p.pause_id, BY, "fuzz: paused while it runs"),
            ev.ResumeRequested(wid, at_ms, p.resume_id, BY))


@dataclass
class PauseFlow:
    """Pauses and resumes one run on the sandbox (``run``).

    Args:
        sandbox: where it runs.
        client: the HTTP client.
        timeout_s: the longest wait for each state, seconds.
    """

    sandbox: Sandbox
    client: httpx.AsyncClient
    timeout_s: float

    async def run(self, p: Pausing) -> None:
        """Pause, hold, resume, pause again with the first pause's id; note each step.
        A copy that paused the run again would leave it paused: it would not end."""
        if await self._until(p, lambda d: True, "known") is None:
            return
        await self._ask(p, pause=True)
        doc = await self._until(p, lambda d: d.get("paused") is not None, "paused")
        if doc is None or doc["status"] in TERMINAL:
            return
        p.paused = True
        await asyncio.sleep(NAP_S)  # the sleep's timer comes due while paused
        await self._ask(p, pause=False)
        await self._ask(p, pause=True, copy=True)  # behind the resume on its partition
        if await self._until(p, lambda d: d.get("paused") is None, "resumed") is None:
            p.faults.append(f"{p.wid}: still paused {self.timeout_s} s after its resume")

    async def _ask(self, p: Pausing, pause: bool, copy: bool = False) -> None:
        """Send the pause (or its copy) or the resume, over HTTP or to ``control``."""
        what = ("copy of the pause" if copy else "pause") if pause else "resume"
        rid = p.pause_id if pause else p.resume_id
        if p.how == "kafka":
            records = pause_records(p.wid, int(time.time() * 1000))
            base = avro(what, self.sandbox.topics.control, records[0 if pause else 1])
            sent = await send(self.sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"],
                              [Mutant(f"{p.wid}-{what}", "valid", "none", base.topic,
                                      base.key, base.value, base.headers)], 1024 * 1024)
            p.steps.append(f"{what}: {'refused' if sent[0].refused else 'produced'}")
            if sent[0].refused:
                p.faults.append(f"{p.wid}: {what} not produced: {sent[0].refused}")
            return
        action = "pause" if pause else "resume"
        body = {"request_id": rid, **({"reason": "fuzz: paused while it runs"} if pause
                                      else {})}  # a resume takes no reason (422)
        try:
            r = await self.client.post(
                f"{self.sandbox.gateway}/v1/workflows/{p.wid}/{action}", json=body)
        except httpx.HTTPError as e:
            p.faults.append(f"{p.wid}: {what}: {type(e).__name__}: {e}")
            return
        p.steps.append(f"{what}: {r.status_code}")
        if r.status_code != 202 and not (r.status_code == 409 and copy):
            p.faults.append(f"{p.wid}: {what} answered {r.status_code} {r.text[:300]}")

    async def _until(self, p: Pausing, ready: Callable[[dict[str, Any]], bool],
                     what: str) -> dict[str, Any] | None:
        """The run's document once ``ready`` says so or the run has ended; None (noted)
        after ``timeout_s``."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            try:
                r = await self.client.get(f"{self.sandbox.gateway}/v1/workflows/{p.wid}")
            except httpx.HTTPError:
                r = None
            if r is not None and r.status_code == 200:
                doc: dict[str, Any] = r.json()
                if ready(doc) or doc.get("status") in TERMINAL:
                    p.steps.append(f"{what}: {doc.get('status')}"
                                   f"{', paused' if doc.get('paused') else ''}")
                    return doc
            await asyncio.sleep(0.2)
        p.steps.append(f"{what}: not seen in {self.timeout_s} s")
        return None


def history_faults(p: Pausing, history: Sequence[ev.HistoryEvent]) -> list[str]:
    """What is wrong with a paused run's history: a pause recorded other than once (a
    copy after the resume must record nothing), a resume other than once, a task
    dispatched between them. A run never seen paused (it ended first) may have
    neither."""
    types = [e.type for e in history]
    paused, resumed = types.count("WorkflowPaused"), types.count("WorkflowResumed")
    if not p.paused and paused == resumed == 0:
        return []
    out = []
    if paused != 1:
        out.append(f"{p.wid}: {paused} WorkflowPaused, not 1 (the copy of the pause after "
                   "the resume must record nothing)")
    if resumed != 1:
        out.append(f"{p.wid}: {resumed} WorkflowResumed, not 1")
    if paused and resumed:
        start, end = types.index("WorkflowPaused"), types.index("WorkflowResumed")
        out += [f"{p.wid}: {e.body.node}[{e.body.index}] dispatched while paused "
                f"(seq {e.seq})" for e in history[start:end]
                if isinstance(e.body, ev.TaskDispatched)]
    return out


def output_fault(p: Pausing, doc: dict[str, Any] | None) -> str:
    """Why a paused run's document is not that of a success with ``PAUSED_OUTPUT``
    (``""``: it is)."""
    if doc is None:
        return f"{p.wid}: no document"
    if doc.get("status") != WorkflowStatus.SUCCEEDED.value:
        return f"{p.wid}: {doc.get('status')}"
    if doc.get("output") != PAUSED_OUTPUT:
        return f"{p.wid}: output {doc.get('output')!r:.300}, not {PAUSED_OUTPUT!r}"
    return ""
