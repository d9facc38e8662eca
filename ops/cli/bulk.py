"""``headwater bulk``: cancel, signal, rerun, pause or resume every run a filter matches,
as one recorded operation (``POST /v1/operations``, ``headwater.client.operations``).

Each action first shows how many runs match and a few of them (the gateway's dry run);
``--dry-run`` stops there, ``--yes`` goes on without asking. The operation then runs in
the gateway, and the command follows its progress to its counts (``--no-wait``: prints
its id at once; ``headwater bulk show ID`` later).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console
from ops.cli.labels import label_options
from ops.cli.resources import sub_app
from ops.cli.signals import signal_fields
from ops.cli.workflows import client, gateway_errors

if TYPE_CHECKING:
    from headwater.client import Client
    from headwater.client.operations import Filter, Operation

bulk_app = sub_app("Cancel, signal or rerun every run a filter matches, as one operation.")
POLL_S = 0.5

Labels = Annotated[list[str] | None, typer.Option(
    "--label", "-l", help="KEY=VALUE (or KEY: any value): runs carrying it; repeat for all "
                          "of several")]
Status = Annotated[str | None, typer.Option(help="runs in this status")]
Definition = Annotated[str | None, typer.Option(help="runs of this definition (NAME or "
                                                     "NAME@VERSION)")]
Name = Annotated[str | None, typer.Option(help="runs of this spec name")]
Paused = Annotated[bool | None, typer.Option(
    "--paused/--not-paused", help="only the runs paused now (or only the others)",
    show_default=False)]
DryRun = Annotated[bool, typer.Option("--dry-run", help="show how many runs match, and "
                                                        "stop")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="do not ask before acting")]
Wait = Annotated[bool, typer.Option("--wait/--no-wait", help="follow the operation to its "
                                                             "counts")]


def where(label: list[str] | None, status: str | None, definition: str | None,
          name: str | None, paused: bool | None = None) -> Filter:
    """The client's filter of the options.

    Raises:
        typer.BadParameter: no filter at all (a bulk action on every run is not taken),
            or a malformed label.
    """
    found: dict[str, Any] = {"labels": label_options(label or [], any_value=True),
                             "status": status, "definition": definition, "name": name}
    given: Filter = {k: v for k, v in found.items() if v}  # type: ignore[assignment]
    if paused is not None:
        given["paused"] = paused
    if not given:
        raise typer.BadParameter("give a filter: --label, --status, --definition, --name "
                                 "or --paused/--not-paused")
    return given


def _act(action: str, filters: Filter, dry_run: bool, yes: bool, wait: bool,
         gateway: str, **args: Any) -> None:
    with gateway_errors(gateway), client(gateway) as hw:
        tried = hw.operations.dry_run(action, signal=args.get("signal"), **filters)
        more = ", more than one operation takes" if tried.over_limit else ""
        console.print(f"{tried.matched} run{'s' if tried.matched != 1 else ''} "
                      f"match{more}: " + escape(" ".join(tried.sample)) +
                      (" ..." if tried.matched > len(tried.sample) else ""))
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(tried.by_status.items()))
        console.print(f"{action} would act on {tried.to_act_on}"
                      + (f" ({statuses}; the others are skipped)"
                         if tried.to_act_on < tried.matched else ""))
        if dry_run or tried.matched == 0 or tried.over_limit:
            return
        if not yes and not typer.confirm(f"{action} {tried.matched} runs?"):
            raise typer.Exit(1)
        operation = hw.operations.start(action, **args, **filters)
        console.print(f"operation [bold]{escape(operation.id)}[/] started: {action} of "
                      f"{operation.matched} runs")
        if wait:
            operation = _follow(hw, operation)
            show_operation(operation)


def _follow(hw: Client, operation: Operation) -> Operation:
    while not operation.done:
        time.sleep(POLL_S)
        operation = hw.operations.get(operation.id)
    return operation


def show_operation(operation: Operation) -> None:
    """Print an operation's state, counts and reasons."""
    counts = operation.counts
    console.print(f"operation [bold]{escape(operation.id)}[/] {operation.action} "
                  f"{operation.state}: {operation.progress}/{operation.matched} acted on, "
                  f"{counts.get('done', 0)} done, {counts.get('skipped', 0)} skipped, "
                  f"{counts.get('failed', 0)} failed")
    for reason in operation.reasons:
        console.print(f"  {escape(reason['id'])} {reason['outcome']}: "
                      f"{escape(reason['reason'])}")


@bulk_app.command()
def cancel(label: Labels = None, status: Status = None, definition: Definition = None,
           name: Name = None, paused: Paused = None,
           reason: Annotated[str, typer.Option(help="why, recorded in each run")] = "",
           dry_run: DryRun = False, yes: Yes = False, wait: Wait = True,
           gateway: str = GATEWAY) -> None:
    """Cancel every run that matches (those that ended are skipped).

    E.g. ``headwater bulk cancel --label team=search --status running --dry-run``.
    """
    _act("cancel", where(label, status, definition, name, paused), dry_run, yes, wait,
         gateway, reason=reason)


@bulk_app.command()
def signal(signal_name: Annotated[str, typer.Argument(metavar="SIGNAL",
                                                      help="the signal's name")],
           label: Labels = None, status: Status = None, definition: Definition = None,
           name: Name = None, paused: Paused = None,
           field: Annotated[list[str] | None, typer.Option(
               help="NAME=VALUE, a field of the signal (VALUE as JSON when it parses)")
           ] = None,
           dry_run: DryRun = False, yes: Yes = False, wait: Wait = True,
           gateway: str = GATEWAY) -> None:
    """Send a signal to every run that matches (one without a wait that takes it fails,
    named)."""
    _act("signal", where(label, status, definition, name, paused), dry_run, yes, wait,
         gateway, signal=signal_name, fields=signal_fields(field or []))


@bulk_app.command()
def rerun(label: Labels = None, status: Status = None, definition: Definition = None,
          name: Name = None, paused: Paused = None,
          refresh_cache: Annotated[bool, typer.Option(
              "--refresh-cache", help="the reruns' cached nodes compute afresh")] = False,
          dry_run: DryRun = False, yes: Yes = False, wait: Wait = True,
          gateway: str = GATEWAY) -> None:
    """Rerun every failed or cancelled run that matches (the others are skipped)."""
    _act("rerun", where(label, status, definition, name, paused), dry_run, yes, wait,
         gateway, cache_refresh=refresh_cache)


@bulk_app.command()
def pause(label: Labels = None, status: Status = None, definition: Definition = None,
          name: Name = None, paused: Paused = None,
          reason: Annotated[str, typer.Option(help="why, shown with each run's status")] = "",
          dry_run: DryRun = False, yes: Yes = False, wait: Wait = True,
          gateway: str = GATEWAY) -> None:
    """Pause every run that matches: it dispatches nothing new until resumed (those that
    ended are skipped)."""
    _act("pause", where(label, status, definition, name, paused), dry_run, yes, wait,
         gateway, reason=reason)


@bulk_app.command()
def resume(label: Labels = None, status: Status = None, definition: Definition = None,
           name: Name = None, paused: Paused = None, dry_run: DryRun = False,
           yes: Yes = False, wait: Wait = True, gateway: str = GATEWAY) -> None:
    """Resume every run that matches (what each held goes out, its due timers fire)."""
    _act("resume", where(label, status, definition, name, paused), dry_run, yes, wait, gateway)


@bulk_app.command()
def show(operation_id: Annotated[str, typer.Argument(help="the operation's id")],
         as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
         gateway: str = GATEWAY) -> None:
    """Show an operation's progress and counts."""
    with gateway_errors(gateway), client(gateway) as hw:
        operation = hw.operations.get(operation_id)
    if as_json:
        console.print_json(json.dumps(operation.raw))
        return
    show_operation(operation)
