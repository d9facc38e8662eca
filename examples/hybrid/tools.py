"""The tools of the ``hybrid`` example's research loop: ``search``, ``read`` and
``answer``. The loop's decide task picks one per step and gives its input
(:mod:`examples.hybrid.policy`); each runs as a task of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from examples.hybrid import packages
from examples.hybrid.retrieval import Hit, index_for, query_terms

WEAK_RELEVANCE = 0.45
"""Below this best relevance, :func:`answer` says that no package clearly matches."""
MAX_DESCRIPTION_CHARS = 800
MAX_DEPENDS = 12


class Found(TypedDict):
    """The output of :func:`search`."""

    query: str
    hits: list[Hit]


class Reading(TypedDict):
    """The output of :func:`read`: one package's stanza and the start of its docs."""

    package: str
    version: str
    section: str
    summary: str
    description: str
    depends: list[str]
    homepage: str
    doc_file: str
    excerpt: str


class Answer(TypedDict):
    """The output of :func:`answer`, and (with ``steps``) of the research loop."""

    question: str
    category: str
    answer: str
    citations: list[dict[str, Any]]


def search(query: str, status_path: str = packages.STATUS_PATH, k: int = 5,
           exclude: Sequence[str] = (), feedback: Sequence[str] = ()) -> Found:
    """The ``k`` best packages for ``query`` (``retrieval.Index.search``) but those in
    ``exclude``, the query first widened by pseudo-relevance feedback: the distinctive
    words of the synopses of the ``feedback`` packages (``Index.feedback_terms``).

    Returns:
        ``{"query": the query searched (widened), "hits"}``.

    Raises:
        ValueError: ``k`` < 0.
        FileNotFoundError: no such status file.
    """
    index = index_for(status_path)
    synopses = " ".join(p["summary"] for name in feedback
                        if (p := packages.find(index.packages, name)) is not None)
    added = [t for t in index.feedback_terms(synopses) if t not in query_terms(query)]
    widened = " ".join([query, *added])
    return {"query": widened, "hits": index.search(widened, k, set(exclude))}


def read(package: str, status_path: str = packages.STATUS_PATH,
         doc_root: str = packages.DOC_ROOT) -> Reading:
    """What the system says about one installed package: its stanza's fields and the
    start of its documentation (``packages.read_docs``).

    Raises:
        LookupError: no installed package of that name (the message names it).
        FileNotFoundError: no such status file.
    """
    found = packages.find(packages.load_packages(status_path), package)
    if found is None:
        raise LookupError(f"read: no installed package named {package!r} in {status_path}")
    doc_file, excerpt = packages.read_docs(package, doc_root)
    description = found["description"]
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[:MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return {"package": package, "version": found["version"], "section": found["section"],
            "summary": found["summary"], "description": description,
            "depends": found["depends"][:MAX_DEPENDS], "homepage": found["homepage"],
            "doc_file": doc_file, "excerpt": excerpt}


def answer(question: str, evidence: Sequence[Mapping[str, Any]],
           category: str = "") -> Answer:
    """Draft the answer from the packages read, best evidence first.

    Args:
        question: the question.
        evidence: ``[{"package", "version", "summary", "relevance", "excerpt"}, ...]``.
        category: the question's main class.

    Returns:
        ``{"question", "category", "answer": text, "citations": [{"package",
        "version", "summary", "relevance"}, ...]}``; with no evidence the text says
        that no installed package matched, and with only weak evidence (best
        relevance under :data:`WEAK_RELEVANCE`) that none clearly does.
    """
    ranked = sorted(evidence, key=lambda e: (-float(e.get("relevance") or 0),
                                             str(e.get("package"))))
    citations: list[dict[str, Any]] = [
        {"package": str(e.get("package")), "version": str(e.get("version", "")),
         "summary": str(e.get("summary", "")), "relevance": float(e.get("relevance") or 0)}
        for e in ranked]
    if not citations:
        text = f"No installed package matched {question!r}."
    else:
        lines = [f"- {c['package']} {c['version']}: {c['summary']}" for c in citations]
        where = f" (mostly {category})" if category else ""
        lead = (f"For {question!r}, these installed packages fit best{where}:"
                if float(citations[0]["relevance"]) >= WEAK_RELEVANCE else
                f"No installed package clearly matches {question!r}; the closest are:")
        text = "\n".join([lead, *lines])
    return {"question": question, "category": category, "answer": text,
            "citations": citations}
