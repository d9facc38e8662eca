"""``headwater queues``: every queue's backlog, work in flight, live workers and state,
and the limits in use (each concurrency key and rate limit: what it holds and queues),
from the gateway's ``GET /v1/queues``."""

from __future__ import annotations

import json
import os
import time
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from headwater.client.http import auth_headers
from ops.cli.common import auth_hint, gateway_token, print_table

console = Console(soft_wrap=True, emoji=False)
STATE_STYLE = {"ok": "green", "no_live_workers": "red", "full": "yellow"}
EXIT_UNREACHABLE = 3


def _default_gateway() -> str:
    return os.environ.get("HEADWATER_GATEWAY_URL") or \
        f"http://127.0.0.1:{os.environ.get('HEADWATER_GATEWAY_PORT', '8080')}"


def queues(
    gateway: Annotated[str | None, typer.Option(
        "--gateway", show_default=False,
        help="gateway base URL (default: $HEADWATER_GATEWAY_URL, else 127.0.0.1 on "
             "$HEADWATER_GATEWAY_PORT)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
) -> None:
    """Show every queue: backlog, in flight, live workers, the tasks they serve, the
    oldest waiting dispatch, maxdepth and state (ok, no_live_workers, full).

    Exit status: 0 every queue ok, 1 some queue without live workers or full, 2 the
    gateway answered with an error, 3 the gateway is unreachable.
    """
    url = gateway or _default_gateway()
    try:
        response = httpx.get(f"{url}/v1/queues", headers=_headers(), timeout=30)
    except httpx.TransportError as e:
        console.print(f"[red]error:[/] cannot reach the gateway at {escape(url)} "
                      f"({escape(str(e))}); is the stack up (`headwater up`)?")
        raise typer.Exit(EXIT_UNREACHABLE) from e
    if response.status_code >= 400:
        hint = auth_hint(response.status_code)
        console.print(f"[red]error:[/] {response.status_code} {escape(_detail(response))}"
                      + (f": {escape(hint)}" if hint else ""))
        raise typer.Exit(2)
    doc = response.json()
    found: list[dict[str, Any]] = doc["queues"]
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
    else:
        show(found)
        show_limits(doc.get("limits"))
    if any(q["state"] != "ok" for q in found):
        raise typer.Exit(1)


def _headers() -> dict[str, str]:
    """The token's header (``common.gateway_token``).

    Raises:
        typer.Exit: a token that cannot be sent (exit 2).
    """
    try:
        return auth_headers(gateway_token())
    except ValueError as e:
        console.print(f"[red]error:[/] {escape(str(e))}")
        raise typer.Exit(2) from None


def _detail(response: httpx.Response) -> str:
    """An error answer's problem ``detail`` (its text when it is no problem document)."""
    try:
        doc = response.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("detail"):
        return str(doc["detail"])
    return response.text[:500]


def show(found: list[dict[str, Any]]) -> None:
    """Print the queues for people: one row per queue, then its live workers."""
    if not found:
        console.print("no queues yet (no worker announced itself, no tasks topic)")
        return
    table = Table("queue", "state", "backlog", "in flight", "live workers", "oldest waiting",
                  "maxdepth", "tasks")
    for q in found:
        style = STATE_STYLE.get(q["state"], "")
        oldest = q["oldest_waiting_s"]
        table.add_row(escape(q["queue"]), f"[{style}]{escape(q['state'])}[/]",
                      str(q["backlog"]), str(q["in_flight"]), str(q["live_workers"]),
                      "-" if oldest is None else f"{oldest:g} s",
                      str(q["maxdepth"] or "unlimited"), escape(", ".join(q["tasks"])))
    print_table(table, whole=("queue",), out=console)
    workers = Table("worker", "queue", "host", "pid", "version", "in flight",
                    "last announced")
    rows = [(q, w) for q in found for w in q["workers"]]
    for q, w in rows:
        workers.add_row(escape(w["worker_id"]), escape(q["queue"]), escape(w["host"]),
                        str(w["pid"]), escape(w["version"]),
                        f"{w['in_flight']}/{w['concurrency']}", f"{w['announced_s_ago']:g} s ago")
    if rows:
        print_table(workers, whole=("worker",), out=console)
    lost = [(q, w) for q in found for w in q.get("lost_workers") or []]
    for q, w in lost:
        console.print(f"[red]lost:[/] worker {escape(w['worker_id'])} of queue "
                      f"{escape(q['queue'])} ({escape(w['host'])}, pid {w['pid']}) stopped "
                      f"announcing itself; last heard {escape(w['last_heard_at'])} with "
                      f"{w['in_flight']} in flight")


def show_limits(limits: list[dict[str, Any]] | None) -> None:
    """Print the limiters in use, one row each (nothing without any; a line when the
    gateway could not read them)."""
    if limits is None:
        console.print("[yellow]the limits could not be read[/] (the projection's database)")
        return
    if not limits:
        return
    table = Table("limit key", "kind", "limit", "holding", "queued", "granted")
    for lim in limits:
        rate = lim["kind"] == "rate" and lim.get("window_s")
        table.add_row(escape(str(lim["key"])), escape(lim["kind"]),
                      f"{lim['limit']} per {lim['window_s']:g} s" if rate else str(lim["limit"]),
                      f"{lim['holding']} in the window" if rate else str(lim["holding"]),
                      str(lim["queued"]), str(lim["granted"]))
    print_table(table, whole=("limit key",), out=console)


def wait_for_workers(gateway: str, queue: str, timeout_s: float = 30.0,
                     poll_s: float = 0.2) -> dict[str, Any]:
    """Wait until the gateway knows a live worker of ``queue`` (``GET /v1/queues``):
    what a script that has just started a worker does before it submits, since a task
    no live worker serves is refused (400) and a worker takes a second or two to
    announce itself.

    Args:
        gateway: the gateway's base URL.
        queue: the queue.
        timeout_s: how long to wait, seconds.
        poll_s: how often to ask, seconds.

    Returns:
        The queue's entry of ``GET /v1/queues``.

    Raises:
        TimeoutError: no live worker of ``queue`` within ``timeout_s`` (the message has
            the last answer or error).
    """
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        try:
            response = httpx.get(f"{gateway}/v1/queues", headers=auth_headers(gateway_token()),
                                 timeout=poll_s + 5)
            if response.status_code == 200:
                entry = next((q for q in response.json()["queues"] if q["queue"] == queue),
                             None)
                if entry is not None and entry["live_workers"] > 0:
                    return dict(entry)
                last = f"queue {queue}: {entry}"
            else:
                last = f"{response.status_code} {response.text[:200]}"
        except httpx.TransportError as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            raise TimeoutError(f"no live worker of queue {queue} within {timeout_s:g} s "
                               f"({last})")
        time.sleep(poll_s)
