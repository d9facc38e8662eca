"""Unit tests of the hybrid example's retrieval and loop tools (no services)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybrid_fixtures import write_status

from examples.hybrid import packages, retrieval, tools


@pytest.fixture
def status(tmp_path: Path) -> str:
    return write_status(tmp_path)


@pytest.mark.parametrize(("score", "expected"), [
    (-1.0, 0.0), (0.0, 0.0), (retrieval.HALF_RELEVANCE_SCORE, 0.5), (24.0, 0.75)])
def test_relevance_maps_scores_into_0_1(score: float, expected: float) -> None:
    assert retrieval.relevance(score) == expected


def test_query_terms_drop_words_every_passage_shares() -> None:
    assert retrieval.query_terms("Which installed packages compress files?") == [
        "compress", "fil"]


def test_search_ranks_the_matching_packages_first(status: str) -> None:
    index = retrieval.index_for(status)
    hits = index.search("secure shell login to a remote machine", 3)
    assert hits[0]["package"] == "openssh-client"
    assert hits[0]["section"] == "net" and 0.0 < hits[0]["relevance"] < 1.0
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(h["score"] > 0 for h in hits)


def test_search_leaves_out_excluded_and_unmatched_packages(status: str) -> None:
    index = retrieval.index_for(status)
    assert {h["package"] for h in index.search("compression", 9)} == {
        "gzip", "xz-utils", "zstd"}
    assert [h["package"] for h in index.search("compression", 9, {"gzip", "zstd"})] == [
        "xz-utils"]
    assert index.search("compression", 0) == []
    assert index.search("the of and", 5) == []
    with pytest.raises(ValueError, match="k must be >= 0"):
        index.search("compression", -1)


def test_an_empty_corpus_finds_nothing() -> None:
    assert retrieval.build_index([]).search("anything", 5) == []


def test_feedback_terms_keep_the_rare_words(status: str) -> None:
    index = retrieval.index_for(status)
    # Nine packages: "compression" is in three (0.33), "utilities" in two (0.22), "xz"
    # and "format" in one; a word of one package passes even below one package's share.
    assert index.feedback_terms("XZ-format compression utilities", max_df=0.2) == [
        "xz", "format"]
    assert index.feedback_terms("compression", max_df=0.4) == ["compression"]
    assert index.feedback_terms("xz xz", max_df=0.0) == ["xz"]
    assert index.feedback_terms("unheard-of words", max_df=1.0) == []


def test_ground_annotates_passages_with_their_class(status: str) -> None:
    category_of = {"libexpat1": "shared libraries", "libexpat1-dev": "development"}
    grounding = retrieval.ground("parse XML files", category_of, status, k=2)
    assert {p["package"] for p in grounding["passages"]} == {"libexpat1", "libexpat1-dev"}
    assert grounding["categories"] == category_of
    assert grounding["category"] in category_of.values()
    assert grounding["indexed"] == 9 and grounding["question"] == "parse XML files"


def test_ground_refuses_a_question_without_words(status: str) -> None:
    with pytest.raises(ValueError, match="no searchable word"):
        retrieval.ground("which installed packages?", {}, status)


def test_main_category_weighs_relevance() -> None:
    hits: list[retrieval.Hit] = [
        {"package": "a", "score": 1, "relevance": 0.9, "section": "", "summary": ""},
        {"package": "b", "score": 1, "relevance": 0.5, "section": "", "summary": ""},
        {"package": "c", "score": 1, "relevance": 0.5, "section": "", "summary": ""}]
    assert retrieval.main_category(hits, {"a": "x", "b": "y", "c": "y"}) == "y"
    assert retrieval.main_category(hits[:1], {}) == "other"
    assert retrieval.main_category([], {}) == ""


def test_search_tool_widens_the_query_with_feedback(status: str) -> None:
    plain = tools.search("fast", status, k=5)
    widened = tools.search("fast", status, k=5, feedback=["xz-utils"], exclude=["zstd"])
    assert plain["query"] == "fast"
    assert widened["query"].startswith("fast ") and "xz" in widened["query"].split()
    assert "zstd" not in [h["package"] for h in widened["hits"]]
    assert "xz-utils" in [h["package"] for h in widened["hits"]]


def test_read_tool_gives_the_stanza_and_docs(tmp_path: Path, status: str) -> None:
    (tmp_path / "docs" / "gzip").mkdir(parents=True)
    (tmp_path / "docs" / "gzip" / "README").write_text("gzip reduces the size of files")
    reading = tools.read("gzip", status, str(tmp_path / "docs"))
    assert reading["version"] == "1.12-1" and reading["depends"] == ["libc6", "dpkg"]
    assert reading["excerpt"] == "gzip reduces the size of files"
    assert reading["doc_file"].endswith("gzip/README")
    assert "default compression tools for Debian" in reading["description"]
    with pytest.raises(LookupError, match="no installed package named 'nope'"):
        tools.read("nope", status)


def test_read_tool_truncates_long_descriptions(tmp_path: Path) -> None:
    long_line = " word" * 400
    path = tmp_path / "status"
    path.write_text(f"Package: big\nStatus: install ok installed\nDescription: big\n"
                    f"{long_line}\n")
    reading = tools.read("big", str(path), str(tmp_path))
    assert len(reading["description"]) == tools.MAX_DESCRIPTION_CHARS
    assert reading["description"].endswith("…")


def test_answer_tool_cites_best_evidence_first() -> None:
    evidence = [{"package": "xz-utils", "version": "5", "summary": "XZ", "relevance": 0.5},
                {"package": "gzip", "version": "1", "summary": "GNU", "relevance": 0.7}]
    drafted = tools.answer("compress files", evidence, "system administration")
    assert [c["package"] for c in drafted["citations"]] == ["gzip", "xz-utils"]
    assert drafted["answer"].splitlines() == [
        "For 'compress files', these installed packages fit best (mostly system "
        "administration):", "- gzip 1: GNU", "- xz-utils 5: XZ"]


def test_answer_tool_says_when_evidence_is_weak_or_missing() -> None:
    weak = tools.answer("spell", [{"package": "a", "relevance": 0.2, "summary": "s"}])
    assert weak["answer"].startswith("No installed package clearly matches 'spell'")
    assert tools.answer("spell", [])["answer"] == "No installed package matched 'spell'."


def test_every_tool_output_is_json(status: str) -> None:
    import json

    for value in (tools.search("compression", status), tools.read("zstd", status),
                  tools.answer("q", []), packages.load_packages(status)[0]):
        assert json.loads(json.dumps(value)) == value
