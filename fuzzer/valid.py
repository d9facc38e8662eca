"""Valid workflows submitted between the bad inputs, over HTTP and straight to Kafka: each
must succeed (bad input never loses good input, docs/architecture.md invariant 6). Some
are paused and resumed while they run (``paused``) and must succeed all the same, with
their expected output."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from fuzzer.bases import avro
from fuzzer.kafka_side import send
from fuzzer.mutants import Mutant
from fuzzer.paused import (
    PAUSED_INPUT,
    PAUSED_SPEC,
    PauseFlow,
    Pausing,
    history_faults,
    output_fault,
)
from headwater.core import events as ev
from headwater.core.status import WorkflowStatus
from ops.sandbox import Sandbox
from services.common.settings import DEFAULT_MAX_MESSAGE_BYTES

SPEC: dict[str, Any] = {
    "name": "fuzz-valid",
    "nodes": [
        {"id": "a", "task": "bench.noop"},
        {"id": "b", "task": "bench.noop", "needs": ["a"], "input": {"x": "${nodes.a.output}"}},
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "bench.noop",
         "needs": ["b"], "input": {"i": "${item}"}},
    ],
}
"""A chain into a three-item map, on the sandbox's workers (``bench.noop``)."""
INPUT = {"items": [1, 2, 3]}
TERMINAL = {s.value for s in WorkflowStatus if s.terminal}


@dataclass
class Valid:
    """The valid workflows of a run.

    Attributes:
        sandbox: where they run.
        tag: a prefix for their ids.
        ids: each workflow's id and how it was submitted (``http`` or ``kafka``).
        refused: submissions the gateway did not answer 202 (``id: status body``).
        paused: the ones paused and resumed while they run, by id (among ``ids``).
        flows: their pauses and resumes under way (``start_paused``).
    """

    sandbox: Sandbox
    tag: str
    ids: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    paused: dict[str, Pausing] = field(default_factory=dict)
    flows: list[asyncio.Task[None]] = field(default_factory=list)

    async def submit_http(self, client: httpx.AsyncClient, spec: dict[str, Any] = SPEC,
                          given: Any = INPUT) -> str:
        """Submit one over HTTP; its id."""
        wid = f"{self.tag}-http-{len(self.ids)}"
        self.ids[wid] = "http"
        try:
            r = await client.post(f"{self.sandbox.gateway}/v1/workflows",
                                  json={"id": wid, "workflow": spec, "input": given})
        except httpx.HTTPError as e:
            self.refused.append(f"{wid}: {type(e).__name__}: {e}")
            return wid
        if r.status_code != 202:
            self.refused.append(f"{wid}: {r.status_code} {r.text[:300]}")
        return wid

    async def start_paused(self, client: httpx.AsyncClient, how: str,
                           timeout_s: float) -> None:
        """Submit one of ``PAUSED_SPEC`` over ``how`` (``http`` or ``kafka``) and start
        pausing and resuming it the same way (``PauseFlow``) as a task of its own."""
        if how == "http":
            wid = await self.submit_http(client, PAUSED_SPEC, PAUSED_INPUT)
        else:
            wid = await self.submit_kafka(DEFAULT_MAX_MESSAGE_BYTES, PAUSED_SPEC, PAUSED_INPUT)
        self.paused[wid] = p = Pausing(wid, how)
        flow = PauseFlow(self.sandbox, client, timeout_s)
        self.flows.append(asyncio.create_task(flow.run(p)))

    async def settle(self) -> None:
        """Wait for every pause and resume under way to be done."""
        await asyncio.gather(*self.flows)

    async def submit_kafka(self, max_bytes: int, spec: dict[str, Any] = SPEC,
                           given: Any = INPUT) -> str:
        """Produce one ``WorkflowSubmitted`` to the submissions topic; its id."""
        wid = f"{self.tag}-kafka-{len(self.ids)}"
        self.ids[wid] = "kafka"
        base = avro("valid", self.sandbox.topics.submissions,
                    ev.WorkflowSubmitted(wid, spec, given, int(time.time() * 1000)))
        record = Mutant(f"valid-{wid}", "valid", "none", base.topic, base.key, base.value,
                        base.headers)
        sent = await send(self.sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], [record], max_bytes)
        if sent[0].refused:
            self.refused.append(f"{wid}: not produced: {sent[0].refused}")
        return wid

    async def outcomes(self, client: httpx.AsyncClient, timeout_s: float) -> dict[str, str]:
        """Each workflow's status once every one is terminal, or after ``timeout_s``
        (``missing`` for one the gateway does not know)."""
        return await wait_terminal(client, self.sandbox.gateway, list(self.ids), timeout_s)

    def figures(self, status: dict[str, str]) -> dict[str, Any]:
        """Counts by how they were submitted and how they ended, and which did not
        succeed."""
        return {"submitted": dict(Counter(self.ids.values())),
                "outcomes": dict(Counter(status.values())),
                "not_succeeded": sorted(f"{w}: {s}" for w, s in status.items()
                                        if s != WorkflowStatus.SUCCEEDED.value),
                "refused": self.refused,
                "paused": {"runs": dict(Counter(p.how for p in self.paused.values())),
                           "seen_paused": sum(p.paused for p in self.paused.values()),
                           "steps": {w: p.steps for w, p in self.paused.items()}}}

    async def pause_faults(self, client: httpx.AsyncClient,
                           histories: dict[str, list[ev.HistoryEvent]]) -> list[str]:
        """What went wrong with the paused ones: their steps' faults, their documents
        (``paused.output_fault``), their histories (``paused.history_faults``)."""
        out: list[str] = []
        for wid, p in self.paused.items():
            out += p.faults
            r = await client.get(f"{self.sandbox.gateway}/v1/workflows/{wid}")
            out.append(output_fault(p, r.json() if r.status_code == 200 else None))
            out += history_faults(p, histories.get(wid, []))
        return [line for line in out if line]


async def _status(client: httpx.AsyncClient, gateway: str, wid: str) -> str:
    try:
        r = await client.get(f"{gateway}/v1/workflows/{wid}")
    except httpx.HTTPError as e:
        return f"unreachable ({type(e).__name__})"
    if r.status_code == 404:
        return "missing"
    if r.status_code != 200:
        return f"http {r.status_code}"
    return str(r.json().get("status"))


async def wait_terminal(client: httpx.AsyncClient, gateway: str, ids: list[str],
                        timeout_s: float) -> dict[str, str]:
    """The status of each of ``ids``, once every one is terminal or after ``timeout_s``
    seconds."""
    deadline = time.monotonic() + timeout_s
    status: dict[str, str] = {}
    while True:
        for wid in ids:
            if status.get(wid) not in TERMINAL:
                status[wid] = await _status(client, gateway, wid)
        if all(s in TERMINAL for s in status.values()) or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.5)
