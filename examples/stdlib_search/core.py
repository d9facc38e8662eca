"""Task logic of the ``stdlib-search`` example, free of any Headwater import.

The workflow indexes the Python standard library and answers a query:

1. :func:`list_modules` lists the public top-level stdlib modules that have
   Python source.
2. :func:`extract_docs` (mapped, one task per module) parses one module's
   source with :mod:`ast` and returns the first paragraph of its docstrings.
3. :func:`search` (fan-in) builds a BM25 index over every passage and answers
   the query; :func:`stats` runs beside it and summarises the corpus.
4. :func:`report` combines both into the workflow's output.

Modules are located and read, never imported: importing arbitrary stdlib
modules has side effects (``antigravity`` opens a browser, ``this`` prints,
``tkinter`` needs a display library...). Every function takes and returns
plain JSON-compatible data so that the worker can serialise it.
"""

from __future__ import annotations

import ast
import heapq
import importlib.machinery
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped, unused-ignore]

# CPython 3.11's AST construction is not thread-safe: parallel ast.parse calls can fail
# with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905),
# and a worker runs sync tasks in a thread pool. Parsing is a small part of a task.
_AST_LOCK = threading.Lock()

ProgressFn = Callable[[float, str], None]
"""Progress callback: ``progress(fraction_done, message)``."""

PassageKind = Literal["module", "class", "function", "method"]

# Never listed, even though they have source: jokes with side effects on
# import and CPython's own regression-test suite (not public API, and
# absent from many distributions).
EXCLUDED_MODULES: frozenset[str] = frozenset({"this", "antigravity", "test"})

STOP_WORDS: frozenset[str] = frozenset(
    {
        "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for",
        "from", "has", "have", "how", "if", "in", "into", "is", "it", "its", "may", "me",
        "my", "no", "not", "of", "on", "or", "so", "such", "than", "that", "the", "their",
        "then", "there", "these", "this", "those", "to", "was", "we", "were", "what", "when",
        "which", "will", "with", "you", "your",
    }
)  # fmt: skip

_TOKEN_SPLIT = re.compile(r"[^0-9a-z]+")
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


class Hit(TypedDict):
    """One search result."""

    module: str
    id: str
    score: float
    text: str


class SearchResult(TypedDict):
    """Output of :func:`search`."""

    query: str
    hits: list[Hit]
    passages_indexed: int


class Stats(TypedDict):
    """Output of :func:`stats`."""

    modules: int
    passages: int
    source_lines: int
    largest_modules: list[list[str | int]]


class Report(TypedDict):
    """Output of :func:`report`, and so of the whole workflow."""

    query: str
    answer: list[str]
    hits: list[Hit]
    stats: Stats


# --------------------------------------------------------------------------
# Locating source without importing
# --------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[str, ...]:
    """Directories holding the pure-Python standard library.

    ``os`` is always imported, so its ``__file__`` is a reliable anchor even
    in a virtualenv, where ``sysconfig``'s ``platstdlib`` points into the venv.
    """
    candidates = [sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__)]
    dirs: list[str] = []
    for candidate in candidates:
        if candidate and os.path.isdir(candidate):
            real = os.path.realpath(candidate)
            if real not in dirs:
                dirs.append(real)
    return tuple(dirs)


def _find_source(module: str) -> Path | None:
    """Return the ``.py`` file of a stdlib module (``__init__.py`` for a package).

    Uses :class:`importlib.machinery.PathFinder` on the stdlib directories
    instead of :func:`importlib.util.find_spec`: the latter reports frozen
    modules (``os``, ``codecs``, ``io``... on 3.11) with origin ``"frozen"``,
    honours ``sys.path`` (so a local ``queue.py`` would shadow the stdlib one)
    and, for a dotted name, imports the parent package. PathFinder imports
    nothing.

    Args:
        module: Module name, top-level or dotted (``"email.mime"``).

    Returns:
        The source path, or None if the name is not a stdlib module with
        Python source (C extension, builtin, unknown name, ...).

    """
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    if parts[0] not in sys.stdlib_module_names:
        return None
    search_path: list[str] | None = list(_stdlib_dirs())
    spec: importlib.machinery.ModuleSpec | None = None
    for depth in range(1, len(parts) + 1):
        if search_path is None:  # the parent is a plain module, not a package
            return None
        try:
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), search_path)
        except Exception:  # any finder failure means "not found"
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        search_path = list(locations) if locations is not None else None
    if spec is None or not spec.has_location or not spec.origin:
        return None
    origin = Path(spec.origin)
    if origin.suffix != ".py" or not origin.is_file():
        return None
    return origin


def list_modules(limit: int | None = None) -> list[str]:
    """List the public top-level stdlib modules that have Python source.

    Names come from :data:`sys.stdlib_module_names`; private names (leading
    underscore), :data:`EXCLUDED_MODULES` and modules without a ``.py`` file
    (builtins such as ``sys``, C extensions such as ``math``, platform
    modules absent here such as ``winreg``) are left out. No module is
    imported.

    Args:
        limit: Keep only the first ``limit`` names (after sorting); None
            means no limit.

    Returns:
        Sorted module names.

    Raises:
        ValueError: If ``limit`` is negative.

    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    names = sorted(
        name
        for name in sys.stdlib_module_names
        if not name.startswith("_")
        and name not in EXCLUDED_MODULES
        and _find_source(name) is not None
    )
    return names if limit is None else names[:limit]


# --------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------


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


def _passages(tree: ast.Module, module: str, max_chars: int) -> Iterator[Passage]:
    """Yield the passages of a parsed module, module docstring first."""
    seen: set[str] = set()

    def make(pid: str, kind: PassageKind, node: ast.Module | _Definition) -> Passage | None:
        if pid in seen:  # same name defined in two branches: keep the first
            return None
        doc = ast.get_docstring(node)
        text = first_paragraph(doc, max_chars) if doc else ""
        if not text:
            return None
        seen.add(pid)
        return {"id": pid, "kind": kind, "text": text}

    passage = make(module, "module", tree)
    if passage:
        yield passage
    for node in _definitions(tree.body):
        if node.name.startswith("_"):
            continue
        qualname = f"{module}.{node.name}"
        kind: PassageKind = "class" if isinstance(node, ast.ClassDef) else "function"
        passage = make(qualname, kind, node)
        if passage:
            yield passage
        if isinstance(node, ast.ClassDef):
            for member in _definitions(node.body):
                if member.name.startswith("_") or isinstance(member, ast.ClassDef):
                    continue
                passage = make(f"{qualname}.{member.name}", "method", member)
                if passage:
                    yield passage


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
    path = _find_source(module)
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
    lines = len(source.splitlines())
    if progress is not None:
        progress(0.5, f"parsed {module} ({lines} lines)")
    passages: list[Passage] = []
    if max_passages:
        for passage in _passages(tree, module, max_chars):
            passages.append(passage)
            if len(passages) >= max_passages:
                break
    return {"module": module, "passages": passages, "lines": lines}


# --------------------------------------------------------------------------
# Fan-in: search, stats, report
# --------------------------------------------------------------------------


_SUFFIXES = ("ings", "ing", "ers", "er", "ed", "es", "s", "e")


def stem(token: str) -> str:
    """Strip one common English suffix so that inflections share a term.

    A deliberately crude stemmer: ``parse``, ``parses``, ``parser`` and
    ``parsing`` all become ``pars``; ``arguments`` becomes ``argument``.
    The same function is applied to passages and queries, so only
    consistency matters, not linguistic accuracy.

    Args:
        token: A lowercase token.

    Returns:
        The token without its suffix; tokens of 3 characters or fewer, and
        stems that would be shorter than 3, are left as they are.

    """
    if len(token) <= 3:
        return token
    for suffix in _SUFFIXES:
        if (
            token.endswith(suffix)
            and len(token) - len(suffix) >= 3
            and not (suffix == "s" and token.endswith("ss"))
        ):
            return token[: -len(suffix)]
    return token


def tokenize(text: str) -> list[str]:
    """Tokenise text for indexing and querying.

    Args:
        text: Any text.

    Returns:
        The lowercased alphanumeric runs of length >= 2 that are not in
        :data:`STOP_WORDS`, each passed through :func:`stem`, in order.

    """
    return [
        stem(token)
        for token in _TOKEN_SPLIT.split(text.lower())
        if len(token) >= 2 and token not in STOP_WORDS
    ]


def _module_docs(docs: Sequence[Mapping[str, Any] | None]) -> Iterator[Mapping[str, Any]]:
    """Yield the map outputs, skipping None (an item with no output)."""
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise TypeError(f"expected extract_docs outputs (dicts), got {type(doc).__name__}")
        yield doc


def search(
    docs: Sequence[Mapping[str, Any] | None],
    query: str,
    top_k: int | None = 5,
    progress: ProgressFn | None = None,
) -> SearchResult:
    """Rank every passage against a query with BM25 (Okapi).

    Each passage is indexed by the tokens of its text plus those of its id,
    so module and object names count (``"argparse.ArgumentParser"`` adds
    ``argparse`` and ``argumentparser``, stemmed like every token).

    Note that BM25Okapi gives a term found in more than half of the passages
    a small floor idf, and on a corpus of fewer than three passages every
    idf is <= 0, so such a tiny corpus yields no hits.

    Args:
        docs: Outputs of :func:`extract_docs` (the map's output); None
            entries are skipped.
        query: Free-text query.
        top_k: Maximum number of hits; None means the default, 5.
        progress: Optional progress callback ``(fraction, message)``.

    Returns:
        ``{"query", "hits": [{"module", "id", "score", "text"}, ...],
        "passages_indexed"}``; hits are best first and all have score > 0
        (rounded to 3 places).

    Raises:
        ValueError: If ``top_k`` is negative.
        TypeError: If an entry of ``docs`` is not a dict.

    """
    if top_k is None:
        top_k = 5
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    entries: list[tuple[str, Mapping[str, Any]]] = []
    corpus: list[list[str]] = []
    for doc in _module_docs(docs):
        module = str(doc["module"])
        for passage in doc.get("passages", []):
            entries.append((module, passage))
            corpus.append(tokenize(str(passage["text"])) + tokenize(str(passage["id"])))
    result: SearchResult = {"query": query, "hits": [], "passages_indexed": len(entries)}
    query_tokens = tokenize(query)
    if progress is not None:
        progress(0.2, f"tokenised {len(entries)} passages")
    if not query_tokens or not any(corpus) or top_k == 0:
        return result
    index = BM25Okapi(corpus)
    if progress is not None:
        progress(0.7, "index built, scoring")
    scores = [float(score) for score in index.get_scores(query_tokens)]
    best = heapq.nlargest(top_k, range(len(scores)), key=lambda i: (scores[i], -i))
    for i in best:
        if scores[i] <= 0:
            break
        module, passage = entries[i]
        result["hits"].append(
            {
                "module": module,
                "id": str(passage["id"]),
                "score": round(scores[i], 3),
                "text": str(passage["text"]),
            }
        )
    return result


def stats(docs: Sequence[Mapping[str, Any] | None]) -> Stats:
    """Summarise the extracted corpus.

    Args:
        docs: Outputs of :func:`extract_docs`; None entries are skipped.

    Returns:
        ``{"modules", "passages", "source_lines", "largest_modules"}``,
        the last being up to five ``[module, source_lines]`` pairs, most
        lines first, ties by name.

    Raises:
        TypeError: If an entry of ``docs`` is not a dict.

    """
    sizes: list[tuple[str, int]] = []
    passages = 0
    for doc in _module_docs(docs):
        sizes.append((str(doc["module"]), int(doc.get("lines", 0))))
        passages += len(doc.get("passages", []))
    top = sorted(sizes, key=lambda item: (-item[1], item[0]))[:5]
    return {
        "modules": len(sizes),
        "passages": passages,
        "source_lines": sum(lines for _, lines in sizes),
        "largest_modules": [[name, lines] for name, lines in top],
    }


def report(hits: Mapping[str, Any], stats: Mapping[str, Any]) -> Report:
    """Combine the search result and the stats into the workflow's output.

    Args:
        hits: Output of :func:`search`.
        stats: Output of :func:`stats`.

    Returns:
        ``{"query", "answer": ["module: id — text", ...], "hits", "stats"}``.

    """
    hit_list: list[Hit] = list(hits.get("hits", []))
    return {
        "query": str(hits.get("query", "")),
        "answer": [f"{hit['module']}: {hit['id']} — {hit['text']}" for hit in hit_list],
        "hits": hit_list,
        "stats": cast(Stats, dict(stats)),
    }
