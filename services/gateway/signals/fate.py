"""What became of a signal sent to a run, read from the projection.

A signal's way: the gateway answers 202 once it is on ``control`` and records that
(``record_receipt``: ``signal_receipts.received_at``); the coordinator then records it
(``SignalSent``: kept for a wait not started yet, or consumed at once by its wait,
``SignalConsumed``), discards it (``SignalDiscarded``: its wait has ended, another
signal is kept for it), changes nothing (a copy of one the run took), or refuses it
(dead-lettered: the run has ended, a field its waits refuse), which the projector reads
back from ``dlq`` (``services.projector.refusals``). ``fate`` reads the first that
applies, in that order: what the history recorded, then a refusal, then the receipt.
"""

from __future__ import annotations

import logging
from datetime import datetime
from enum import StrEnum
from typing import Any

import asyncpg

from headwater.core import events as ev
from services.gateway.edge.problems import Problem
from services.gateway.runs.facts import links

log = logging.getLogger("headwater.gateway")


class SignalFate(StrEnum):
    """What became of a signal (``status`` of ``GET .../signals/{signal_id}``)."""

    RECEIVED = "received"  # answered 202; the coordinator has not applied it yet
    BUFFERED = "buffered"  # recorded, kept until its wait starts
    CONSUMED = "consumed"  # taken by its wait: the wait's output is its fields
    DISCARDED = "discarded"  # recorded, changed nothing (``reason``: its wait ended, ...)
    REFUSED = "refused"  # dead-lettered, not recorded (``reason``: the run had ended, ...)

    @property
    def final(self) -> bool:
        """Whether the coordinator has applied it (every fate but ``received``)."""
        return self is not SignalFate.RECEIVED


RECEIVED = ("insert into signal_receipts (workflow_id, signal_id, name, idx, received_at)"
            " values ($1, $2, $3, $4, now()) on conflict (workflow_id, signal_id)"
            " do update set received_at = coalesce(signal_receipts.received_at,"
            " excluded.received_at)")
_RECORDED = {"received": SignalFate.BUFFERED, "consumed": SignalFate.CONSUMED,
             "discarded": SignalFate.DISCARDED}
"""A ``signals`` row's status -> the fate it tells."""


async def record_receipt(pool: asyncpg.Pool, signal: ev.SignalSent) -> None:
    """Record that the gateway accepted ``signal`` (after it is on Kafka); best effort:
    a failure is logged (the signal is sent; its fate then shows once applied)."""
    try:
        await pool.execute(RECEIVED, signal.workflow_id, signal.signal_id, signal.name,
                           signal.index)
    except (OSError, asyncpg.PostgresError) as e:
        log.warning("signal %s of %s sent, its receipt not recorded: %r", signal.signal_id,
                    signal.workflow_id, e)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


async def fate(pool: asyncpg.Pool, workflow_id: str, signal_id: str) -> dict[str, Any]:
    """The fate of signal ``signal_id`` sent to run ``workflow_id``.

    Returns:
        ``{"workflow_id", "signal_id", "name", "index", "status", "node", "reason",
        "at", "received_at", "links"}``: ``status`` a ``SignalFate``; ``node`` the wait
        that consumed it (else null); ``reason`` why it was discarded or refused (else
        null); ``at`` when it reached that status (recorded, consumed, refused; for
        ``received``, when the gateway accepted it); ``received_at`` when the gateway
        accepted it (null: sent straight to Kafka, or before receipts were kept).

    Raises:
        Problem: 404 when no such signal was sent to the run (nor the run exists).
    """
    async with pool.acquire() as conn:
        recorded = await conn.fetchrow(
            "select s.name, s.idx, s.status, s.node, s.reason, s.at, e.at as consumed_at"
            " from signals s left join events e on e.workflow_id = s.workflow_id"
            " and e.seq = s.consumed_seq where s.workflow_id = $1 and s.signal_id = $2"
            " order by (s.status = 'consumed') desc, s.seq desc limit 1",
            workflow_id, signal_id)
        receipt = await conn.fetchrow(
            "select name, idx, received_at, refused_reason, refused_at from signal_receipts"
            " where workflow_id = $1 and signal_id = $2", workflow_id, signal_id)
    received_at = _iso(receipt["received_at"]) if receipt is not None else None
    doc: dict[str, Any] = {"workflow_id": workflow_id, "signal_id": signal_id,
                           "node": None, "reason": None, "received_at": received_at}
    if recorded is not None:
        status = _RECORDED.get(recorded["status"], SignalFate.BUFFERED)
        doc.update(name=recorded["name"], index=recorded["idx"], status=status.value,
                   node=recorded["node"] or None,
                   reason=recorded["reason"] or None if status is SignalFate.DISCARDED
                   else None,
                   at=_iso(recorded["consumed_at"] if status is SignalFate.CONSUMED
                           and recorded["consumed_at"] else recorded["at"]))
    elif receipt is not None and receipt["refused_reason"] is not None:
        doc.update(name=receipt["name"], index=receipt["idx"],
                   status=SignalFate.REFUSED.value, reason=receipt["refused_reason"],
                   at=_iso(receipt["refused_at"]))
    elif receipt is not None and receipt["received_at"] is not None:
        doc.update(name=receipt["name"], index=receipt["idx"],
                   status=SignalFate.RECEIVED.value, at=received_at)
    else:
        raise Problem(404, "Not found", f"no signal {signal_id} was sent to workflow "
                                        f"{workflow_id}")
    return {**doc, "links": {**links(workflow_id),
                             "signal": f"/v1/workflows/{workflow_id}/signals/{signal_id}"}}
