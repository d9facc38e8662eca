"""Unit tests of the stdlib-search example's task logic (no broker, no SDK)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from examples.stdlib_search import corpus, ranking, sources

EXAMPLE_DIR = Path(__file__).resolve().parents[3] / "examples" / "stdlib_search"
QUERY = "parse command line arguments"


@pytest.fixture(scope="module")
def all_modules() -> list[str]:
    """Return every module the workflow would map over."""
    return sources.list_modules()


@pytest.fixture(scope="module")
def all_docs(all_modules: list[str]) -> list[corpus.ModuleDocs]:
    """Return the map's output over every module (the real pipeline)."""
    return [corpus.extract_docs(module) for module in all_modules]


# -- list_modules -----------------------------------------------------------


def test_list_modules_known_public_sorted(all_modules: list[str]) -> None:
    assert {"json", "argparse", "os", "getopt", "optparse"} <= set(all_modules)
    assert all_modules == sorted(all_modules)
    assert len(all_modules) == len(set(all_modules))
    assert not [name for name in all_modules if name.startswith("_")]
    assert not {"this", "antigravity", "test"} & set(all_modules)
    assert set(all_modules) <= sys.stdlib_module_names


def test_list_modules_skips_modules_without_python_source(all_modules: list[str]) -> None:
    assert "sys" not in all_modules  # builtin
    assert "winreg" not in all_modules or sys.platform == "win32"


def test_list_modules_does_not_import(all_modules: list[str]) -> None:
    # Checked in a fresh interpreter: this one has imported plenty already.
    import subprocess

    code = (
        "import sys; before = set(sys.modules);"
        "from examples.stdlib_search import sources; sources.list_modules();"
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=EXAMPLE_DIR.parents[1],
    ).stdout.split()
    assert not {"antigravity", "this", "tkinter", "turtle", "idlelib"} & set(out)


def test_list_modules_limit(all_modules: list[str]) -> None:
    assert sources.list_modules(limit=3) == all_modules[:3]
    assert sources.list_modules(limit=0) == []
    assert sources.list_modules(limit=None) == all_modules
    with pytest.raises(ValueError):
        sources.list_modules(limit=-1)


# -- extract_docs -----------------------------------------------------------


def test_extract_docs_json() -> None:
    docs = corpus.extract_docs("json")
    assert docs["module"] == "json"
    assert docs["lines"] > 100
    passages = docs["passages"]
    ids = [p["id"] for p in passages]
    assert ids[0] == "json" and passages[0]["kind"] == "module"
    assert "json.dumps" in ids and "json.loads" in ids
    by_id = {p["id"]: p for p in passages}
    assert by_id["json.dumps"]["kind"] == "function"
    assert by_id["json.dumps"]["text"].startswith("Serialize ``obj``")
    assert "\n" not in by_id["json.dumps"]["text"]
    assert not [i for i in ids if any(part.startswith("_") for part in i.split("."))]
    json.dumps(docs)  # JSON-serialisable


def test_extract_docs_classes_methods_and_order() -> None:
    passages = corpus.extract_docs("difflib", max_passages=1000)["passages"]
    ids = [p["id"] for p in passages]
    kinds = {p["id"]: p["kind"] for p in passages}
    assert kinds["difflib.SequenceMatcher"] == "class"
    assert kinds["difflib.SequenceMatcher.ratio"] == "method"
    assert kinds["difflib.get_close_matches"] == "function"
    # source order: a class, then its methods, then the next definition
    assert (
        ids.index("difflib.SequenceMatcher")
        < ids.index("difflib.SequenceMatcher.ratio")
        < ids.index("difflib.get_close_matches")
    )
    assert all(p["text"] for p in passages)
    assert len(ids) == len(set(ids))


def test_extract_docs_frozen_and_package_modules() -> None:
    # os is a frozen module on 3.11: find_spec reports origin "frozen"
    assert corpus.extract_docs("os")["passages"][0]["id"] == "os"
    assert corpus.extract_docs("email")["module"] == "email"  # package __init__.py
    assert corpus.extract_docs("email.mime.text")["lines"] > 0  # dotted names


def test_extract_docs_limits() -> None:
    docs = corpus.extract_docs("json", max_passages=2, max_chars=20)
    assert len(docs["passages"]) == 2
    assert all(len(p["text"]) <= 20 for p in docs["passages"])
    assert docs["passages"][0]["text"].endswith("…")
    assert corpus.extract_docs("json", max_passages=0)["passages"] == []
    with pytest.raises(ValueError):
        corpus.extract_docs("json", max_chars=0)


@pytest.mark.parametrize(
    "module", ["no_such_module_xyz", "sys", "math", "pytest", "json.no_such", "../etc", ""]
)
def test_extract_docs_unknown_module(module: str) -> None:
    with pytest.raises(LookupError, match="no Python source"):
        corpus.extract_docs(module)


def test_extract_docs_syntax_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "json.py"
    bad.write_text("def broken(:\n")
    monkeypatch.setattr(sources, "find_source", lambda module: bad)
    with pytest.raises(SyntaxError, match="cannot parse source of module 'json'"):
        corpus.extract_docs("json")


def test_extract_docs_progress() -> None:
    calls: list[tuple[float, str]] = []
    corpus.extract_docs("json", progress=lambda f, m: calls.append((f, m)))
    assert calls and all(0.0 <= f <= 1.0 for f, _ in calls)


def test_first_paragraph() -> None:
    assert corpus.first_paragraph("One\n  two.\n\nThree.", 100) == "One two."
    assert corpus.first_paragraph("   ", 100) == ""
    assert corpus.first_paragraph("abcdef", 4) == "abc…"


# -- search -----------------------------------------------------------------


def test_tokenize() -> None:
    assert ranking.tokenize("The argparse.ArgumentParser: a x_y parser!") == [
        "argpars",
        "argumentpars",
        "pars",
    ]
    assert ranking.tokenize("parse parses parsing parser") == ["pars"] * 4


def test_search_real_corpus(all_docs: list[corpus.ModuleDocs]) -> None:
    result = ranking.search(all_docs, QUERY, top_k=5)
    assert result["query"] == QUERY
    assert result["passages_indexed"] == sum(len(d["passages"]) for d in all_docs)
    hits = result["hits"]
    assert 0 < len(hits) <= 5
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert {h["module"] for h in hits[:3]} & {"argparse", "getopt", "optparse"}
    json.dumps(result)


def test_search_module_name_counts(all_docs: list[corpus.ModuleDocs]) -> None:
    hits = ranking.search(all_docs, "argparse", top_k=3)["hits"]
    assert hits and all(h["module"] == "argparse" for h in hits)


def test_search_edge_cases(all_docs: list[corpus.ModuleDocs]) -> None:
    assert ranking.search(all_docs, "the of and", top_k=5)["hits"] == []  # only stop words
    assert ranking.search(all_docs, "zzqqxx", top_k=5)["hits"] == []  # no match: score 0
    assert ranking.search(all_docs, QUERY, top_k=0)["hits"] == []
    assert len(ranking.search(all_docs, QUERY, top_k=None)["hits"]) == 5
    assert ranking.search([], QUERY) == {"query": QUERY, "hits": [], "passages_indexed": 0}
    with_gap: list[Any] = [None, *all_docs[:20]]  # None: a map item with no output
    assert ranking.search(with_gap, QUERY)["passages_indexed"] > 0
    with pytest.raises(ValueError):
        ranking.search(all_docs, QUERY, top_k=-1)


# -- stats and report -------------------------------------------------------


def test_stats_consistent(all_docs: list[corpus.ModuleDocs]) -> None:
    result = ranking.stats(all_docs)
    assert result["modules"] == len(all_docs)
    assert result["passages"] == sum(len(d["passages"]) for d in all_docs)
    assert result["source_lines"] == sum(d["lines"] for d in all_docs)
    top = result["largest_modules"]
    assert len(top) == 5
    lines = [count for _, count in top]
    assert lines == sorted(lines, reverse=True)
    assert max(d["lines"] for d in all_docs) == lines[0]
    assert ranking.stats([]) == {
        "modules": 0,
        "passages": 0,
        "source_lines": 0,
        "largest_modules": [],
    }


def test_report_shape(all_docs: list[corpus.ModuleDocs]) -> None:
    hits = ranking.search(all_docs, QUERY, top_k=3)
    stats = ranking.stats(all_docs)
    result = ranking.report(dict(hits), dict(stats))
    assert set(result) == {"query", "answer", "hits", "stats"}
    assert result["query"] == QUERY
    assert result["hits"] == hits["hits"] and result["stats"] == stats
    assert len(result["answer"]) == len(hits["hits"])
    first = hits["hits"][0]
    assert result["answer"][0] == f"{first['module']}: {first['id']} — {first['text']}"
    json.dumps(result)


# -- whole pipeline and spec files ------------------------------------------


def test_whole_pipeline_finds_hits_with_a_small_map_output() -> None:
    """The whole standard library through every stage. How long it takes is not asserted
    here (a unit test on two shared cores is no timer); its map output must stay small,
    since it travels through Kafka."""
    docs = [corpus.extract_docs(module) for module in sources.list_modules()]
    result = ranking.report(dict(ranking.search(docs, QUERY)), dict(ranking.stats(docs)))
    size = len(json.dumps(docs).encode())
    assert result["hits"]
    assert size < 2_000_000, f"map output is {size} bytes of JSON"


def test_input_json() -> None:
    data = json.loads((EXAMPLE_DIR / "input.json").read_text())
    assert data == {"query": QUERY, "top_k": 5, "limit": None}


def test_workflow_yaml_names_the_tasks() -> None:
    text = (EXAMPLE_DIR / "workflow.yaml").read_text()
    for name in ("list_modules", "extract_docs", "search", "stats", "report"):
        assert f"task: stdlib.{name}\n" in text
    assert "name: stdlib-search\n" in text
