"""Headwater task registrations for the ``stdlib-search`` example.

A thin layer over :mod:`examples.stdlib_search.core`, which holds the logic
as plain functions; here each is registered under its task name and, where
it reports progress, given ``ctx.progress``.
"""

from __future__ import annotations

from typing import Any

from examples.stdlib_search import core
from headwater import TaskContext, task


@task(name="stdlib.list_modules", queue="cpu")
def list_modules(limit: int | None = None) -> list[str]:
    """List the public stdlib modules with Python source; see :func:`core.list_modules`."""
    return core.list_modules(limit)


@task(name="stdlib.extract_docs", queue="cpu")
def extract_docs(
    ctx: TaskContext, module: str, max_passages: int = 40, max_chars: int = 400
) -> core.ModuleDocs:
    """Extract one module's docstring passages; see :func:`core.extract_docs`."""
    return core.extract_docs(module, max_passages, max_chars, progress=ctx.progress)


@task(name="stdlib.search", queue="cpu")
def search(
    ctx: TaskContext, docs: list[dict[str, Any] | None], query: str, top_k: int | None = 5
) -> core.SearchResult:
    """Answer the query over every passage with BM25; see :func:`core.search`."""
    return core.search(docs, query, top_k, progress=ctx.progress)


@task(name="stdlib.stats", queue="cpu")
def stats(docs: list[dict[str, Any] | None]) -> core.Stats:
    """Summarise the extracted corpus; see :func:`core.stats`."""
    return core.stats(docs)


@task(name="stdlib.report", queue="cpu")
def report(hits: dict[str, Any], stats: dict[str, Any]) -> core.Report:
    """Combine search hits and stats into the output; see :func:`core.report`."""
    return core.report(hits, stats)
