"""What to deliver: the rules that turn a history event into deliveries, pure.

An event is of interest when it has a webhook event name (``event_name``): a run's end
(``run.succeeded``, ``run.failed``, ``run.cancelled``) or a wait starting for a signal
(``run.waiting``): a wait node's ``WaitStarted``, or a code workflow's activation
decision (its ``TaskSucceeded`` at an even index) issuing ``wf.signal`` steps, one wait
per step, as the projection reads them (``services/projector/code_steps.py``). A webhook
takes it (``takes``) when it is not deleted, names the event (``run.ended`` stands for
the three ends), the event happened after the webhook was first defined, the run is
the webhook's tenant's (a webhook of every tenant takes every run), and the run passes
its ``filter`` (``names``: the run's spec name, ``definitions``: the registered
definition it was resolved from; an empty or absent list takes any; ``labels``: every
label given, ``{key: value}``, is the run's too).

Each (webhook, event, wait) is one delivery whose id, ``delivery_id``, is derived from
the webhook's name, its creation time, the run, the event's ``seq`` and a code wait's
index: reading the same event again (a restart, a rebalance) decides the same delivery,
which the store keeps once, so a receiver sees one id however often it is attempted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.kinds.code.decision import ENDS as DECISION_ENDS
from headwater.webhooks import WebhookStored

SUCCEEDED, FAILED, CANCELLED, WAITING = (
    "run.succeeded", "run.failed", "run.cancelled", "run.waiting")
ENDED = "run.ended"
"""Stands for the three ends in a webhook's ``events``."""
EVENTS = (SUCCEEDED, FAILED, CANCELLED, WAITING)
"""The events a delivery can be of."""
EVENT_NAMES = (*EVENTS, ENDED)
"""What a webhook's ``events`` may name."""
FILTER_KEYS = ("names", "definitions")
"""The keys of a webhook's filter that are lists of names, empty or absent: any (its
``labels`` is a mapping, each of whose labels the run must carry)."""
_ENDS = {ev.WorkflowSucceeded: SUCCEEDED, ev.WorkflowFailed: FAILED,
         ev.WorkflowCancelled: CANCELLED}


@dataclass(frozen=True)
class RunFacts:
    """What a webhook's filter and a delivery's body say of a run.

    Attributes:
        workflow_id: the run's id.
        tenant: its tenant, or None.
        name: its spec's name ("" when it has none).
        definition: the definition it was resolved from, or None (an inline spec).
    """

    workflow_id: str
    tenant: str | None
    name: str
    definition: str | None
    code_nodes: frozenset[str] = frozenset()
    """The ids of its ``code`` nodes (a ``@workflow``'s ``main``)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Its labels (``headwater.core.labels``)."""


def code_nodes(spec: Any) -> frozenset[str]:
    """The ids of a spec document's ``code`` nodes."""
    nodes = spec.get("nodes") if isinstance(spec, Mapping) else None
    return frozenset(str(n.get("id")) for n in nodes if isinstance(n, Mapping)
                     and n.get("kind") == "code") if isinstance(nodes, list) else frozenset()


@dataclass(frozen=True)
class Decided:
    """One delivery decided from an event, to be stored before it is attempted.

    Attributes:
        delivery_id: its id (``delivery_id``).
        webhook: the webhook's name.
        workflow_id: the run.
        seq: the event's seq in the run's history.
        event: the event's name (``EVENTS``).
        body: the JSON body posted on every attempt, byte for byte.
    """

    delivery_id: str
    webhook: str
    workflow_id: str
    seq: int
    event: str
    body: bytes


def event_name(e: ev.HistoryEvent) -> str | None:
    """The webhook event of a history event, or None for one no webhook takes (a code
    decision with signal steps is ``run.waiting`` if its node is a ``code`` node, which
    ``waits`` checks with the run's facts)."""
    if isinstance(e.body, ev.WaitStarted) or _signal_steps(e.body):
        return WAITING
    return _ENDS.get(type(e.body))


def _signal_steps(b: Any) -> list[Mapping[str, Any]]:
    """The ``signal`` steps an activation's decision issues (a ``TaskSucceeded`` at an
    even index whose output is a decision that does not end the run)."""
    if not isinstance(b, ev.TaskSucceeded) or b.index is None or b.index % 2:
        return []
    out = b.output
    if not isinstance(out, Mapping) or any(key in out for key in DECISION_ENDS):
        return []
    steps = out.get("steps")
    return [step for step in steps if isinstance(step, Mapping) and step.get("op") == "signal"
            and type(step.get("step")) is int] if isinstance(steps, list) else []


def _iso(ms: float | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def waits(e: ev.HistoryEvent, run: RunFacts) -> list[tuple[str, dict[str, Any]]]:
    """The waits an event starts: ``(part of the delivery id, the body's wait)``, the
    part "" for a wait node's (one per event), the step's index for a code step's."""
    b = e.body
    if isinstance(b, ev.WaitStarted):
        return [("", {"node": b.node, "index": b.index, "signal": b.signal,
                      "timeout_at": _iso(b.timeout_at_ms)})]
    if not isinstance(b, ev.TaskSucceeded) or b.node not in run.code_nodes:
        return []
    found = []
    for step in _signal_steps(b):
        timeout = step.get("timeout")
        seconds = None if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
            else float(timeout)
        index = 2 * int(step["step"]) + 1
        found.append((str(index), {
            "node": b.node, "index": index, "signal": str(step.get("name", "")),
            "timeout_at": None if seconds is None else _iso(b.at_ms + seconds * 1000)}))
    return found


def event_at_ms(e: ev.HistoryEvent) -> int:
    """When the event happened, ms since the epoch (each event of interest says)."""
    return int(getattr(e.body, "at_ms", 0))


def named(events: Iterable[str]) -> frozenset[str]:
    """The events a webhook's ``events`` stand for (``run.ended``: the three ends)."""
    out = set(events)
    if ENDED in out:
        out |= {SUCCEEDED, FAILED, CANCELLED}
    return frozenset(out & set(EVENTS))


def passes(hook_filter: Any, run: RunFacts) -> bool:
    """Whether ``run`` passes a webhook's filter (a mapping of ``FILTER_KEYS``)."""
    if not isinstance(hook_filter, Mapping):
        return True
    names, definitions = (value if isinstance(value := hook_filter.get(key), list) else ()
                          for key in FILTER_KEYS)
    labels = hook_filter.get("labels")
    wanted = labels.items() if isinstance(labels, Mapping) else ()
    return ((not names or run.name in names)
            and (not definitions or run.definition in definitions)
            and all(run.labels.get(key) == value for key, value in wanted))


def takes(hook: WebhookStored, event: str, at_ms: int, run: RunFacts) -> bool:
    """Whether ``hook`` takes ``event`` of ``run`` that happened at ``at_ms``."""
    return (not hook.deleted and event in named(hook.events)
            and at_ms >= hook.created_at_ms
            and (hook.tenant is None or hook.tenant == run.tenant)
            and passes(hook.filter, run))


def delivery_id(hook: WebhookStored, workflow_id: str, seq: int, part: str = "") -> str:
    """The id of the delivery of event ``seq`` of ``workflow_id`` (its ``part``: a code
    decision's wait, by index) to ``hook``: ``d_`` and 32 hex digits of a SHA-256 of the
    webhook's name and creation time (a name deleted and defined again is another
    webhook), the run, the seq and the part."""
    text = f"{hook.name}\n{hook.created_at_ms}\n{workflow_id}\n{seq}"
    if part:
        text += f"\n{part}"
    return "d_" + hashlib.sha256(text.encode()).hexdigest()[:32]


def body(delivery: str, hook: WebhookStored, event: str, e: ev.HistoryEvent,
         run: RunFacts, wait: dict[str, Any] | None = None) -> bytes:
    """The JSON body of a delivery: its id, the webhook, the event and when, the run
    (id, name, definition, tenant, seq), and the event's own facts (a failure's error,
    a cancellation's reason, a wait's node, index, signal and timeout)."""
    doc: dict[str, Any] = {
        "id": delivery, "webhook": hook.name, "event": event,
        "at": datetime.fromtimestamp(event_at_ms(e) / 1000, UTC).isoformat(),
        "run": {"workflow_id": run.workflow_id, "name": run.name,
                "definition": run.definition, "tenant": run.tenant, "seq": e.seq,
                "link": f"/v1/workflows/{run.workflow_id}"},
    }
    b = e.body
    if isinstance(b, ev.WorkflowFailed):
        doc["error"] = b.error
    elif isinstance(b, ev.WorkflowCancelled):
        doc["reason"] = b.reason
    if wait is not None:
        doc["wait"] = wait
    return orjson.dumps(doc)


def decide(hooks: Iterable[WebhookStored], e: ev.HistoryEvent,
           run: RunFacts) -> list[Decided]:
    """The deliveries one event makes: one per webhook that takes it."""
    event = event_name(e)
    if event is None:
        return []
    at_ms = event_at_ms(e)
    parts: list[tuple[str, dict[str, Any] | None]] = (
        [*waits(e, run)] if event == WAITING else [("", None)])
    out = []
    for hook in hooks:
        if not takes(hook, event, at_ms, run):
            continue
        for part, wait in parts:
            delivery = delivery_id(hook, e.workflow_id, e.seq, part)
            out.append(Decided(delivery, hook.name, e.workflow_id, e.seq, event,
                               body(delivery, hook, event, e, run, wait)))
    return out
