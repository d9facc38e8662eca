"""The ``headwater`` commands in the shell blocks of the README and the pages under
``docs/`` exist as printed: each verb (and sub-verb of a group such as ``definitions`` or
``keys``) answers ``--help``, and each option a command line uses is one that help lists.
The CLI runs through its console-script entry point (``[project.scripts]`` in
``pyproject.toml``), in a fresh interpreter, as a user's shell would run it."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
import tomllib

import pytest

from tests.docpages import REPO, blocks, pages

_PLACEHOLDER = re.compile(r"<[^<>\n]*>")
_RUNS_IT = re.compile(r"(?:^|[\s/])headwater(?:\s|$)")


def command_lines(code: str) -> list[list[str]]:
    """The arguments after ``headwater`` of each command line of a shell block that runs
    it (continuation lines joined, comments and ``<placeholders>`` dropped)."""
    found: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        if not _RUNS_IT.search(line):
            continue
        words = shlex.split(_PLACEHOLDER.sub("X", line), comments=True)
        at = [i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == "headwater"]
        if at:
            found.append(words[at[0] + 1:])
    return found


COMMANDS = [pytest.param(args, id=f"{b.where()} {' '.join(args)}") for page in pages()
            for b in blocks(page, "bash", "sh", "shell") for args in command_lines(b.code)]


@functools.cache
def help_of(*path: str) -> str:
    """What ``headwater PATH... --help`` prints (fails the test if it does not exit 0)."""
    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = entry["headwater"].partition(":")
    code = (f"import sys; sys.argv = ['headwater', *sys.argv[1:]]; "
            f"from {module} import {func}; {func}()")
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-c", code, *path, "--help"], cwd=REPO, env=env,
                          text=True, capture_output=True, timeout=60)
    assert done.returncode == 0, f"headwater {' '.join(path)} --help: {done.stderr}"
    return done.stdout


def verb_path(args: list[str]) -> tuple[str, ...]:
    """The verb, and the sub-verb when the verb is a group of commands."""
    verb = args[0]
    if len(args) > 1 and not args[1].startswith("-") and "Commands" in help_of(verb):
        return (verb, args[1])
    return (verb,)


def test_the_pages_show_commands() -> None:
    verbs = {param.values[0][0] for param in COMMANDS if param.values[0]}
    assert len(verbs) >= 15, verbs


def unknown_options(args: list[str]) -> set[str]:
    """The options of a command line that its command's ``--help`` does not list."""
    shown = help_of(*verb_path(args))
    options = {arg.split("=", 1)[0] for arg in args if arg.startswith("-")}
    return {o for o in options
            if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", shown)}


@pytest.mark.parametrize("args", COMMANDS)
def test_each_command_and_its_options_exist(args: list[str]) -> None:
    assert unknown_options(args) == set()


def test_an_unknown_option_is_named() -> None:
    assert unknown_options(["status", "X", "--json", "--no-such-option"]) == {
        "--no-such-option"}


def test_a_command_line_is_read_as_a_shell_would() -> None:
    code = ("HEADWATER_TOKEN=<acme's token> .venv/bin/headwater list   # as acme\n"
            ".venv/bin/headwater submit a.yaml \\\n    --input '{\"q\": 1}' --follow\n"
            "kubectl apply -k x\n")
    assert command_lines(code) == [["list"], ["submit", "a.yaml", "--input", '{"q": 1}',
                                              "--follow"]]
