"""``headwater webhooks``: create or replace, list, show and delete webhooks, list a
webhook's deliveries with their attempts and redeliver one, through the gateway's ``/v1/webhooks``
(``headwater.client``'s ``Client.webhooks``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail, print_table, styled
from ops.cli.resources import JsonOpt, read_file, sub_app
from ops.cli.workflows import client, gateway_errors

if TYPE_CHECKING:
    from headwater.client import Client

webhooks_app = sub_app("Webhooks: signed deliveries of run events.")
NameArg = Annotated[str, typer.Argument(help="the webhook's name")]
A = TypeVar("A")
EVENTS_HELP = ("an event to deliver (repeat it): run.ended, run.succeeded, run.failed, "
               "run.cancelled, run.waiting")


def _ask(gateway: str, asking: Callable[[Client], A]) -> A:
    with gateway_errors(gateway), client(gateway) as hw:
        return asking(hw)


def _print_json(doc: Any) -> None:
    typer.echo(json.dumps(doc, indent=2))


def _applied(doc: dict[str, Any]) -> None:
    console.print(f"{escape(doc['name'])}: {', '.join(doc['events'])} to "
                  f"{escape(doc['url'])}")


@webhooks_app.command()
def put(name: NameArg,
        url: Annotated[str, typer.Option(help="where deliveries are posted")],
        secret: Annotated[str, typer.Option(envvar="HEADWATER_WEBHOOK_SECRET",
                                            help="the signatures' key (16+ characters)")],
        event: Annotated[list[str], typer.Option(help=EVENTS_HELP)],
        run_name: Annotated[list[str] | None, typer.Option(
            help="only runs of this spec name (repeat it)")] = None,
        definition: Annotated[list[str] | None, typer.Option(
            help="only runs of this definition (repeat it)")] = None,
        max_attempts: Annotated[int | None, typer.Option(help="attempts before the "
                                                          "dead letter (default 8)")] = None,
        backoff: Annotated[float | None, typer.Option(help="seconds after the first failed "
                                                      "attempt, doubled after each")] = None,
        gateway: str = GATEWAY) -> None:
    """Create or replace the webhook NAME."""
    retry = {k: v for k, v in (("max_attempts", max_attempts), ("backoff_s", backoff))
             if v is not None}
    doc = _ask(gateway, lambda hw: hw.webhooks.put(
        name, url=url, events=event, secret=secret,
        filter={"names": run_name or [], "definitions": definition or []},
        retry=retry or None))
    _applied(doc)


@webhooks_app.command()
def apply(file: Annotated[Path, typer.Argument(help="YAML or JSON: name, url, events, "
                                                     "secret, filter, retry")],
          name: Annotated[str | None, typer.Option(help="the webhook's name (default: "
                                                        "the file's name:)")] = None,
          gateway: str = GATEWAY) -> None:
    """Create or replace the webhook in FILE."""
    doc = read_file(file)
    if not isinstance(doc, dict):
        fail(f"{file} holds no mapping (url, events, secret, ...)")
    target = name or doc.get("name")
    if not isinstance(target, str) or not target:
        fail(f"{file} has no name: add name: or give --name")
    body = {k: v for k, v in doc.items() if k != "name"}
    _applied(_ask(gateway, lambda hw: hw.webhooks.apply(target, body)))


@webhooks_app.command("list")
def list_webhooks(as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List the webhooks, by name."""
    found = _ask(gateway, lambda hw: hw.webhooks.list())
    if as_json:
        _print_json(found)
        return
    table = Table("name", "url", "events", "filter", box=None)
    for hook in found:
        table.add_row(escape(hook["name"]), escape(hook["url"]), ", ".join(hook["events"]),
                      escape(_filter(hook["filter"])))
    if not found:
        console.print("no webhooks")
        return
    print_table(table, whole=("name",))


def _filter(doc: dict[str, Any]) -> str:
    parts = [f"{key}: {', '.join(doc[key])}" for key in ("names", "definitions")
             if doc.get(key)]
    return "; ".join(parts) or "every run"


@webhooks_app.command()
def show(name: NameArg, as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """Show a webhook's settings (never its secret)."""
    hook = _ask(gateway, lambda hw: hw.webhooks.get(name))
    if as_json:
        _print_json(hook)
        return
    retry = hook["retry"]
    console.print(f"[bold]{escape(hook['name'])}[/] -> {escape(hook['url'])}")
    console.print(f"events {', '.join(hook['events'])}; {escape(_filter(hook['filter']))}; "
                  f"tenant {escape(hook.get('tenant') or 'every tenant')}")
    console.print(f"retries: {retry['max_attempts']} attempts, from {retry['backoff_s']:g} s "
                  f"doubling to {retry['backoff_max_s']:g} s")


@webhooks_app.command()
def delete(name: NameArg, gateway: str = GATEWAY) -> None:
    """Delete a webhook: nothing more is delivered to it."""
    _ask(gateway, lambda hw: hw.webhooks.delete(name))
    console.print(f"{escape(name)} deleted")


def _attempts(delivery: dict[str, Any]) -> str:
    return ", ".join(str(a["status_code"]) if a.get("status_code") is not None
                     else (a.get("error") or "no answer")[:40]
                     for a in delivery.get("attempts") or [])


@webhooks_app.command()
def deliveries(name: NameArg,
               status: Annotated[str | None, typer.Option(
                   help="pending, delivered or dead")] = None,
               run: Annotated[str | None, typer.Option(help="one run's (its id)")] = None,
               as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List a webhook's latest deliveries, newest first, with their attempts."""
    found = _ask(gateway, lambda hw: hw.webhooks.deliveries(name, status=status,
                                                            workflow_id=run))
    if as_json:
        _print_json(found)
        return
    table = Table("delivery", "run", "event", "status", "attempts", "next / reason", box=None)
    for d in found:
        table.add_row(d["id"], escape(d["workflow_id"]), d["event"], styled(d["status"]),
                      escape(_attempts(d)), escape(d.get("next_attempt_at") or
                                                   d.get("reason") or ""))
    if not found:
        console.print("no deliveries")
        return
    print_table(table, whole=("delivery", "run"))  # ids are copied to redeliver


@webhooks_app.command()
def redeliver(name: NameArg,
              delivery: Annotated[str, typer.Argument(help="the delivery's id (d_...)")],
              gateway: str = GATEWAY) -> None:
    """Try a dead (or delivered) delivery once more, now, with the same id and body."""
    doc = _ask(gateway, lambda hw: hw.webhooks.redeliver(name, delivery))
    console.print(f"{doc['id']}: due again ({len(doc.get('attempts') or [])} attempts so far)")
