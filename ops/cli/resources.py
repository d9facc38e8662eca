"""What ``headwater definitions`` and ``headwater schedules`` share: a registry the
gateway keeps by name (``Client.definitions``, ``Client.schedules``), applied from a YAML
or JSON file, listed, shown and deleted through the Python client.

Each sub-app keeps its own commands and help texts: ``Registry.apply_command`` declares
``apply FILE [--name NAME] [--gateway URL]`` once for both, and the commands' bodies
are a ``Registry``'s methods, so both print and exit alike: a table or ``--json`` for
``list``, ``--json`` or a description for ``show``, ``NAME deleted: no new runs``, and
the gateway's errors as ``ops.cli.workflows.gateway_errors`` ends a command with them
(exit 1 for a 404, else 2; 2 for an unreachable gateway or a file that cannot be read).
Light on purpose, as ``ops.cli.common``: the client (httpx) is imported when a command
runs, not with this module.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Generic, Protocol, TypeVar

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail
from ops.cli.workflows import client, gateway_errors

if TYPE_CHECKING:
    from headwater.client import Client


class Item(Protocol):
    """An item of a registry as the client returns it (``Definition``, ``Schedule``)."""

    @property
    def raw(self) -> dict[str, Any]:
        """The gateway's whole document of it (what ``--json`` prints)."""
        ...


JsonOpt = Annotated[bool, typer.Option("--json", help="print the raw JSON")]
"""``--json``: print the gateway's documents as they are (``list`` and ``show``)."""
T = TypeVar("T", bound=Item)
A = TypeVar("A")
Apply = Callable[[Path, "str | None", str], None]
"""An ``apply`` command's body: ``(FILE, --name or None, --gateway)``."""


class Store(Protocol[T]):
    """A registry of the client (``Client.definitions``, ``Client.schedules``)."""

    def list(self) -> builtins.list[T]:
        """Every live item, by name."""
        ...

    def delete(self, name: str) -> None:
        """Delete the item ``name`` (no new runs of it)."""
        ...


def sub_app(help: str) -> typer.Typer:
    """A registry's group of commands (``headwater definitions ...``): ``help`` is its
    one-line help; without a command it prints its help (exit 2)."""
    return typer.Typer(help=help, no_args_is_help=True, add_completion=False)


def read_file(path: Path) -> Any:
    """The YAML (or JSON) document in ``path``, as ``yaml.safe_load`` reads it.

    Raises:
        typer.Exit: the file cannot be read or parsed (exit 2, naming it).
    """
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        fail(f"cannot read {path}: {e}")


@dataclass(frozen=True)
class Registry(Generic[T]):
    """One registry's commands, as its sub-app runs them.

    Attributes:
        noun: what one item is called (``definition``: ``the definition's name``).
        plural: what its items are called (``definitions``: ``no definitions``).
        store: the client's registry (``lambda hw: hw.definitions``).
        columns: the headers of ``list``'s table.
        row: an item's cells in that table (console markup, escaped).
    """

    noun: str
    plural: str
    store: Callable[[Client], Store[T]]
    columns: tuple[str, ...]
    row: Callable[[T], Sequence[str]]

    def apply_command(self, app: typer.Typer, file_help: str,
                      name_default: str) -> Callable[[Apply], Apply]:
        """A decorator registering a ``(file, name, gateway)`` function as ``app``'s
        ``apply FILE [--name NAME] [--gateway URL]``, its docstring the command's help.

        Args:
            app: the sub-app.
            file_help: ``FILE``'s help (what the file holds).
            name_default: where the name comes from without ``--name`` (``the spec's
                name``), in ``--name``'s help.
        """
        file_param = typer.Argument(..., help=file_help)
        name_param = typer.Option(None, help=f"the {self.noun}'s name (default: "
                                             f"{name_default})")

        def register(body: Apply) -> Apply:
            def apply(file: Path = file_param, name: str | None = name_param,
                      gateway: str = GATEWAY) -> None:
                body(file, name, gateway)

            apply.__doc__ = body.__doc__
            app.command()(apply)
            return body

        return register

    def ask(self, gateway: str, asking: Callable[[Client], A]) -> A:
        """``asking`` with a client of ``gateway``; what it raises ends the command.

        Raises:
            typer.Exit: the gateway refused (1 for a 404, else 2) or cannot be reached
                (2).
        """
        with gateway_errors(gateway), client(gateway) as hw:
            answer = asking(hw)
        return answer

    def tell(self, gateway: str, asking: Callable[[Client], A],
             said: Callable[[A], str]) -> None:
        """``ask``, then print the line ``said`` makes of the answer (console markup).

        Raises:
            typer.Exit: as ``ask``.
        """
        console.print(said(self.ask(gateway, asking)))

    def list(self, as_json: bool, gateway: str) -> None:
        """Print every item: a table of ``columns`` (``no <plural>`` when empty), or,
        with ``as_json``, the items' documents as a JSON array.

        Raises:
            typer.Exit: as ``ask``.
        """
        found = self.ask(gateway, lambda hw: self.store(hw).list())
        if as_json:
            typer.echo(json.dumps([item.raw for item in found], indent=2))
            return
        table = Table(*self.columns, box=None)
        for item in found:
            table.add_row(*self.row(item))
        console.print(table if found else f"no {self.plural}")

    def show(self, gateway: str, asking: Callable[[Client], T], as_json: bool,
             describe: Callable[[T], None]) -> None:
        """Print one item (``asking`` reads it): its document as JSON with ``as_json``,
        else as ``describe`` prints it.

        Raises:
            typer.Exit: as ``ask``.
        """
        found = self.ask(gateway, asking)
        if as_json:
            typer.echo(json.dumps(found.raw, indent=2))
            return
        describe(found)

    def delete(self, name: str, gateway: str) -> None:
        """Delete the item ``name`` and say so (``NAME deleted: no new runs``).

        Raises:
            typer.Exit: as ``ask``.
        """
        self.tell(gateway, lambda hw: self.store(hw).delete(name),
                  lambda _: f"{escape(name)} deleted: no new runs")
