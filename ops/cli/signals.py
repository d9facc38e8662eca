"""``headwater signal``: send a signal to a workflow's wait node, its fields given as
``--field NAME=VALUE`` (``signal_fields``, which ``headwater bulk signal`` reads the same
way), and with ``--wait`` what became of it (``fate_line``): consumed, buffered,
discarded or refused. The signal's id is the client's unless ``--id`` gives one, kept
across retries, so a retried send changes nothing. Exit codes: 0 sent (with ``--wait``:
taken), 1 unknown workflow (404) or, with ``--wait``, a signal not taken, 2 any other
refusal or an unreachable gateway.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console
from ops.cli.queue_notes import print_warnings
from ops.cli.workflows import client, gateway_errors


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def signal_fields(pairs: list[str]) -> dict[str, Any]:
    """The fields of ``--field NAME=VALUE`` options: each value as JSON when it parses
    as JSON (``true``, ``3``, ``{"a": 1}``, ``"quoted"``), else as the string it is
    (``yes``, ``two words``). ``NaN`` and ``Infinity`` are strings: JSON has no such
    numbers.

    Raises:
        typer.BadParameter: a pair without ``=`` or without a name, or a name given twice.
    """
    fields: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--field {pair!r}: expected NAME=VALUE")
        if name in fields:
            raise typer.BadParameter(f"--field {name} is given twice")
        try:
            fields[name] = json.loads(raw, parse_constant=_reject_constant)
        except ValueError:  # json.JSONDecodeError is one
            fields[name] = raw
    return fields


def signal(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    name: Annotated[str, typer.Argument(help="the signal's name (a wait node's signal:)")],
    field: Annotated[list[str] | None, typer.Option(
        "--field", "-f", help="a field as NAME=VALUE (VALUE is JSON when it parses, "
                              "else a string); repeat for each field")] = None,
    index: Annotated[int | None, typer.Option(
        min=0, help="the map item whose wait it is for (a wait with over)")] = None,
    signal_id: Annotated[str | None, typer.Option(
        "--id", help="the signal's id: sending the same id again changes nothing "
                     "(default: a random one, kept across retries)")] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="wait until the run applied it and print its fate (consumed, "
                       "buffered, discarded, refused); exit 1 unless it was taken")] = False,
    timeout: Annotated[float, typer.Option(
        min=0, help="with --wait: how long to wait, seconds")] = 30.0,
    gateway: str = GATEWAY,
) -> None:
    """Send a signal to a workflow's wait node.

    E.g. ``headwater signal wf-1 approval --field approved=true --field note="looks
    good"``; with ``--wait``, also what became of it.
    """
    fields = signal_fields(field or [])
    with gateway_errors(gateway), client(gateway) as hw:
        answer = hw.signal(workflow_id, name, fields, index=index, signal_id=signal_id)
        sent_id = str(answer.get("signal_id"))
        console.print(f"signal {escape(name)} sent to {escape(workflow_id)} "
                      f"(signal id {escape(sent_id)})")
        print_warnings(answer, console)  # a code workflow waiting for other signals now
        if not wait:
            return
        fate = hw.wait_signal(workflow_id, sent_id, timeout)
    console.print(f"signal {escape(sent_id)}: {escape(fate_line(fate.raw, timeout))}")
    if not fate.taken:
        raise typer.Exit(1)


def fate_line(doc: dict[str, Any], timeout_s: float) -> str:
    """A signal's fate (``GET .../signals/{signal_id}``) in a few words."""
    status = str(doc.get("status"))
    if status == "consumed":
        return f"consumed by {doc.get('node')} at {doc.get('at')}"
    if status == "buffered":
        return "buffered: kept until its wait starts"
    if status == "received":
        return f"received, not applied within {timeout_s:g} s"
    return f"{status}: {doc.get('reason')}"
