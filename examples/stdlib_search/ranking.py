"""The fan-in of the ``stdlib-search`` example: rank, summarise, report.

:func:`search` builds a BM25 index over every passage the map extracted
(:mod:`examples.stdlib_search.corpus`) and answers the query; :func:`stats`
runs beside it and summarises the corpus; :func:`report` combines both into
the workflow's output. Text is tokenised by :func:`tokenize`, the same way for
passages and queries. Every function takes and returns plain JSON-compatible
data so that the worker can serialise it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypedDict, cast

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped, unused-ignore]

from examples.stdlib_search.corpus import ProgressFn

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
_SUFFIXES = ("ings", "ing", "ers", "er", "ed", "es", "s", "e")

_Entry = tuple[str, Mapping[str, Any]]
"""One indexed passage: ``(module, passage)``."""


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


def _index(docs: Sequence[Mapping[str, Any] | None]) -> tuple[list[_Entry], list[list[str]]]:
    """Flatten the map outputs into passages and their token lists.

    Returns:
        ``(entries, corpus)``, parallel lists: ``corpus[i]`` holds the tokens
        of ``entries[i]``'s text followed by those of its id.

    Raises:
        TypeError: If an entry of ``docs`` is not a dict.

    """
    entries: list[_Entry] = []
    corpus: list[list[str]] = []
    for doc in _module_docs(docs):
        module = str(doc["module"])
        for passage in doc.get("passages", []):
            entries.append((module, passage))
            corpus.append(tokenize(str(passage["text"])) + tokenize(str(passage["id"])))
    return entries, corpus


def _best_hits(scores: Sequence[float], entries: Sequence[_Entry], top_k: int) -> list[Hit]:
    """The ``top_k`` best-scoring entries with a score > 0, best first.

    Ties go to the earlier entry; scores are rounded to 3 places.
    """
    hits: list[Hit] = []
    best = heapq.nlargest(top_k, range(len(scores)), key=lambda i: (scores[i], -i))
    for i in best:
        if scores[i] <= 0:
            break
        module, passage = entries[i]
        hits.append(
            {
                "module": module,
                "id": str(passage["id"]),
                "score": round(scores[i], 3),
                "text": str(passage["text"]),
            }
        )
    return hits


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
        docs: Outputs of :func:`~examples.stdlib_search.corpus.extract_docs`
            (the map's output); None entries are skipped.
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
    entries, corpus = _index(docs)
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
    result["hits"] = _best_hits(scores, entries, top_k)
    return result


def stats(docs: Sequence[Mapping[str, Any] | None]) -> Stats:
    """Summarise the extracted corpus.

    Args:
        docs: Outputs of :func:`~examples.stdlib_search.corpus.extract_docs`;
            None entries are skipped.

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
