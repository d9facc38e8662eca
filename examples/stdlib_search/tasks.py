"""Headwater task registrations for the ``stdlib-search`` example.

A thin layer over :mod:`examples.stdlib_search.sources`,
:mod:`examples.stdlib_search.corpus` and :mod:`examples.stdlib_search.ranking`,
which hold the logic as plain functions; here each is registered under its
task name and, where it reports progress, given ``ctx.progress``.
"""

from __future__ import annotations

from typing import Any

from examples.stdlib_search import corpus, ranking, sources
from headwater import TaskContext, task


@task(name="stdlib.list_modules", queue="cpu")
def list_modules(limit: int | None = None) -> list[str]:
    """List the public stdlib modules with Python source; see :func:`sources.list_modules`."""
    return sources.list_modules(limit)


@task(name="stdlib.extract_docs", queue="cpu")
def extract_docs(
    ctx: TaskContext, module: str, max_passages: int = 40, max_chars: int = 400
) -> corpus.ModuleDocs:
    """Extract one module's docstring passages; see :func:`corpus.extract_docs`."""
    return corpus.extract_docs(module, max_passages, max_chars, progress=ctx.progress)


@task(name="stdlib.search", queue="cpu")
def search(
    ctx: TaskContext, docs: list[dict[str, Any] | None], query: str, top_k: int | None = 5
) -> ranking.SearchResult:
    """Answer the query over every passage with BM25; see :func:`ranking.search`."""
    return ranking.search(docs, query, top_k, progress=ctx.progress)


@task(name="stdlib.stats", queue="cpu")
def stats(docs: list[dict[str, Any] | None]) -> ranking.Stats:
    """Summarise the extracted corpus; see :func:`ranking.stats`."""
    return ranking.stats(docs)


@task(name="stdlib.report", queue="cpu")
def report(hits: dict[str, Any], stats: dict[str, Any]) -> ranking.Report:
    """Combine search hits and stats into the output; see :func:`ranking.report`."""
    return ranking.report(hits, stats)
