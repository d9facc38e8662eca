"""Webhooks as they travel: the record of the ``webhooks`` topic, and the signature of a
delivery, which a receiver checks with ``verify`` (docs/webhooks.md).

A webhook is defined over HTTP (``PUT /v1/webhooks/{name}``); the gateway writes it as a
``WebhookStored`` record on ``<p>.webhooks`` (compacted, keyed by name), which
``headwater.codec`` encodes like every record. The deliverer
(``services/webhooks``) sends each delivery as a ``POST`` of a JSON body with the
headers ``Headwater-Delivery`` (an id that stays the same on every attempt of one
delivery: receivers dedupe on it), ``Headwater-Event``, ``Headwater-Timestamp`` (Unix
seconds of the attempt) and ``Headwater-Signature`` (``v1=`` and the hex HMAC-SHA256,
keyed by the webhook's secret, of ``<timestamp>.<body>``).

This module is pure and needs only the standard library, so a receiver may import it
(``from headwater.webhooks import verify``) without Kafka or PostgreSQL.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DELIVERY_HEADER = "Headwater-Delivery"
"""The delivery's id: the same on every attempt of one delivery."""
EVENT_HEADER = "Headwater-Event"
"""What happened: ``run.succeeded``, ``run.failed``, ``run.cancelled``, ``run.waiting``."""
TIMESTAMP_HEADER = "Headwater-Timestamp"
"""When the attempt was signed, Unix seconds (an integer, in decimal)."""
SIGNATURE_HEADER = "Headwater-Signature"
"""``v1=<hex HMAC-SHA256 of "<timestamp>.<body>">``; the one scheme so far is ``v1``."""
SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300
"""How old a timestamp ``verify`` takes by default, seconds (5 minutes)."""


@dataclass(frozen=True)
class WebhookStored:
    """A webhook's definition on the ``webhooks`` topic (key: its name); the last record
    of a name is the webhook (``deleted``: there is none).

    Attributes:
        name: the webhook's name.
        tenant: the tenant it belongs to (it sees only that tenant's runs); None: every
            tenant's runs (written by a principal of every tenant).
        url: where deliveries are posted (``http`` or ``https``).
        events: the events it takes (``EVENTS``), sorted.
        filter: which runs: ``{"names": [...], "definitions": [...]}`` (each list absent
            or empty: any), a JSON document.
        secret: the key of the signatures.
        max_attempts: attempts of one delivery before it is dead-lettered.
        backoff_ms: the wait after the first failed attempt, ms (doubled after each).
        backoff_max_ms: the longest wait between attempts, ms.
        deleted: True: the webhook was deleted.
        created_at_ms: when the name was first defined (events before it are not
            delivered), ms since the Unix epoch.
        at_ms: when this record was written, ms since the Unix epoch.
    """

    name: str
    tenant: str | None
    url: str
    events: tuple[str, ...]
    filter: Any
    secret: str
    max_attempts: int
    backoff_ms: int
    backoff_max_ms: int
    deleted: bool
    created_at_ms: int
    at_ms: int


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Headwater-Signature`` value of ``body`` sent at ``timestamp``.

    Args:
        secret: the webhook's secret.
        timestamp: Unix seconds, as sent in ``Headwater-Timestamp``.
        body: the request's body, byte for byte.

    Returns:
        ``v1=`` and the hex HMAC-SHA256 of ``b"<timestamp>." + body``.
    """
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{SCHEME}={mac.hexdigest()}"


def signed_headers(secret: str, timestamp: int, body: bytes, delivery_id: str,
                   event: str) -> dict[str, str]:
    """The headers of one attempt: delivery id, event, timestamp and signature."""
    return {DELIVERY_HEADER: delivery_id, EVENT_HEADER: event,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: signature(secret, timestamp, body),
            "Content-Type": "application/json"}


class SignatureError(ValueError):
    """Raised when a delivery's signature is missing, malformed, wrong or too old."""


def verify(secret: str, headers: Mapping[str, str], body: bytes, now_s: float,
           tolerance_s: float = DEFAULT_TOLERANCE_S) -> str:
    """Check a delivery as a receiver gets it; return its delivery id to dedupe on.

    Args:
        secret: the webhook's secret.
        headers: the request's headers (names compared without case).
        body: the raw body, before any JSON parsing.
        now_s: the receiver's clock, Unix seconds (``time.time()``).
        tolerance_s: the oldest (and the furthest in the future) a timestamp may be,
            seconds: an older one is refused as a possible replay.

    Raises:
        SignatureError: a header is missing or malformed, the signature does not match,
            or the timestamp is out of the tolerance.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    stamp, sent = lower.get(TIMESTAMP_HEADER.lower()), lower.get(SIGNATURE_HEADER.lower())
    delivery = lower.get(DELIVERY_HEADER.lower())
    if not stamp or not sent or not delivery:
        raise SignatureError("a Headwater-Timestamp, -Signature or -Delivery header is missing")
    try:
        timestamp = int(stamp)
    except ValueError as e:
        raise SignatureError(f"Headwater-Timestamp {stamp[:40]!r} is not an integer") from e
    if abs(now_s - timestamp) > tolerance_s:
        raise SignatureError(f"the timestamp is {now_s - timestamp:.0f} s from now, over "
                             f"{tolerance_s:g} s")
    expected = signature(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, part.strip()) for part in sent.split(",")):
        raise SignatureError("the signature does not match the body and the secret")
    return delivery
