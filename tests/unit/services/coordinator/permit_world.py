"""A small world for the limits: workflows and their limiters stepped through the core's
``decide``, the records each step publishes routed as the coordinator routes them
(``records.encode_outputs``, encoded and decoded through the codec), and workers that
take dispatches, start them and finish them when told.

Records on ``control`` and ``reports`` are delivered in the order they were published
per key (a partition keeps its order), the keys interleaved as the test's random
generator says; a record may be delivered twice (as a batch carried out again after a
crash publishes its records again). The world checks at every grant that no limiter
holds more than its limit.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.machine import Context, decide
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.layout import dump_definition, dump_header, dump_task, load_split
from services.coordinator.records import encode_outputs

TOPICS = Topics("w")


@dataclass
class World:
    """Every workflow's state and history, the records in flight, the running tasks."""

    rng: random.Random
    now: int = 1_000_000
    states: dict[str, WorkflowState | None] = field(default_factory=dict)
    history: dict[str, list[ev.HistoryEvent]] = field(default_factory=dict)
    inbox: dict[str, deque[Any]] = field(default_factory=dict)
    dispatched: list[ev.TaskDispatched] = field(default_factory=list)
    running: dict[str, ev.TaskDispatched] = field(default_factory=dict)
    duplicates: float = 0.0
    peak: dict[str, int] = field(default_factory=dict)

    def apply(self, event: Any) -> None:
        """Step one input through ``decide`` and route what it publishes."""
        wid = event.workflow_id
        state = self.states.get(wid)
        decision = decide(state, event, Context())
        if decision.step is None:
            return
        self.states[wid] = decision.step.state
        self.history.setdefault(wid, []).extend(decision.step.events)
        for out in encode_outputs(TOPICS, decision.step.events, 1_000_000,
                                  decision.step.state):
            record = codec.decode(out.value)
            if out.topic in (TOPICS.control, TOPICS.reports):
                self._send(record)
                if self.rng.random() < self.duplicates:
                    self._send(record)
            elif isinstance(record, ev.TaskDispatched) and out.topic != TOPICS.events:
                self.dispatched.append(record)
            if isinstance(record, ev.HistoryEvent) and isinstance(record.body, ev.PermitIssued):
                body = record.body
                self.peak[wid] = max(self.peak.get(wid, 0), body.holding)
                assert body.holding <= body.limit, f"{wid} over its limit: {body}"

    def _send(self, record: Any) -> None:
        self.inbox.setdefault(record.workflow_id, deque()).append(record)

    def deliver(self, at_most: int = 1_000_000) -> int:
        """Deliver records in flight, each key's in order, keys chosen at random."""
        n = 0
        while n < at_most:
            keys = [k for k, q in self.inbox.items() if q]
            if not keys:
                break
            record = self.inbox[self.rng.choice(keys)].popleft()
            self.now += 1
            self.apply(_at(record, self.now))
            n += 1
        return n

    def start_all(self) -> None:
        """Workers take every dispatch and report it started."""
        for d in self.dispatched:
            self.running[d.dispatch_id] = d
            self.apply(ev.TaskStarted(d.workflow_id, d.node, d.index, d.attempt, self.now,
                                      "w1"))
        self.dispatched.clear()

    def finish(self, dispatch_id: str, ok: bool = True) -> None:
        """A running attempt ends (succeeds, or fails retryably)."""
        d = self.running.pop(dispatch_id)
        self.now += 1
        if ok:
            self.apply(ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, self.now,
                                        {"ok": True}))
        else:
            self.apply(ev.TaskFailed(d.workflow_id, d.node, d.index, d.attempt, self.now,
                                     "boom", "RuntimeError", True))

    def run_limiter(self, wid: str) -> dict[str, Any]:
        """A limiter's live state."""
        state = self.states[wid]
        assert state is not None
        lim = state.nodes["limiter"].limiter
        assert lim is not None
        return lim

    def replays(self) -> None:
        """Folding each history gives the state the steps left, and so do the table
        entries the coordinator would write for it (``layout``)."""
        for wid, events in self.history.items():
            folded: WorkflowState | None = None
            for e in events:
                folded = evolve(folded, e)
            assert folded == self.states[wid], wid
            assert folded is not None
            tasks = {k: dump_task(folded, k) for k in folded.tasks}
            loaded = load_split(dump_header(folded), dump_definition(folded), tasks.get)
            assert loaded == folded, wid


def _at(record: Any, at_ms: int) -> Any:
    return dataclasses.replace(record, at_ms=at_ms)
