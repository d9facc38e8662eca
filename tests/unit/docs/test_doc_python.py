"""The Python blocks of the README and the pages under ``docs/``: each parses, each name it
imports exists, and each that needs no running stack runs as printed, in a fresh
interpreter (the ``@task`` blocks register the tasks they name). Blocks that talk to the
gateway (``Client(``) or build a Kafka producer at import (``Producer(``) run against the
stack in ``tests/e2e/test_readme_client.py`` (the client blocks)."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys

import pytest

from tests.docpages import REPO, Block, blocks, client_blocks, pages

PYTHON = [b for page in pages() for b in blocks(page, "python")]
_NEEDS_STACK = re.compile(r"\bClient\(|\bProducer\(")
_TASK = re.compile(r"^@task\b", re.M)
_TASK_NAME = re.compile(r"@task\(name=\"([^\"]+)\"")

# Runs a block, then prints the names of the tasks it registered (JSON).
_RUNNER = """
import json, sys
space = {"__name__": "__doc_block__"}
exec(compile(sys.stdin.read(), "<block>", "exec"), space)
tasks = [v.__headwater_task__.name for v in space.values() if hasattr(v, "__headwater_task__")]
print(json.dumps(sorted(tasks)))
"""


def imported_names(code: str) -> list[tuple[str, str | None]]:
    """``(module, name)`` for each import of a block (``name`` None for ``import m``)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def unresolved(code: str) -> list[str]:
    """The imports of a block that do not resolve: a missing module, or a missing name in
    one."""
    missing: list[str] = []
    for module, name in imported_names(code):
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            missing.append(module)
            continue
        if name is not None and not hasattr(loaded, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    return missing


def test_the_pages_show_python() -> None:
    assert len(PYTHON) >= 6, [b.where() for b in PYTHON]
    assert len(client_blocks()) >= 2, "the client blocks are gone"


@pytest.mark.parametrize("block", PYTHON, ids=Block.where)
def test_each_block_parses_and_its_imports_resolve(block: Block) -> None:
    ast.parse(block.code, filename=block.where())
    assert unresolved(block.code) == []


@pytest.mark.parametrize("block", [b for b in PYTHON if not _NEEDS_STACK.search(b.code)],
                         ids=Block.where)
def test_each_block_that_needs_no_stack_runs(block: Block) -> None:
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=block.code, cwd=REPO,
                          text=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    registered = json.loads(done.stdout.splitlines()[-1])
    assert len(registered) == len(_TASK.findall(block.code)), registered
    assert set(_TASK_NAME.findall(block.code)) <= set(registered), registered


def test_an_import_that_does_not_resolve_is_named() -> None:
    code = "import json\nfrom headwater import task, no_such_name\nimport no_such_module_x\n"
    assert unresolved(code) == ["headwater.no_such_name", "no_such_module_x"]
