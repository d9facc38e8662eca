"""Webhooks at the edge: check a ``PUT /v1/webhooks/{name}`` body, write the webhook as
a ``WebhookStored`` record on the ``webhooks`` topic, then into its PostgreSQL table.

The record goes to Kafka first (the topic is the webhooks' truth: the deliverer reads
it into ``webhooks`` at start), and is written to the table once Kafka acknowledged it,
so the answer's webhook is the one a delivery decided after the answer sees. A ``PUT``
or ``DELETE`` that fails between the two (a 503) leaves the record on the topic, which
the deliverer writes to the table; retrying it is safe.

A webhook is its writer's tenant's: it sees only that tenant's runs, and another tenant
sees it as a name that does not exist (404; 409 on ``PUT``). A principal of every
tenant writes every webhook (a replaced one keeps its tenant; a new one has none and
sees every tenant's runs).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Literal
from urllib.parse import urlsplit

import asyncpg
from aiokafka import AIOKafkaProducer
from pydantic import BaseModel, ConfigDict, Field, field_validator

from headwater import codec
from headwater.core.definitions import NAME_PATTERN
from headwater.core.labels import label_faults
from headwater.webhooks import WebhookStored
from services.common.auth.tokens import Principal
from services.common.kafka.client import ensure_compacted_topics
from services.gateway.edge.problems import RETRY_AFTER_S, Problem
from services.gateway.settings import Settings
from services.webhooks import backoff
from services.webhooks.matching import EVENT_NAMES
from services.webhooks.store import read_hook, store_hooks

EventName = Literal["run.succeeded", "run.failed", "run.cancelled", "run.waiting",
                    "run.ended"]
_NAME = re.compile(NAME_PATTERN)
AVRO_HEADERS = [("content-type", b"application/vnd.apache.avro")]
_created: set[str] = set()
"""The webhooks topics this process made sure exist."""
assert set(EventName.__args__) == set(EVENT_NAMES)  # type: ignore[attr-defined]


class WebhookFilter(BaseModel):
    """Which runs a webhook hears of; each list empty or absent: any."""

    model_config = ConfigDict(extra="forbid")

    names: list[str] = Field(default_factory=list, max_length=100)
    """The runs' spec names (a code workflow's is its name)."""
    definitions: list[str] = Field(default_factory=list, max_length=100)
    """The registered definitions the runs were resolved from."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels the runs must all carry (``{key: value}``; empty: any)."""

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        faults = label_faults(labels, "filter.labels")
        if faults:
            raise ValueError("; ".join(faults))
        return labels


class RetrySettings(BaseModel):
    """How a failing delivery is tried again (``services/webhooks/backoff.py``)."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=backoff.DEFAULT_MAX_ATTEMPTS, ge=1,
                              le=backoff.MAX_ATTEMPTS_LIMIT, strict=True)
    backoff_s: float = Field(default=backoff.DEFAULT_BACKOFF_MS / 1000, ge=0.01, le=3600)
    backoff_max_s: float = Field(default=backoff.DEFAULT_BACKOFF_MAX_MS / 1000, ge=0.01,
                                 le=86_400)


class WebhookRequest(BaseModel):
    """``PUT /v1/webhooks/{name}``: where, which events of which runs, the secret of the
    signatures and the retries."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2000)
    events: list[EventName] = Field(min_length=1, max_length=len(EVENT_NAMES))
    filter: WebhookFilter = Field(default_factory=WebhookFilter)
    secret: str = Field(min_length=16, max_length=256)
    retry: RetrySettings = Field(default_factory=RetrySettings)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an http:// or https:// URL with a host")
        if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
            raise ValueError("a URL without spaces or control characters")
        if parts.username is not None or parts.password is not None:
            raise ValueError("a URL without user:password@ (it would be shown with the "
                             "webhook; authenticate with the signature)")
        try:
            parts.port  # noqa: B018 (its check: a port from 0 to 65535)
        except ValueError as e:
            raise ValueError(f"a URL with a port from 1 to 65535 ({e})") from e
        return url


def check_name(name: str) -> None:
    """Raises ``Problem`` 422 unless ``name`` is a valid webhook name (a definition
    name's form)."""
    if not _NAME.fullmatch(name):
        fault = (f"name: webhook name {name[:120]!r} is invalid: 1-100 letters, digits and "
                 "_.- starting with a letter or digit")
        raise Problem(422, "Invalid request", fault, errors=[fault])


def unknown(name: str) -> Problem:
    """The 404 of a webhook that does not exist (or is another tenant's)."""
    return Problem(404, "Not found", f"no webhook {name}")


async def visible(pool: asyncpg.Pool, name: str, me: Principal) -> WebhookStored:
    """The live webhook ``name`` as ``me`` may see it.

    Raises:
        Problem: 404 when there is none, it was deleted, or it is another tenant's.
    """
    hook = await read_hook(pool, name)
    if hook is None or hook.deleted or not me.sees(hook.tenant):
        raise unknown(name)
    return hook


def record_of(name: str, body: WebhookRequest, me: Principal, before: WebhookStored | None,
              now_ms: int) -> WebhookStored:
    """The record a ``PUT`` writes: ``before`` (the name's live webhook, or None)
    replaced, keeping its tenant and creation time.

    Raises:
        Problem: 409 when ``before`` is another tenant's.
    """
    if before is not None and not me.sees(before.tenant):
        raise Problem(409, "Conflict", f"the webhook name {name} is taken")
    tenant = before.tenant if before is not None else (None if me.every_tenant else me.tenant)
    return WebhookStored(
        name, tenant, body.url, tuple(sorted(set(body.events))),
        body.filter.model_dump(), body.secret, body.retry.max_attempts,
        round(body.retry.backoff_s * 1000),
        max(round(body.retry.backoff_max_s * 1000), round(body.retry.backoff_s * 1000)),
        False, before.created_at_ms if before is not None else now_ms, now_ms)


async def write(settings: Settings, producer: AIOKafkaProducer, pool: asyncpg.Pool,
                record: WebhookStored) -> None:
    """Produce ``record`` (key: its name), then write it to ``webhooks``.

    Raises:
        Problem: 503 when Kafka did not acknowledge it in time (retrying is safe).
    """
    topic = settings.topics.webhooks
    retry = {"Retry-After": RETRY_AFTER_S}
    try:
        if topic not in _created:
            await ensure_compacted_topics(settings, [topic], timeout_s=settings.produce_timeout_s)
            _created.add(topic)
        await asyncio.wait_for(producer.send_and_wait(
            topic, codec.encode(record), key=record.name.encode(), headers=AVRO_HEADERS),
            settings.produce_timeout_s)
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the webhook was not stored: {e!r}; "
                      "retrying is safe", headers=retry) from e
    await store_hooks(pool, [record])


def now_ms() -> int:
    """The wall clock, ms since the epoch."""
    return int(time.time() * 1000)
