"""What the ``headwater`` commands share: the console, the gateway option, errors that
end a command, status colours. Light on purpose (no HTTP, Kafka or database client):
every command imports it, and ``headwater --help`` must start fast."""

from __future__ import annotations

import os
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from headwater.core.status import NodeStatus

console = Console(soft_wrap=True, emoji=False)  # "retry:a:2" is no emoji code

STYLE: dict[str, str] = {
    NodeStatus.SUCCEEDED: "green", NodeStatus.FAILED: "red", NodeStatus.UPSTREAM_FAILED: "red",
    NodeStatus.CANCELLED: "yellow", NodeStatus.SKIPPED: "dim", NodeStatus.RUNNING: "cyan",
    NodeStatus.PENDING: "dim"}
"""A node's or workflow's status -> its colour (the workflow's statuses are node ones too)."""


def default_gateway() -> str:
    """``http://127.0.0.1:$HEADWATER_GATEWAY_PORT`` (8080 by default)."""
    port = os.environ.get("HEADWATER_GATEWAY_PORT", "8080")
    return f"http://127.0.0.1:{port}"


GATEWAY = typer.Option(default_gateway(), envvar="HEADWATER_GATEWAY_URL",
                       help="gateway base URL (default: 127.0.0.1 on $HEADWATER_GATEWAY_PORT)")


def styled(status: str) -> str:
    """``status`` as console markup in its colour (plain when it has none, such as
    ``accepted``: an empty tag is a markup error)."""
    style = STYLE.get(status)
    return f"[{style}]{escape(status)}[/]" if style else escape(status)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` and end the command with exit ``code``.

    Raises:
        typer.Exit: always.
    """
    console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def unreachable(gateway: str, error: BaseException) -> NoReturn:
    """End the command: the gateway at ``gateway`` cannot be reached (exit 2).

    Raises:
        typer.Exit: always.
    """
    fail(f"cannot reach the gateway at {gateway} ({error}); is the stack up "
         "(`headwater up`)? Set HEADWATER_GATEWAY_URL to use another one.")
