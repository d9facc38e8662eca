"""Retrieval for the ``hybrid`` example: BM25 over the installed packages' descriptions.

Each package is one passage: its name (split at ``-``), its synopsis twice (it is what
the maintainer chose to say first) and its extended description, tokenised like the
``stdlib-search`` example's passages. The index is BM25 Okapi (``rank_bm25``), built
once per process and status file (0.2 s for 700 packages). :func:`relevance` maps
BM25's unbounded score into [0, 1) so the decide policy can weigh hits from different
queries on one scale.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped, unused-ignore]

from examples.hybrid.packages import STATUS_PATH, Package, StatusKey, packages_of, status_key
from examples.stdlib_search.ranking import stem, tokenize

FEEDBACK_MAX_DF = 0.04
"""A word of a feedback synopsis is added to a query only if at most this fraction of
the packages have it: "compression" is (27 of 714 here), "GNU" and "library" are not."""
HALF_RELEVANCE_SCORE = 8.0
"""The BM25 score given relevance 0.5 (:func:`relevance`). On a Debian system's status
file a good match of a few words scores 10 to 20, a loose one under 8."""


QUERY_NOISE = frozenset(stem(w) for w in ("installed", "package", "packages", "debian"))
"""Stems left out of queries: every passage is about an installed Debian package, so a
question's "which installed packages ..." says nothing about which."""


def query_terms(query: str) -> list[str]:
    """The tokens of a query: :func:`tokenize` less :data:`QUERY_NOISE`."""
    return [t for t in tokenize(query) if t not in QUERY_NOISE]


class Hit(TypedDict):
    """One retrieved package."""

    package: str
    score: float
    relevance: float
    section: str
    summary: str


class Grounding(TypedDict):
    """The output of :func:`ground`: the passages the research loop starts from."""

    question: str
    passages: list[Hit]
    categories: dict[str, str]
    category: str
    indexed: int


def relevance(score: float) -> float:
    """``score / (score + HALF_RELEVANCE_SCORE)``, rounded to 3 places: 0 for no match,
    0.5 at :data:`HALF_RELEVANCE_SCORE`, towards 1 for ever better matches."""
    if score <= 0:
        return 0.0
    return round(score / (score + HALF_RELEVANCE_SCORE), 3)


def passage_tokens(package: Package) -> list[str]:
    """The tokens a package is indexed by (see the module docstring)."""
    name = package["name"].replace("-", " ")
    return (tokenize(name) + tokenize(package["summary"]) * 2
            + tokenize(package["description"]))


@dataclass(frozen=True)
class Index:
    """A BM25 index over some packages (``bm25`` is None when no package has a token)."""

    packages: Sequence[Package]
    bm25: Any

    def search(self, query: str, k: int, exclude: Collection[str] = ()) -> list[Hit]:
        """The ``k`` best-scoring packages with a score > 0 that are not in ``exclude``,
        best first (ties by name order).

        Raises:
            ValueError: ``k`` < 0.
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        terms = query_terms(query)
        if self.bm25 is None or not terms or k == 0:
            return []
        scores = self.bm25.get_scores(terms)
        eligible = (i for i, p in enumerate(self.packages)
                    if scores[i] > 0 and p["name"] not in exclude)
        best = heapq.nlargest(k, eligible, key=lambda i: (float(scores[i]), -i))
        return [_hit(self.packages[i], float(scores[i])) for i in best]


    def feedback_terms(self, text: str, max_df: float = FEEDBACK_MAX_DF) -> list[str]:
        """The tokens of ``text`` that at most ``max_df`` of the packages have, in order
        and once each: what pseudo-relevance feedback adds to a query (the distinctive
        words of a good hit's synopsis, not the common ones). A word of one package
        only is always distinctive, however small the corpus."""
        if self.bm25 is None:
            return []
        limit = max(1.0, max_df * len(self.packages))
        terms: list[str] = []
        for term in tokenize(text):
            df = sum(1 for doc in self.bm25.doc_freqs if term in doc)
            if 0 < df <= limit and term not in terms:
                terms.append(term)
        return terms


def _hit(package: Package, score: float) -> Hit:
    return {"package": package["name"], "score": round(score, 3),
            "relevance": relevance(score), "section": package["section"],
            "summary": package["summary"]}


def build_index(packages: Sequence[Package]) -> Index:
    """Index ``packages`` (BM25 needs at least one token in the corpus)."""
    corpus = [passage_tokens(p) for p in packages]
    return Index(packages, BM25Okapi(corpus) if any(corpus) else None)


@lru_cache(maxsize=4)
def _index_of(key: StatusKey) -> Index:
    return build_index(packages_of(key))


def index_for(status_path: str = STATUS_PATH) -> Index:
    """The index of the installed packages in ``status_path``, kept per process while
    the file is unchanged (``packages.load_packages``).

    Raises:
        FileNotFoundError: no such status file.
    """
    return _index_of(status_key(status_path))


def main_category(hits: Sequence[Hit], categories: Mapping[str, str]) -> str:
    """The class with the most relevance among ``hits`` (ties by class name), or
    ``""`` when there are no hits."""
    weight: dict[str, float] = {}
    for hit in hits:
        category = categories.get(hit["package"], "other")
        weight[category] = weight.get(category, 0.0) + hit["relevance"]
    return min(weight, key=lambda c: (-weight[c], c)) if weight else ""


def ground(question: str, category_of: Mapping[str, str], status_path: str = STATUS_PATH,
           k: int = 5, corpus: Sequence[Package] | None = None) -> Grounding:
    """Retrieve the grounding passages for ``question``.

    Args:
        question: free text.
        category_of: package -> class, from the profile (``classify.profile``).
        status_path: the dpkg status file (read when no ``corpus`` is given).
        k: how many passages.
        corpus: the packages to search, as another step read them (the research
            workflow's ``hybrid.corpus``); None: those of ``status_path``.

    Returns:
        ``{"question", "passages": [Hit...], "categories": {package: class} of the
        passages, "category": the question's main class (:func:`main_category`),
        "indexed": packages in the index}``.

    Raises:
        ValueError: ``k`` < 0, or the question has no searchable word.
        FileNotFoundError: no such status file.
    """
    if not query_terms(question):
        raise ValueError(f"the question {question!r} has no searchable word (stop words, "
                         "one-letter words and 'installed packages' are left out)")
    index = index_for(status_path) if corpus is None else build_index(corpus)
    hits = index.search(question, k)
    return {"question": question, "passages": hits,
            "categories": {h["package"]: category_of.get(h["package"], "other")
                           for h in hits},
            "category": main_category(hits, category_of), "indexed": len(index.packages)}
