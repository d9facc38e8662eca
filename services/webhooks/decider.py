"""The deliverer's reader of ``events``: each event a webhook takes becomes a delivery
kept in PostgreSQL before the events' offsets are committed.

It reads ``events`` in a consumer group of its own (``Topics.webhooks_group``, from the
earliest offset for a new group: a webhook takes only events after its creation, so an
old history decides nothing). For each fetched batch: the events of interest
(``matching.event_name``) that some live webhook may take are matched against the
webhooks (read from ``webhooks`` once per such batch) with the facts of their runs
(``RunFacts``: from the ``WorkflowAccepted`` seen earlier in the same partition, else from
the ``workflows`` projection, waited for while the projector has not written the row),
the deliveries are inserted (``store.store_decided``, once per id) and only then are the
offsets committed. A crash before the commit reads the batch again and decides the same
deliveries, which the table keeps once: none is lost, none is doubled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError

from headwater import codec
from headwater.core import events as ev
from headwater.core.labels import labels_of
from headwater.errors import DecodeError
from headwater.webhooks import WebhookStored
from services.common import faults
from services.common.kafka.client import started
from services.common.kafka.security import aiokafka_security
from services.common.settings import CommonSettings
from services.webhooks import matching, metrics, store
from services.webhooks.matching import RunFacts

log = logging.getLogger(__name__)

FACTS_KEPT = 50_000
"""Runs whose ``WorkflowAccepted`` facts are kept in memory (the oldest go first)."""
FACTS_WAIT_S = 30.0
"""How long a batch waits for the projection to show a run it has no facts of, seconds;
an event of a run still unknown then is decided with no delivery (logged)."""
FACTS_POLL_S = 0.5
RETRY_S = 1.0
"""The wait after PostgreSQL failed a batch before it is tried again, seconds."""


class Facts:
    """The facts of recent runs, from their ``WorkflowAccepted``, at most ``FACTS_KEPT``."""

    def __init__(self, kept: int = FACTS_KEPT) -> None:
        self.kept = kept
        self.runs: OrderedDict[str, RunFacts] = OrderedDict()

    def saw(self, e: ev.HistoryEvent) -> None:
        """Remember the run of an accepted workflow."""
        b = e.body
        if not isinstance(b, ev.WorkflowAccepted):
            return
        name = b.spec.get("name") if isinstance(b.spec, dict) else None
        self.runs[e.workflow_id] = RunFacts(e.workflow_id, b.tenant,
                                            name if isinstance(name, str) else "",
                                            b.definition, matching.code_nodes(b.spec),
                                            labels_of(b.spec))
        self.runs.move_to_end(e.workflow_id)
        while len(self.runs) > self.kept:
            self.runs.popitem(last=False)

    def get(self, workflow_id: str) -> RunFacts | None:
        """The run's facts, if seen."""
        return self.runs.get(workflow_id)


def candidates(events: Iterable[ev.HistoryEvent],
               hooks: list[WebhookStored]) -> list[ev.HistoryEvent]:
    """The events some live webhook may take, whatever their run (its event, after its
    creation): the ones worth the facts of their run."""
    named = [(matching.named(h.events), h.created_at_ms) for h in hooks if not h.deleted]
    out = []
    for e in events:
        name = matching.event_name(e)
        if name is None:
            continue
        at_ms = matching.event_at_ms(e)
        if any(name in events_of and at_ms >= since for events_of, since in named):
            out.append(e)
    return out


async def projected_facts(pool: asyncpg.Pool, ids: list[str]) -> dict[str, RunFacts]:
    """The facts of runs as the ``workflows`` projection has them."""
    rows = await pool.fetch(
        "select workflow_id, tenant, name, definition, labels, array(select n->>'id' from"
        " jsonb_array_elements(case jsonb_typeof(spec->'nodes') when 'array' then"
        " spec->'nodes' else '[]' end) n where n->>'kind' = 'code') as code_nodes"
        " from workflows where workflow_id = any($1::text[])", ids)
    return {r["workflow_id"]: RunFacts(r["workflow_id"], r["tenant"], r["name"] or "",
                                       r["definition"], frozenset(r["code_nodes"] or ()),
                                       r["labels"] or {})
            for r in rows}


class Decider:
    """Decides deliveries from ``events`` until cancelled (see the module's docstring).

    Args:
        settings: the common settings (topics, Kafka, message size).
        pool: the projection's pool.
        woken: called after deliveries were kept (the sender's wake-up).
        clock: the wall clock, ms since the epoch (tests pass their own).
    """

    def __init__(self, settings: CommonSettings, pool: asyncpg.Pool,
                 woken: Callable[[], None] = lambda: None,
                 clock: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.settings, self.pool, self.woken, self.clock = settings, pool, woken, clock
        self.facts = Facts()
        self.decided = 0

    async def run(self) -> None:
        """Decide until cancelled."""
        consumer = AIOKafkaConsumer(
            self.settings.topics.events, bootstrap_servers=self.settings.bootstrap,
            **aiokafka_security(self.settings.kafka_security),
            group_id=self.settings.topics.webhooks_group, enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4)
        async with started(consumer):
            while True:
                batches = await consumer.getmany(timeout_ms=200, max_records=2000)
                if not batches:
                    continue
                events = [e for records in batches.values() for e in _history_events(records)]
                if await self._keep_with_retries(events):
                    faults.point("webhooks.after_decide")
                try:
                    await consumer.commit()
                except CommitFailedError as e:  # rebalanced: the next owner decides again
                    log.warning("deliveries kept but offsets not committed (%s)", e)

    async def _keep_with_retries(self, events: list[ev.HistoryEvent]) -> int:
        while True:
            try:
                return len(await self.keep(events))
            except (OSError, asyncpg.PostgresError) as e:
                log.warning("deliveries not kept (%r); again in %.0f s", e, RETRY_S)
                await asyncio.sleep(RETRY_S)

    async def keep(self, events: list[ev.HistoryEvent]) -> list[matching.Decided]:
        """Decide and keep the deliveries of one batch of events (in order).

        Returns:
            The deliveries decided (kept now, or kept before).
        """
        for e in events:
            self.facts.saw(e)
        hooks = await store.live_hooks(self.pool) if any(
            matching.event_name(e) for e in events) else []
        chosen = candidates(events, hooks)
        if not chosen:
            return []
        runs = await self._facts_of(sorted({e.workflow_id for e in chosen}))
        decided: list[matching.Decided] = []
        for e in chosen:
            run = runs.get(e.workflow_id)
            if run is None:
                log.warning("run %s is not in the projection after %.0f s: its %s (seq %d) "
                            "is delivered to no webhook", e.workflow_id, FACTS_WAIT_S,
                            e.type, e.seq)
                continue
            decided.extend(matching.decide(hooks, e, run))
        await store.store_decided(self.pool, decided, {h.name: h.tenant for h in hooks},
                                  self.clock())
        if decided:
            self.decided += len(decided)
            metrics.DECIDED.inc(len(decided))
            self.woken()
        return decided

    async def _facts_of(self, ids: list[str]) -> dict[str, RunFacts]:
        found = {i: f for i in ids if (f := self.facts.get(i)) is not None}
        deadline = time.monotonic() + FACTS_WAIT_S
        while True:
            missing = [i for i in ids if i not in found]
            if not missing:
                return found
            found.update(await projected_facts(self.pool, missing))
            if len(found) == len(ids) or time.monotonic() > deadline:
                return found
            await asyncio.sleep(FACTS_POLL_S)


def _history_events(records: Iterable[Any]) -> list[ev.HistoryEvent]:
    """The history events of a fetch, in order (any other record is skipped: the
    projector logs those)."""
    out = []
    for r in records:
        try:
            event = codec.decode(r.value)
        except DecodeError:
            continue
        if isinstance(event, ev.HistoryEvent):
            out.append(event)
    return out
