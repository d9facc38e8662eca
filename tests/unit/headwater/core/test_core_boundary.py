"""The core stays pure: no module of ``headwater/core`` imports I/O, a clock or randomness.

Each import of each core module (found with ``ast``, so an import inside a function or
under ``TYPE_CHECKING`` counts too) must be another core module, the exception tree
(``headwater.errors``, itself import-free), a pure part of the standard library, or one
of the pure data libraries named below. Anything else fails with the module and the
import named: add it to ``PURE`` only if it can do no I/O and read no clock.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
CORE = ROOT / "headwater" / "core"

PURE = frozenset({
    # standard library: data structures, typing, text and numbers
    "__future__", "abc", "collections", "collections.abc", "dataclasses", "enum",
    "functools", "itertools", "math", "operator", "re", "types", "typing", "hashlib",
    "string", "copy", "bisect", "heapq", "numbers", "decimal", "fractions", "json",
    "keyword", "textwrap",
    "difflib",  # "did you mean" (``suggest``): string likeness only
    "graphlib",  # a topological order (``spec.input_refs``)
    "ast",  # parsing only: ``when`` conditions are parsed, never compiled or run
    # data libraries that parse and serialise only
    "orjson", "yaml",
    # the one exception tree
    "headwater.errors",
    # what a value stored by reference looks like (``hashlib`` and ``orjson`` only)
    "headwater.blobs",
})
"""Modules a core module may import besides ``headwater.core.*``."""

PURE_IN = {"instants.py": frozenset({"datetime"}),
           "cron.py": frozenset({"datetime", "zoneinfo", "croniter"})}
"""Modules one core module may import besides ``PURE``: ``datetime`` parses RFC 3339
instants in ``instants.py``; ``kinds/schedule/cron.py`` computes a schedule's fire times with
``croniter`` in a ``zoneinfo`` time zone, pure computation over given instants and the
time zone database. Neither may read the clock (``CLOCK_NAMES``)."""

CLOCK_NAMES = frozenset({"now", "today", "utcnow", "time", "fromtimestamp",
                         "utcfromtimestamp", "astimezone", "localtime"})
"""Names that read the clock or the machine's time zone."""

FORBIDDEN_EXAMPLES = ("asyncio", "socket", "time", "datetime", "random", "os", "subprocess",
                      "threading", "aiokafka", "asyncpg", "httpx", "faust", "services", "ops",
                      "uuid", "secrets", "pathlib", "logging")
"""What the rule is for (each would also fail as not in ``PURE``)."""


def imports_of(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the file; ``from a import b`` gives ``a``
    and, when ``a.b`` is a module of the core, ``a.b`` as well."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the core by construction
                continue
            module = node.module or ""
            found.append((node.lineno, module))
            if module in ("headwater", "headwater.core"):
                found.extend((node.lineno, f"{module}.{a.name}") for a in node.names)
    return found


def violations(path: Path, root: Path = ROOT) -> list[str]:
    """Why each import of ``path`` (under ``root``) breaks the boundary (empty when none
    does)."""
    out = []
    for line, module in imports_of(path):
        if module == "headwater.core" or module.startswith("headwater.core."):
            continue
        if module == "headwater":  # ``from headwater import x``: judged by x
            continue
        if module in PURE or module.split(".")[0] in PURE - {"headwater.errors"}:
            continue
        if module in PURE_IN.get(path.name, ()) and not clock_reads(path):
            continue
        out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


def clock_reads(path: Path) -> list[str]:
    """``line: name`` of every use of a name in ``CLOCK_NAMES`` in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        name = (node.attr if isinstance(node, ast.Attribute)
                else node.id if isinstance(node, ast.Name)
                else node.name if isinstance(node, ast.alias) else None)
        if name in CLOCK_NAMES:
            found.append(f"{getattr(node, 'lineno', 0)}: {name}")
    return found


def core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_the_core_has_modules() -> None:
    names = {p.parent.name if p.stem == "__init__" else p.stem for p in core_modules()}
    assert {"spec", "events", "ids", "fencing", "idempotency"} <= names


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_nothing_impure(path: Path) -> None:
    bad = violations(path)
    assert not bad, "the core must stay pure:\n" + "\n".join(bad)


def test_instants_reads_no_clock() -> None:
    assert clock_reads(CORE / "instants.py") == []
    assert clock_reads(CORE / "kinds" / "schedule" / "cron.py") == []


def test_croniter_is_allowed_in_the_schedules_cron_only(tmp_path: Path) -> None:
    """The check itself: another core module importing croniter or zoneinfo is refused."""
    fake = tmp_path / "headwater" / "core" / "other.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("import croniter\nimport zoneinfo\n")
    assert violations(fake, tmp_path) == ["headwater/core/other.py:1 imports croniter",
                                          "headwater/core/other.py:2 imports zoneinfo"]


def test_a_clock_read_beside_datetime_is_refused(tmp_path: Path) -> None:
    """The check itself: ``datetime`` is allowed in instants.py only without a clock."""
    fake = tmp_path / "headwater" / "core" / "instants.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from datetime import datetime\n\nSTART = datetime.now()\n")
    assert violations(fake, tmp_path) == ["headwater/core/instants.py:1 imports datetime"]
    fake.write_text("from datetime import datetime\n\nEPOCH = datetime(1970, 1, 1)\n")
    assert violations(fake, tmp_path) == []
    other = fake.with_name("other.py")
    other.write_text("import datetime\n")
    assert violations(other, tmp_path) == ["headwater/core/other.py:1 imports datetime"]


def test_the_exception_tree_imports_nothing() -> None:
    errors = ROOT / "headwater" / "errors.py"
    assert [m for _, m in imports_of(errors) if m != "__future__"] == []


@pytest.mark.parametrize("module", FORBIDDEN_EXAMPLES)
def test_an_impure_import_is_named(tmp_path: Path, module: str) -> None:
    """The check itself: a core module importing one of these is refused, by name."""
    fake = tmp_path / "headwater" / "core" / "leaky.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"from __future__ import annotations\n\ndef f() -> None:\n"
                    f"    import {module}\n")
    assert violations(fake, tmp_path) == [f"headwater/core/leaky.py:4 imports {module}"]


def test_task_code_importing_headwater_pulls_in_no_operator_machinery() -> None:
    """``import headwater`` (what a task module does) loads neither process management,
    Kafka, PostgreSQL nor the operator tools."""
    code = ("import sys, headwater; print(' '.join(sorted(m for m in sys.modules if m in "
            "{'subprocess', 'asyncpg', 'aiokafka', 'faust', 'httpx', 'ops', 'services'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
