"""Cancels and signals: produced to ``control`` for a workflow the projection knows and
that has not ended; a signal only when one of the workflow's waits can take it
(``headwater.core.signals.signal_fault``, the check the coordinator makes too)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import asyncpg

from headwater.core import events as ev
from headwater.core.signals import signal_fault
from headwater.core.state import new_state
from services.common.auth.tokens import OPEN, Principal
from services.common.clock import now_ms
from services.gateway.blobs import payloads
from services.gateway.control.models import SignalRequest
from services.gateway.edge.problems import Problem
from services.gateway.outlet import Outlet
from services.gateway.runs.stream import TERMINAL_STATUSES
from services.gateway.signals.fate import record_receipt


async def request_cancel(pool: asyncpg.Pool, out: Outlet, workflow_id: str,
                         reason: str) -> None:
    """Produce a ``CancelRequested`` for a workflow that is not terminal.

    Args:
        pool: the projection's pool.
        out: where the record goes (``outlet.Outlet``).
        workflow_id: the workflow to cancel.
        reason: recorded in the history.

    Raises:
        Problem: 404 unknown id, 409 already terminal, 503 Kafka unavailable or slow.
    """
    status = await pool.fetchval("select status from workflows where workflow_id = $1",
                                 workflow_id)
    if status is None:
        raise Problem(404, "Not found", f"no workflow {workflow_id}")
    if status in TERMINAL_STATUSES:
        raise Problem(409, "Conflict", f"workflow {workflow_id} is already {status}",
                      status_now=status)
    record = ev.CancelRequested(workflow_id, now_ms(), reason)
    await out.control(record, "cancel")


def signal_record(workflow_id: str, name: str, request: SignalRequest) -> ev.SignalSent:
    """The ``SignalSent`` of a signal request: without a ``signal_id`` it gets a random
    one (UUID4, hex).

    Args:
        workflow_id: the workflow to signal.
        name: the signal's name (a wait node's ``signal:``).
        request: the parsed body.
    """
    return ev.SignalSent(workflow_id, name, now_ms(), request.index,
                         request.signal_id or uuid.uuid4().hex, request.fields)


async def send_signal(pool: asyncpg.Pool, out: Outlet, signal: ev.SignalSent,
                      me: Principal = OPEN) -> list[str]:
    """Produce a ``SignalSent`` that a wait of a workflow that has not ended can take.

    The workflow's spec and status are read from the projection, as ``GET`` reads them,
    and the signal is checked against them (``signals.signal_fault``), so that a
    signal no wait can take is refused here rather than dead-lettered by the
    coordinator. A signal for a wait not started yet is kept until it starts. A signal
    whose ``signal_id`` the workflow recorded is answered as accepted even once the
    workflow has ended (a sender retrying after a lost answer), and is not sent again.

    Args:
        pool: the projection's pool.
        out: where the record goes (``outlet.Outlet``).
        signal: the signal (``signal_record``); its fields' large parts go by
            reference once it is checked (``blobs.payloads``).
        me: who sends it: the tenant whose references its fields may pass on.

    Returns:
        Warnings for the sender (``unawaited``): none, or that a code workflow waits for
        other signals now.

    Raises:
        Problem: 404 unknown id, 409 the workflow has ended (and did not record this
            signal), 400 no wait takes the
            signal (the fault in ``detail`` and ``errors``), 503 Kafka unavailable or
            slow.
    """
    workflow_id = signal.workflow_id
    async with pool.acquire() as conn:
        row = await conn.fetchrow("select status, spec, input, tenant from workflows"
                                  " where workflow_id = $1", workflow_id)
        if row is None:
            raise Problem(404, "Not found", f"no workflow {workflow_id}")
        if row["status"] in TERMINAL_STATUSES:
            if await conn.fetchval("select 1 from signals where workflow_id = $1 and"
                                   " signal_id = $2", workflow_id, signal.signal_id):
                return []  # sent again after a lost answer: it was recorded; nothing to do
            raise Problem(409, "Conflict", f"workflow {workflow_id} has already ended: "
                          f"{row['status']}", status_now=row["status"])
        totals = {r["node"]: r["total"] for r in await conn.fetch(
            "select node, total from nodes where workflow_id = $1 and total is not null",
            workflow_id)}
        waiting = [r["signal"] for r in await conn.fetch(
            "select signal from waits where workflow_id = $1 and status = 'waiting'"
            " order by wait_key", workflow_id)]
    # A large spec takes a while to parse: off the event loop, as for a submission.
    fault = await asyncio.to_thread(_signal_fault, row, totals, signal)
    if fault is not None:
        raise Problem(400, "Invalid signal", fault, errors=[fault], signal=signal.name)
    if out.claims is not None:
        # checked as sent; then its large parts stored as the run's, by reference
        owner = payloads.Owner(workflow_id, row["tenant"], me)
        fields = await payloads.offload(out.claims, pool, signal.fields, owner, "fields")
        signal = dataclasses.replace(signal, fields=fields)
    await out.control(signal, "signal")
    await record_receipt(pool, signal)  # its fate reads "received" until it is applied
    return unawaited(row["spec"], waiting, signal)


def unawaited(spec: Any, waiting: list[str], signal: ev.SignalSent) -> list[str]:
    """A warning when a code workflow, which declares no signals beforehand (any name is
    kept for a ``wf.signal`` to come), waits now for signals of other names only: a
    misspelt name is kept for a wait that may never come. Empty otherwise (a spec's
    waits are checked before: ``_signal_fault``)."""
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    code = any(isinstance(n, dict) and n.get("kind") == "code" for n in nodes or ())
    if not code or not waiting or signal.name in waiting:
        return []
    names = ", ".join(repr(n) for n in dict.fromkeys(waiting))
    return [f"workflow {signal.workflow_id} waits for signal {names}, not "
            f"{signal.name!r}: this signal is kept until a wf.signal({signal.name!r}) "
            "takes it"]


def _signal_fault(row: Any, totals: dict[str, int], signal: ev.SignalSent) -> str | None:
    """Why no wait of the workflow in ``row`` (a ``workflows`` row) can take ``signal``,
    or None. Its state is rebuilt from the spec, with the item counts of its expanded
    nodes (``totals``) so that an index can be checked. Runs in a worker thread."""
    state = new_state(ev.WorkflowAccepted(signal.workflow_id, signal.at_ms, row["spec"],
                                          row["input"], row["tenant"]))
    if state.spec_error:  # cannot run at all: it fails as soon as it is accepted
        return f"the workflow's spec is invalid: {state.spec_error}"
    for node, total in totals.items():
        if node in state.nodes:
            state.nodes[node].total = total
    return signal_fault(state, signal)
