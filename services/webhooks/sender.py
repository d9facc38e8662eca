"""The deliverer's attempts: each due delivery posted to its webhook's URL, signed, and
its outcome kept.

A loop takes the deliveries whose next attempt is due under a lease
(``store.lease_due``: another deliverer does not take them meanwhile, and a deliverer
that dies holding them lets them go when the lease ends), posts each (its body as kept,
the headers of ``headwater.webhooks.signed_headers`` with this attempt's timestamp and
the delivery's id), and keeps the outcome with what follows (``backoff.after``):
delivered, tried again later, or dead. A dead delivery is also written to ``dlq`` with
its ``reason`` (``source-topic``: the webhooks topic; ``webhook`` and ``delivery-id``
headers). A deliverer that dies between a post and its record posts it again after
the lease: the receiver sees the same delivery id twice (at-least-once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer

from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER, Topics
from headwater.webhooks import WebhookStored, signed_headers
from services.webhooks import backoff, metrics, store

log = logging.getLogger(__name__)

LEASE_S = 60.0
"""How long a deliverer holds the deliveries it took, seconds (past the attempts'
timeout: a live deliverer records its outcome well before)."""
BATCH = 32
"""The most deliveries taken at once (attempted concurrently)."""
IDLE_S = 0.5
"""The longest the loop waits for a wake-up before it looks for due deliveries."""
MAX_ERROR_CHARS = 500
USER_AGENT = "headwater-webhooks/1"


class Sender:
    """Attempts due deliveries until cancelled (see the module's docstring).

    Args:
        pool: the projection's pool.
        topics: the deployment's topics (the dead letters' ``dlq``).
        producer: writes dead letters (None: only the table says they are dead).
        timeout_s: how long one attempt waits for the receiver's answer, seconds.
        transport: an httpx transport (tests pass their own); None: the network.
        clock: the wall clock, ms since the epoch.
    """

    def __init__(self, pool: asyncpg.Pool, topics: Topics, producer: AIOKafkaProducer | None,
                 timeout_s: float = 10.0, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.pool, self.topics, self.producer = pool, topics, producer
        self.timeout_s, self.transport, self.clock = timeout_s, transport, clock
        self.wake = asyncio.Event()
        self.attempted = 0

    async def run(self) -> None:
        """Attempt due deliveries until cancelled."""
        async with httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport,
                                     headers={"User-Agent": USER_AGENT}) as http:
            while True:
                try:
                    done = await self.round(http)
                except (OSError, asyncpg.PostgresError) as e:
                    log.warning("webhook deliveries not read (%r)", e)
                    done = 0
                if done < BATCH:
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), IDLE_S)

    async def round(self, http: httpx.AsyncClient) -> int:
        """Attempt the deliveries due now (at most ``BATCH``); return how many."""
        now = self.clock()
        due = await store.lease_due(self.pool, now, round(LEASE_S * 1000), BATCH)
        if not due:
            return 0
        hooks = {h.name: h for h in await store.live_hooks(self.pool)}
        results = await asyncio.gather(*(self.attempt(http, row, hooks.get(row["webhook"]))
                                         for row in due), return_exceptions=True)
        for row, result in zip(due, results, strict=True):
            if isinstance(result, BaseException):  # its lease ends, then it is tried again
                log.warning("delivery %s not attempted: %r", row["delivery_id"], result)
        return len(due)

    async def attempt(self, http: httpx.AsyncClient, row: Any,
                      hook: WebhookStored | None) -> None:
        """Post one delivery and keep the outcome."""
        delivery, body = row["delivery_id"], bytes(row["body"])
        number = len(row["attempts"]) + 1
        if hook is None:  # deleted since the delivery was decided
            now = self.clock()
            reason = "the webhook was deleted"
            await store.record_attempt(self.pool, delivery, _attempt(number, now, None, reason, 0),
                                       backoff.Next("dead", reason=reason), now)
            metrics.attempted("dead", None)
            return
        started_ms = self.clock()
        headers = signed_headers(hook.secret, started_ms // 1000, body, delivery, row["event"])
        outcome = await _post(http, hook.url, body, headers, self.timeout_s)
        now = self.clock()
        after = backoff.after(number, outcome, now, backoff.Policy(
            hook.max_attempts, hook.backoff_ms, hook.backoff_max_ms), delivery)
        self.attempted += 1
        if after.status == "dead":
            await self.dead_letter(hook, delivery, body, after.reason)
        await store.record_attempt(
            self.pool, delivery, _attempt(number, started_ms, outcome.status_code,
                                          outcome.error, now - started_ms),
            after, now)
        metrics.attempted(after.status, (now - started_ms) / 1000)

    async def dead_letter(self, hook: WebhookStored, delivery: str, body: bytes,
                          reason: str) -> None:
        """Write a dead delivery to ``dlq`` with its reason (a failure is logged: the
        table says it is dead anyway)."""
        log.warning("webhook %s: delivery %s dead-lettered: %s", hook.name, delivery, reason)
        if self.producer is None:
            return
        try:
            await self.producer.send_and_wait(self.topics.dlq, body, key=delivery.encode(),
                                              headers=[
                (REASON_HEADER, f"webhook {hook.name}: {reason}".encode()),
                (SOURCE_TOPIC_HEADER, self.topics.webhooks.encode()),
                ("webhook", hook.name.encode()), ("delivery-id", delivery.encode()),
                ("content-type", b"application/json")])
        except Exception as e:  # the table keeps the outcome regardless
            log.warning("dead letter of delivery %s not written: %r", delivery, e)


async def _post(http: httpx.AsyncClient, url: str, body: bytes,
                headers: dict[str, str], timeout_s: float) -> backoff.Outcome:
    """Post a delivery; its outcome is the answer's status. The answer's body is never
    read, and the whole attempt (connecting, sending, the status line and headers) has
    ``timeout_s``: a receiver that answers slowly, or drips a body, holds no round of
    the loop (httpx's timeout bounds each read, not the attempt)."""
    async def status() -> int:
        async with http.stream("POST", url, content=body, headers=headers) as response:
            return response.status_code

    try:
        return backoff.Outcome(await asyncio.wait_for(status(), timeout_s))
    except TimeoutError:
        return backoff.Outcome(None, f"no answer within {timeout_s:g} s")
    except Exception as e:  # any failure to post (an unusable URL too) is the outcome
        return backoff.Outcome(None, f"{type(e).__name__}: {e}"[:MAX_ERROR_CHARS])


def _attempt(number: int, at_ms: int, status_code: int | None, error: str,
             duration_ms: int) -> dict[str, Any]:
    """One attempt as ``webhook_deliveries.attempts`` lists it."""
    return {"n": number, "at": datetime.fromtimestamp(at_ms / 1000, UTC).isoformat(),
            "status_code": status_code, "error": error, "ms": duration_ms}
