"""The corpus of the ``stdlib-search`` example: one module's docstring passages.

:func:`extract_docs` (mapped, one task per module) parses one module's source
with :mod:`ast`, never importing it, and returns the first paragraph of each
public docstring as a :class:`Passage`. Every function takes and returns plain
JSON-compatible data so that the worker can serialise it.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Literal, TypedDict

from examples.stdlib_search import sources

# CPython 3.11's AST construction is not thread-safe: parallel ast.parse calls can fail
# with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905),
# and a worker runs sync tasks in a thread pool. Parsing is a small part of a task.
_AST_LOCK = threading.Lock()

ProgressFn = Callable[[float, str], None]
"""Progress callback: ``progress(fraction_done, message)``."""

PassageKind = Literal["module", "class", "function", "method"]

_BLANK_LINE = re.compile(r"\n\s*\n")
_WHITESPACE = re.compile(r"\s+")


class Passage(TypedDict):
    """One indexed docstring paragraph."""

    id: str
    kind: PassageKind
    text: str


class ModuleDocs(TypedDict):
    """Output of :func:`extract_docs` for one module."""

    module: str
    passages: list[Passage]
    lines: int


def first_paragraph(docstring: str, max_chars: int) -> str:
    """Return a docstring's first paragraph on one line, truncated.

    Args:
        docstring: A docstring, already dedented (``ast.get_docstring``).
        max_chars: Maximum length of the result; longer text is cut at that
            length with a trailing ``…``.

    Returns:
        The paragraph with runs of whitespace collapsed to single spaces, or
        ``""`` for a blank docstring.

    """
    paragraph = _BLANK_LINE.split(docstring.strip(), maxsplit=1)[0]
    text = _WHITESPACE.sub(" ", paragraph).strip()
    if len(text) > max_chars:
        text = text[: max(max_chars - 1, 0)].rstrip() + "…"
    return text


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions(body: Sequence[ast.stmt]) -> Iterator[_Definition]:
    """Yield the definitions of a body in source order.

    Looks through top-level ``if``/``try``/``with`` blocks too: the stdlib
    often defines its API conditionally (``if sys.platform == ...: def ...``).
    """
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node
        elif isinstance(node, ast.If):
            yield from _definitions(node.body)
            yield from _definitions(node.orelse)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            yield from _definitions(node.body)
            for handler in node.handlers:
                yield from _definitions(handler.body)
            yield from _definitions(node.orelse)
            yield from _definitions(node.finalbody)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _definitions(node.body)


def _candidates(
    tree: ast.Module, module: str
) -> Iterator[tuple[str, PassageKind, ast.Module | _Definition]]:
    """Yield ``(id, kind, node)`` for the module, then each public definition.

    Public top-level classes and functions come in source order, each class
    followed by its public methods (nested classes are skipped).
    """
    yield module, "module", tree
    for node in _definitions(tree.body):
        if node.name.startswith("_"):
            continue
        qualname = f"{module}.{node.name}"
        if not isinstance(node, ast.ClassDef):
            yield qualname, "function", node
            continue
        yield qualname, "class", node
        for member in _definitions(node.body):
            if not member.name.startswith("_") and not isinstance(member, ast.ClassDef):
                yield f"{qualname}.{member.name}", "method", member


def _passages(tree: ast.Module, module: str, max_chars: int) -> Iterator[Passage]:
    """Yield the passages of a parsed module, module docstring first.

    A candidate without a docstring yields nothing; an id seen before (the
    same name defined in two branches) is skipped: the first one is kept.
    """
    seen: set[str] = set()
    for pid, kind, node in _candidates(tree, module):
        if pid in seen:
            continue
        doc = ast.get_docstring(node)
        text = first_paragraph(doc, max_chars) if doc else ""
        if text:
            seen.add(pid)
            yield {"id": pid, "kind": kind, "text": text}


def _parse(module: str) -> tuple[ast.Module, int]:
    """Find, read and parse one module's source.

    Args:
        module: Stdlib module name, top-level or dotted.

    Returns:
        ``(tree, number of source lines)``.

    Raises:
        LookupError: If ``module`` has no Python source, or it cannot be read.
        SyntaxError: If the source cannot be parsed.

    """
    path = sources.find_source(module)
    if path is None:
        raise LookupError(
            f"no Python source found for stdlib module {module!r} "
            "(unknown name, builtin or C extension)"
        )
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise LookupError(f"cannot read source of module {module!r} at {path}: {exc}") from exc
    try:
        with _AST_LOCK:
            tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, bad encoding
        detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise SyntaxError(f"cannot parse source of module {module!r} ({path}): {detail}") from exc
    return tree, len(source.splitlines())


def extract_docs(
    module: str,
    max_passages: int = 40,
    max_chars: int = 400,
    progress: ProgressFn | None = None,
) -> ModuleDocs:
    """Extract the docstring passages of one stdlib module, without importing it.

    The module's source (``__init__.py`` for a package) is parsed with
    :mod:`ast`. Passages are the module docstring, then the public top-level
    classes and functions in source order, each class followed by its public
    methods; private names and empty docstrings are skipped. Each text is the
    docstring's first paragraph.

    Args:
        module: Stdlib module name, e.g. ``"json"`` (dotted names such as
            ``"email.mime"`` work too).
        max_passages: Keep at most this many passages.
        max_chars: Truncate each passage's text to this many characters.
        progress: Optional progress callback ``(fraction, message)``.

    Returns:
        ``{"module": name, "passages": [{"id", "kind", "text"}, ...],
        "lines": number of source lines}``.

    Raises:
        ValueError: If ``max_passages`` is negative or ``max_chars`` < 1.
        LookupError: If ``module`` is not a stdlib module with Python source,
            or its source cannot be read.
        SyntaxError: If the source cannot be parsed.

    """
    if max_passages < 0:
        raise ValueError(f"max_passages must be >= 0, got {max_passages}")
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    tree, lines = _parse(module)
    if progress is not None:
        progress(0.5, f"parsed {module} ({lines} lines)")
    passages = list(islice(_passages(tree, module, max_chars), max_passages))
    return {"module": module, "passages": passages, "lines": lines}
