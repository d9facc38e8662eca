"""The record of the ``triggers`` topic (``Topics.triggers``): a trigger as stored.

The gateway writes one at each ``PUT`` and ``DELETE /v1/triggers/{name}`` and every
gateway reads the whole topic to know which triggers to run
(``services/gateway/triggers/``); ``headwater.codec`` encodes and decodes it like every
record (``schemas/avro/TriggerStored.avsc``). It is no workflow record: nothing of a
workflow's history depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TriggerStored:
    """One trigger's settings, or its deletion (the fields of ``TriggerStored.avsc``).

    Attributes:
        name: the trigger's name, unique within its tenant.
        tenant: the tenant it belongs to and its runs run as; None: auth is off, or
            the trigger was stored by a principal of every tenant.
        settings: the trigger's body as the gateway checked it (a JSON object:
            ``topic``, ``format``, ``definition``, ...); None once deleted.
        deleted: True once deleted: its consumer stops.
        at_ms: when it was stored, ms since the epoch (the gateway's clock).
    """

    name: str
    tenant: str | None
    settings: Any
    deleted: bool
    at_ms: int


def trigger_key(tenant: str | None, name: str) -> str:
    """The record's Kafka key: ``<tenant>/<name>`` (``-/<name>`` without a tenant), so
    that compaction keeps each tenant's trigger of a name apart."""
    return f"{tenant if tenant is not None else '-'}/{name}"
