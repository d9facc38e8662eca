"""Every ``HEADWATER_*`` setting the code reads has a row (or a sentence) in the docs.

The names are read from the code itself with :mod:`ast`: the first argument of each
``env_str``/``env_int``/``env_float``/... call (``services/common/settings.py``'s helpers
take the name without its prefix) and every string constant that is a whole
``HEADWATER_*`` name, in ``headwater/``, ``services/`` and ``ops/``. A name counts as
documented when a page names it in backticks, with or without the prefix, alone or in a
list (``\\`QUEUE\\`, \\`TASKS\\```, ``\\`PG_PASSWORD\\`/\\`_FILE\\```).
"""

from __future__ import annotations

import ast
import re

from tests.docpages import DOCS, REPO, blocks, pages

CODE = ("headwater", "services", "ops")
PAGES = ("settings.md", "metrics.md", "tracing.md", "security-settings.md", "auth.md",
         "development.md")
WHOLE_NAME = re.compile(r"HEADWATER_[A-Z0-9_]*[A-Z0-9]")
NOT_SETTINGS = {
    "HEADWATER_", "HEADWATER_KAFKA_", "HEADWATER_PG_",  # prefixes, not names
}


def _read_names(tree: ast.AST) -> set[str]:
    """The settings one module reads, without the ``HEADWATER_`` prefix."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
                and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
                .startswith("env_")
                and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value.removeprefix("HEADWATER_"))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and WHOLE_NAME.fullmatch(node.value) and node.value not in NOT_SETTINGS):
            found.add(node.value.removeprefix("HEADWATER_"))
    return found


def settings_read() -> set[str]:
    """Every setting the code under :data:`CODE` reads."""
    names: set[str] = set()
    for package in CODE:
        for path in (REPO / package).rglob("*.py"):
            names |= _read_names(ast.parse(path.read_text(), str(path)))
    return names


def documented(name: str, text: str) -> bool:
    """Whether ``text`` names the setting ``name`` in backticks (see the module doc)."""
    return re.search(rf"`(HEADWATER_)?{re.escape(name)}`|`(HEADWATER_)?{re.escape(name)}"
                     rf"(/|=)", text) is not None


def test_every_setting_read_is_documented() -> None:
    text = "\n".join((DOCS / page).read_text() for page in PAGES)
    names = settings_read()
    assert {"QUEUE", "KAFKA_BOOTSTRAP", "PG_DSN", "AUTH"} <= names, sorted(names)
    missing = sorted(n for n in names if not documented(n, text))
    assert not missing, f"settings read by the code but on no page of {PAGES}: {missing}"


def test_the_scan_finds_both_ways_of_reading_a_setting() -> None:
    tree = ast.parse('x = env_int("SOME_NUMBER", 3)\n'
                     'y = os.environ.get("HEADWATER_SOME_PATH")\n'
                     'z = settings.env_float("HEADWATER_RATE", 1.0)\n')
    assert _read_names(tree) == {"SOME_NUMBER", "SOME_PATH", "RATE"}
    assert documented("RATE", "| `RATE` | 1 |") and documented("RATE", "`HEADWATER_RATE=2`")
    assert not documented("RATE", "| `RATE_MAX` | 1 |")


_FIXED_PORT = re.compile(r"(?:localhost|127\.0\.0\.1):(?:19092|19093|55432|8080)\b")


def test_code_blocks_take_the_stacks_ports_from_its_settings() -> None:
    """A snippet run as printed beside a second stack (``HEADWATER_*_PORT`` exported, as
    settings.md's "A second stack" says) reaches that stack, not the default one: the
    default port is only ever a fallback (``${HEADWATER_GATEWAY_PORT:-8080}``,
    ``os.environ.get("HEADWATER_KAFKA_PORT", "19092")``)."""
    fixed = [f"{b.where()}: {m.group()}" for page in pages() for b in blocks(page)
             for m in _FIXED_PORT.finditer(b.code)]
    assert fixed == []
