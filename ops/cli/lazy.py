"""Commands imported only when run: ``headwater --help`` lists every command from a table
of names and one-line helps, and ``headwater status ID`` imports the status command's
module alone, not the Kafka, PostgreSQL and HTTP-server libraries of the others (each
CLI call used to spend about 1.5 s importing them before doing anything).

Click's documented way ("Lazily Loading Subcommands", click.palletsprojects.com,
"Complex Applications"): a group whose ``get_command`` imports on demand.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """A command known by name until it runs.

    Attributes:
        module: the module that defines it.
        attr: its function (a command) or ``typer.Typer`` (a group of commands) there;
            ``a|b``: the first of these names the module has.
        help: its one-line help for ``--help`` (the first line of its docstring or the
            group's ``help``; a unit test keeps them equal).
        panel: the ``--help`` panel it is listed in.
        optional: listed only when ``module`` exists (another part of the project may
            not have it yet).
    """

    module: str
    attr: str
    help: str
    panel: str
    optional: bool = False

    def available(self) -> bool:
        """Whether its module exists (found without importing it)."""
        return not self.optional or importlib.util.find_spec(self.module) is not None

    def load(self, name: str) -> Any:
        """Import it and build its click command (a group for a ``typer.Typer``)."""
        module = importlib.import_module(self.module)
        found = [getattr(module, a) for a in self.attr.split("|") if hasattr(module, a)]
        if not found:
            raise AttributeError(f"{self.module} has none of {self.attr.split('|')}")
        target = found[0]
        if isinstance(target, typer.Typer):
            group = typer.main.get_group(target)
            group.name = name
            return plain_help(group)
        single = typer.Typer(add_completion=False)
        single.command(name, rich_help_panel=self.panel)(target)
        return plain_help(typer.main.get_command(single))


_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+?)``")


def plain(text: str) -> str:
    """Help text without reStructuredText markup: a docstring's ``literal`` and
    ``:role:`target``` read as `literal` and `target`, as the helps' own quotes do."""
    return _LITERAL.sub(r"`\1`", _ROLE.sub(r"`\1`", text))


def plain_help(command: Any) -> Any:
    """``command`` (and its subcommands) with its help, its options' and arguments'
    helps ``plain``: the commands' helps are their docstrings, written for the source's
    readers too."""
    for attr in ("help", "short_help", "epilog"):
        if getattr(command, attr, None):
            setattr(command, attr, plain(getattr(command, attr)))
    for param in command.params:
        if getattr(param, "help", None):
            param.help = plain(param.help)
    for sub in getattr(command, "commands", {}).values():  # a group's
        plain_help(sub)
    return command


LAZY: dict[str, LazyCommand] = {}
"""Name -> lazy command, filled by ``ops.cli.app``."""


class LazyGroup(TyperGroup):
    """The root group: its own commands plus those of ``LAZY``, imported when run."""

    listing = False  # True while formatting --help: stand-ins, nothing imported

    def list_commands(self, ctx: Any) -> list[str]:
        """The available lazy ones, in the table's order, then its own commands."""
        own = super().list_commands(ctx)
        return [n for n, c in LAZY.items() if n not in own and c.available()] + own

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``: imported now if lazy (a stand-in with its help only
        while ``--help`` lists the commands)."""
        found = super().get_command(ctx, cmd_name)
        lazy = LAZY.get(cmd_name)
        if found is not None or lazy is None or not lazy.available():
            return found
        if self.listing:
            return TyperCommand(cmd_name, help=lazy.help, rich_help_panel=lazy.panel)
        command = lazy.load(cmd_name)
        self.add_command(command, cmd_name)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The help, listing lazy commands by their table entry."""
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False
