"""What the ``headwater`` commands share: the console, the gateway option and token,
errors that end a command, status colours. Light on purpose (no HTTP, Kafka or
database client): every command imports it, and ``headwater --help`` must start fast."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from headwater.core.status import NodeStatus

console = Console(soft_wrap=True, emoji=False)  # "retry:a:2" is no emoji code
errors_console = Console(stderr=True, soft_wrap=True, emoji=False)
"""For notes that are not the command's answer (stderr)."""

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


def gateway_token() -> str | None:
    """The token the commands send the gateway: ``HEADWATER_TOKEN``, which ``headwater
    --token`` sets (None: unset or empty; a gateway with auth off needs none)."""
    return os.environ.get("HEADWATER_TOKEN") or None


def auth_hint(status: int) -> str:
    """What to do about a 401 or a 403 of the gateway ("" for another status)."""
    if status == 401:
        return ("set HEADWATER_TOKEN (or `headwater --token`) to a token the gateway takes "
                "(`headwater keys create` makes an API key)")
    if status == 403:
        return ("use a token whose tenant and role allow it (HEADWATER_TOKEN or "
                "`headwater --token`; `headwater whoami` shows the current one's)")
    return ""


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


def print_table(table: Table, whole: Sequence[str] = (), out: Console | None = None) -> None:
    """Print ``table`` with no cell cut short: in a terminal, within its width, long
    cells fold onto more lines (never ``…``) and the columns named in ``whole`` (ids)
    keep each cell on one line unless the others cannot shrink further; piped (not a
    terminal), at the width the table needs, so each cell is on one line.

    Args:
        table: the table (its columns' overflow is set to ``fold``).
        whole: headers of the columns whose cells are copied whole (ids).
        out: the console (default: ``console``).
    """
    out = out or console
    for column in table.columns:
        column.overflow = "fold"  # the last resort of a whole column too
        column.no_wrap = column.no_wrap or column.header in whole
    if out.is_terminal:
        out.print(table)
        return
    needed = Measurement.get(out, out.options.update_width(100_000), table).maximum
    table.width = max(needed, out.width) if table.expand else needed
    out.print(table, crop=False)
