"""The bulk cancel of every run: a few workflows of each batch carry a label
(``LABEL``: ``fault-bulk:<tag>``) and wait for a signal that never comes; once the
gateway finds them all by the label, the run starts a bulk cancel of that label
(``POST /v1/operations``, one id, sent again after an error) while the rest of the
batch is running, and follows the operation to its end (``BulkCancel.run``).

A gateway killed while it works on the operation (``gateway.operation_acted``: its
cancels sent, its record not written; or any kill of the generic runs) leaves it to the
gateway that takes it over once its lease has passed (``LEASE_S`` here, far below the
default), which acts again on targets already acted on. The audit
(``BulkCancel.audit``) then checks what that must not change: each labelled run
cancelled by the operation exactly once (one ``WorkflowCancelled`` with its reason, no
other end), none left running, no run without the label cancelled by it or sent its
cancel, and the operation ``done`` with its counts adding up to its matched count; it
reports how many cancels were sent again (a takeover's, taken by nobody: the runs had
ended).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.operations import cancel_reason
from tests.polling import scaled


class Labelled(Protocol):
    """What the bulk cancel reads of a batch's workflow (``batch.Submission``)."""

    @property
    def id(self) -> str: ...
    @property
    def shape(self) -> str: ...
    @property
    def labels(self) -> dict[str, str] | None: ...


LABEL = "fault-bulk"
"""The label's key; its value is the batch's tag."""
RUNS = 3
"""Labelled workflows in every batch."""
REASON = "fault suite"
"""The bulk cancel's reason (each cancelled run records it, after the operation's id)."""
LEASE_S = 6.0
"""The sandbox's ``HEADWATER_OPERATIONS_LEASE_S``: a killed gateway's operation is taken
over 6 to 8 s later rather than 30 to 40."""
RETRYABLE = {429, 500, 502, 503, 504}
"""Answers after which the operation's request is sent again (same id: one operation)."""


def spec() -> dict[str, Any]:
    """A labelled workflow: one wait for a signal nobody sends (only the cancel ends it,
    so it ends alike with faults and without)."""
    return {"name": "fault-bulk", "nodes": [
        {"id": "hold", "kind": "wait", "signal": "never", "timeout": 3600}]}


def bulk_cancel(gateway: str, batch: Sequence[Labelled],
                headers: dict[str, str]) -> BulkCancel:
    """The bulk cancel of ``batch``'s labelled workflows (none: it does nothing)."""
    targets = [s for s in batch if s.shape == "bulk" and s.labels]
    tag = targets[0].labels[LABEL] if targets and targets[0].labels else ""
    return BulkCancel(gateway, tag, frozenset(s.id for s in targets), headers)


@dataclass
class BulkCancel:
    """The run's bulk cancel and what came of it.

    Attributes:
        gateway: the gateway's URL.
        tag: the batch's tag (the label's value, the operation id's part).
        targets: the labelled workflows.
        headers: the headers of every request (a tenant's token with auth on).
        doc: the operation's last document read (``GET /v1/operations/{id}``).
        answers: the HTTP status of each ``POST /v1/operations`` (0: no answer).
        errors: what went wrong on the way, one line each.
    """

    gateway: str
    tag: str
    targets: frozenset[str]
    headers: dict[str, str] = field(default_factory=dict)
    doc: dict[str, Any] = field(default_factory=dict)
    answers: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def operation_id(self) -> str:
        """The operation's id (its idempotency key)."""
        return f"{self.tag}-bulk-cancel"

    def body(self, dry_run: bool) -> dict[str, Any]:
        """``POST /v1/operations``'s body: cancel every run of the label."""
        return {"action": "cancel", "id": self.operation_id, "reason": REASON,
                "dry_run": dry_run, "filter": {"label": [f"{LABEL}:{self.tag}"]}}

    async def run(self, timeout_s: float = 120.0) -> None:
        """Wait until a dry run matches every target, start the operation, and follow it
        until ``done`` (each within ``timeout_s``, scaled; a failure is one of
        ``errors``)."""
        if not self.targets:
            return
        async with httpx.AsyncClient(base_url=self.gateway, timeout=15,
                                     headers=self.headers) as client:
            found = await self._until(client, "POST", self.body(True), timeout_s,
                                      lambda d: d.get("matched") == len(self.targets))
            if found is None:
                self.errors.append(f"the label never matched the {len(self.targets)} runs")
                return
            started = await self._until(client, "POST", self.body(False), timeout_s,
                                        lambda d: d.get("id") == self.operation_id)
            if started is None:
                self.errors.append(f"operation {self.operation_id} never accepted")
                return
            done = await self._until(client, "GET", None, 3 * timeout_s,
                                     lambda d: d.get("state") == "done")
            if done is None:
                self.errors.append(f"operation {self.operation_id} not done in time: "
                                   f"{self.doc}")

    async def _until(self, client: httpx.AsyncClient, method: str,
                     body: dict[str, Any] | None, timeout_s: float,
                     ok: Any) -> dict[str, Any] | None:
        """Send the request every 0.3 s (again after an error) until its answer's JSON
        is ``ok``; None when ``timeout_s`` (scaled) passed first."""
        path = "/v1/operations" if method == "POST" else f"/v1/operations/{self.operation_id}"
        deadline = time.monotonic() + scaled(timeout_s)
        while time.monotonic() < deadline:
            try:
                response = await client.request(method, path, json=body)
            except httpx.TransportError:
                if method == "POST":
                    self.answers.append(0)
                await asyncio.sleep(0.5)
                continue
            if method == "POST":
                self.answers.append(response.status_code)
            if response.status_code < 300:
                doc = response.json()
                if method == "GET" or not body or not body["dry_run"]:
                    self.doc = doc
                if ok(doc):
                    return dict(doc)
            elif response.status_code not in (*RETRYABLE, 404):
                self.errors.append(f"{method} {path}: {response.status_code} "
                                   f"{response.text[:300]}")
                return None
            await asyncio.sleep(0.3)
        return None

    def audit(self, events: Sequence[Record],
              control: Sequence[Record]) -> tuple[dict[str, Any], list[str]]:
        """The figures and violations of the bulk cancel (see the module), from the
        events and control topics read whole once the batch has ended."""
        if not self.targets:
            return {}, []
        reason = cancel_reason(self.operation_id, REASON)
        found = list(self.errors)
        ends: dict[str, list[Any]] = {}
        seen: set[tuple[str, int]] = set()
        for r in events:
            body = getattr(r.value, "body", None)
            if isinstance(body, ev.WorkflowCancelled | ev.WorkflowSucceeded | ev.WorkflowFailed):
                # a coordinator killed after publishing publishes its batch again: one
                # event is one (workflow id, seq), as every reader of events counts it
                if (r.value.workflow_id, r.value.seq) in seen:
                    continue
                seen.add((r.value.workflow_id, r.value.seq))
                ends.setdefault(r.value.workflow_id, []).append(body)
        for wid in sorted(self.targets):
            got = ends.get(wid, [])
            mine = [e for e in got if isinstance(e, ev.WorkflowCancelled) and e.reason == reason]
            if len(mine) != 1 or len(got) != 1:
                found.append(f"bulk: {wid} (labelled) ended {[type(e).__name__ for e in got]} "
                             f"({len(mine)} cancelled by {self.operation_id}): not cancelled "
                             "exactly once")
        others = sorted(w for w, got in ends.items() if w not in self.targets and any(
            isinstance(e, ev.WorkflowCancelled) and e.reason == reason for e in got))
        found += [f"bulk: {w} (not labelled) cancelled by {self.operation_id}" for w in others]
        sent = Counter(r.value.workflow_id for r in control
                       if isinstance(r.value, ev.CancelRequested) and r.value.reason == reason)
        found += [f"bulk: {w} (not labelled) sent {n} cancel(s) of {self.operation_id}"
                  for w, n in sorted(sent.items()) if w not in self.targets]
        found += [f"bulk: {w} (labelled) sent no cancel" for w in sorted(self.targets)
                  if not sent.get(w)]
        found += self._operation_faults()
        return {"operation": {k: self.doc.get(k) for k in ("state", "matched", "counts")},
                "cancels_sent": sum(sent.values()),
                "cancels_sent_again": sum(n - 1 for n in sent.values() if n > 1),
                "post_statuses": dict(Counter(str(s) for s in self.answers))}, found

    def _operation_faults(self) -> list[str]:
        """The operation's end as the gateway shows it: ``done``, matching every target,
        its counts adding up to what it matched, none failed."""
        doc, n = self.doc, len(self.targets)
        counts = doc.get("counts") or {}
        out = []
        if doc.get("state") != "done":
            out.append(f"bulk: operation {self.operation_id} is {doc.get('state')!r}, not done")
        if doc.get("matched") != n:
            out.append(f"bulk: operation matched {doc.get('matched')} runs, not {n}")
        if sum(counts.values()) != doc.get("matched") or counts.get("failed"):
            out.append(f"bulk: operation counts {counts} do not add up to its "
                       f"{doc.get('matched')} matched runs without a failure")
        return out
