"""``headwater X --help`` shows no reStructuredText markup: the helps are the commands'
docstrings, written with ``literals`` and :func:`roles` for the source's readers, and
the lazy loader (``ops.cli.lazy.plain_help``) turns those into plain `quotes`."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.lazy import plain
from ops.cli.run import run

MARKUP = re.compile(r"``|:(?:[a-z]+:)?[a-z]+:`|`[^`\n]*`_\b|^\s*\.\. ", re.MULTILINE)
"""reStructuredText in help text: ``literal``, :role:`x` (or :py:role:`x`), `link`_ and
``.. directive``."""
runner = CliRunner()


def command_paths() -> list[list[str]]:
    """Every command and subcommand of ``headwater``, as its argv."""
    root = typer.main.get_command(app)
    ctx = click.Context(root)
    paths: list[list[str]] = [[]]
    for name in root.list_commands(ctx):
        command: Any = root.get_command(ctx, name)
        paths.append([name])
        paths.extend([name, sub] for sub in getattr(command, "commands", {}))
    return paths


PATHS = command_paths()


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "headwater" for p in PATHS])
def test_help_has_no_restructuredtext_markup(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    found = [line.strip() for line in result.output.splitlines() if MARKUP.search(line)]
    assert found == [], f"headwater {' '.join(path)} --help shows markup: {found}"


def test_every_command_is_scanned_and_the_scan_sees_markup() -> None:
    names = {" ".join(p) for p in PATHS}
    assert {"up", "run", "keys create", "worker stop", "definitions list"} <= names
    assert MARKUP.search(run.__doc__ or "")  # the docstring has it; its help (above) not


@pytest.mark.parametrize(("text", "expected"), [
    ("E.g. ``headwater run docs``.", "E.g. `headwater run docs`."),
    ("see :func:`ops.cli.run.run` and :py:class:`~headwater.Client`",
     "see `ops.cli.run.run` and `headwater.Client`"),
    ("plain `quotes` stay", "plain `quotes` stay"),
])
def test_plain(text: str, expected: str) -> None:
    assert plain(text) == expected
