"""``headwater pause ID`` and ``headwater resume ID``: pause a run (it dispatches nothing
new; attempts running go on) and resume it (what it held is dispatched, the timers that
came due fire), through the gateway (``POST /v1/workflows/{id}/pause``, ``/resume``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console
from ops.cli.workflows import client, gateway_errors

REQUEST_ID_HELP = ("the request's id: sent again (a retry), it changes nothing; "
                   "default: a new one")


def pause(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    reason: Annotated[str, typer.Option(help="why, recorded in the history")] = "",
    request_id: Annotated[str | None, typer.Option(help=REQUEST_ID_HELP)] = None,
    gateway: str = GATEWAY,
) -> None:
    """Pause a running workflow: it dispatches nothing new until resumed."""
    with gateway_errors(gateway), client(gateway) as hw:
        answer = hw.pause(workflow_id, reason, request_id)
    already = " (it was paused already)" if answer.get("was_paused") else ""
    console.print(f"pause of {escape(workflow_id)} requested{already}")


def resume(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    request_id: Annotated[str | None, typer.Option(help=REQUEST_ID_HELP)] = None,
    gateway: str = GATEWAY,
) -> None:
    """Resume a paused workflow: what it held is dispatched, due timers fire."""
    with gateway_errors(gateway), client(gateway) as hw:
        answer = hw.resume(workflow_id, request_id)
    note = "" if answer.get("was_paused") else " (it did not read as paused)"
    console.print(f"resume of {escape(workflow_id)} requested{note}")
