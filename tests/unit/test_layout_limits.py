"""The layout's size limits (STYLE): no module over 400 lines, no function over 60.

Every ``.py`` file under ``headwater/``, ``services/``, ``ops/``, ``faultsuite/``,
``fuzzer/``, ``load/`` and ``examples/`` is read and parsed with :mod:`ast`. A module's
size is its number of physical lines; a function's (``def`` or ``async def``, methods
and nested functions included) runs from its ``def`` line to its last line, docstring
included, decorators not. Each offender is named with its path,
line, qualified name and size. Too big means split it: one concept per module, one job
per function (ruff's complexity and size rules, in ``pyproject.toml``, check the rest).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("headwater", "services", "ops", "faultsuite", "fuzzer", "load", "examples")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


class _Functions(ast.NodeVisitor):
    """Collects ``(qualified name, def line, lines)`` of every function in a tree.

    Classes and functions are scopes: a method is named ``Class.method``, a nested
    function ``outer.inner``. Functions under ``if``/``try``/``with`` count too.
    """

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, int, int]] = []

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        end = node.end_lineno if node.end_lineno is not None else node.lineno
        self.found.append((".".join([*self.scope, node.name]), node.lineno, end - node.lineno + 1))
        self._enter(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter(node)


def long_module(path: Path, root: Path = ROOT) -> list[str]:
    """``["<path> is <n> lines (limit 400)"]`` if the file is too long, else ``[]``.

    Args:
        path: A Python source file.
        root: The directory that the path in the message is relative to.

    """
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines <= MAX_MODULE_LINES:
        return []
    return [f"{path.relative_to(root).as_posix()} is {lines} lines (limit {MAX_MODULE_LINES})"]


def long_functions(path: Path, root: Path = ROOT) -> list[str]:
    """``"<path>:<line> <qualname> is <n> lines (limit 60)"`` per function too long.

    Args:
        path: A Python source file.
        root: The directory that the path in the messages is relative to.

    Raises:
        SyntaxError: If the file does not parse.

    """
    finder = _Functions()
    finder.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    shown = path.relative_to(root).as_posix()
    return [
        f"{shown}:{line} {name} is {length} lines (limit {MAX_FUNCTION_LINES})"
        for name, line, length in finder.found
        if length > MAX_FUNCTION_LINES
    ]


def offenders(path: Path, root: Path = ROOT) -> list[str]:
    """Everything in one file that breaks a limit: the module first, then its functions."""
    return long_module(path, root) + long_functions(path, root)


def sources(root: Path = ROOT) -> list[Path]:
    """Every ``.py`` file of :data:`PACKAGES` under ``root``, sorted."""
    return sorted(
        path
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def test_every_package_is_walked() -> None:
    files = sources()
    for package in PACKAGES:
        assert [f for f in files if f.relative_to(ROOT).parts[0] == package], package


def test_no_module_over_400_lines() -> None:
    found = [message for path in sources() for message in long_module(path)]
    assert not found, "modules to split:\n" + "\n".join(found)


def test_no_function_over_60_lines() -> None:
    found = [message for path in sources() for message in long_functions(path)]
    assert not found, "functions to split:\n" + "\n".join(found)


def _function(name: str, lines: int, indent: str = "", is_async: bool = False) -> str:
    """Source of a function that is exactly ``lines`` lines long."""
    head = f"{indent}{'async ' if is_async else ''}def {name}() -> None:\n"
    return head + "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))


def test_the_checker_names_a_long_function_and_a_long_module(tmp_path: Path) -> None:
    body = (
        '"""A module that breaks both limits."""\n'
        + _function("too_long", 61)
        + _function("just_fits", 60)
        + "class Holder:\n" + _function("long_method", 61, indent="    ")
        + "def outer() -> None:\n" + _function("inner", 61, indent="    ", is_async=True)
        + "if True:\n" + _function("conditional", 61, indent="    ")
    )
    padding = MAX_MODULE_LINES + 1 - len(body.splitlines())
    assert padding > 0
    path = tmp_path / "pkg" / "big.py"
    path.parent.mkdir()
    path.write_text(body + "".join(f"y{i} = {i}\n" for i in range(padding)))
    assert len(path.read_text().splitlines()) == 401

    found = offenders(path, root=tmp_path)

    assert found == [
        "pkg/big.py is 401 lines (limit 400)",
        "pkg/big.py:2 too_long is 61 lines (limit 60)",
        "pkg/big.py:124 Holder.long_method is 61 lines (limit 60)",
        "pkg/big.py:185 outer is 62 lines (limit 60)",
        "pkg/big.py:186 outer.inner is 61 lines (limit 60)",
        "pkg/big.py:248 conditional is 61 lines (limit 60)",
    ]


def test_the_checker_passes_a_file_within_the_limits(tmp_path: Path) -> None:
    path = tmp_path / "small.py"
    path.write_text(_function("fits", 60) + "y = 1\n" * 340)
    assert len(path.read_text().splitlines()) == 400
    assert offenders(path, root=tmp_path) == []


def test_test_modules_have_unique_basenames() -> None:
    """pytest imports test modules by basename (rootdir-relative packages are not used),
    so two ``test_x.py`` in different folders collide at collection."""
    seen: dict[str, list[str]] = {}
    for path in (Path(__file__).resolve().parents[1]).rglob("*.py"):
        if path.name != "conftest.py" and "__pycache__" not in path.parts:
            seen.setdefault(path.name, []).append(str(path))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
