"""Reading the README and the pages under ``docs/`` as the tests of their code see them:
fenced code blocks, headings and their GitHub anchors, relative links, and the one door
into the core that checks a spec block (``spec_faults``).

The pages' tests (``tests/unit/docs``) and the client blocks' end-to-end test
(``tests/e2e/test_readme_client.py``) read the pages through this module only, so a page
that moves or a block that changes name is one edit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.core.spec import parse_spec  # the one door into the core (spec_faults)
from headwater.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"

_FENCE = re.compile(r"^(`{3,})([^`\n]*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_CLIENT_START = "from headwater.client import Client"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page.

    Attributes:
        page: the page's path, relative to the repository.
        line: the 1-based line of its opening fence.
        lang: the fence's language (``python``, ``yaml``, ``bash``...; ``""`` if none).
        code: the text between the fences, with its final newline.
    """

    page: str
    line: int
    lang: str
    code: str

    def where(self) -> str:
        """``page:line``, for assertion messages."""
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The README and every page under ``docs/``, README first."""
    return [README, *sorted(DOCS.glob("*.md"))]


def relative(path: Path) -> str:
    """A page's path relative to the repository, with forward slashes."""
    return path.relative_to(REPO).as_posix()


def blocks(path: Path, *langs: str) -> list[Block]:
    """The fenced code blocks of a page, in order.

    Args:
        path: the Markdown page.
        langs: keep only blocks of these languages (all blocks when empty).

    Returns:
        The blocks, each with its page, line, language and code.
    """
    found: list[Block] = []
    fence: str | None = None
    lang, start, body = "", 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence, lang, start, body = opening.group(1), opening.group(2).strip(), number, []
        elif fence is not None and line.strip() == fence:
            found.append(Block(relative(path), start, lang.split(" ")[0], "".join(body)))
            fence = None
        elif fence is not None:
            body.append(line + "\n")
    return [b for b in found if not langs or b.lang in langs]


def prose_lines(path: Path) -> list[str]:
    """A page's lines outside its fenced code blocks (each inside one is ``""``)."""
    kept: list[str] = []
    fence: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            kept.append("")
        elif fence is not None:
            if line.strip() == fence:
                fence = None
            kept.append("")
        else:
            kept.append(line)
    return kept


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_``
    dropped, spaces made hyphens (``"`kind: wait`"`` -> ``kind-wait``)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a page, a repeated one numbered as GitHub does
    (``x``, ``x-1``, ``x-2``)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(path):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The link targets of a page's prose (code blocks left out), in order."""
    return [target for line in prose_lines(path) for target in _LINK.findall(line)]


def client_blocks() -> list[Block]:
    """The Python client blocks (those that begin ``from headwater.client import
    Client``) of the README and the client page, in that order."""
    return [b for path in (README, DOCS / "client.md") for b in blocks(path, "python")
            if b.code.startswith(_CLIENT_START)]


def spec_faults(doc: Any) -> list[str]:
    """What the core's spec parser finds wrong with a spec document (``[]``: valid).

    Args:
        doc: plain data as loaded from a YAML or JSON block.

    Returns:
        The faults the parser lists; empty when it builds the spec.
    """
    try:
        parse_spec(doc)
    except SpecError as e:
        return list(e.faults)
    return []
