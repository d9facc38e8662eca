"""Every relative link of the README and of the pages under ``docs/`` reaches a file that
exists and, when it names one, a heading anchor of that page; the README's map names
every page."""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.docpages as docpages
from tests.docpages import DOCS, README, anchors, links, pages, relative, slug


def _local(target: str) -> bool:
    return not target.startswith(("http://", "https://", "mailto:"))


def broken_links(page: Path) -> list[str]:
    """``"<page>: <target> (<why>)"`` for each relative link of the page that leads
    nowhere."""
    broken: list[str] = []
    for target in filter(_local, links(page)):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{relative(page)}: {target} (no such file)")
        elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
            broken.append(f"{relative(page)}: {target} (no heading #{anchor})")
    return broken


@pytest.mark.parametrize("page", pages(), ids=relative)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_maps_every_page_under_docs() -> None:
    named = {target.partition("#")[0] for target in links(README)}
    assert {relative(page) for page in DOCS.glob("*.md")} - named == set()


def test_a_broken_file_or_anchor_is_named(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docpages, "REPO", tmp_path)
    (tmp_path / "b.md").write_text("# B page\n\n## `kind: wait`\n\n```\n# not a heading\n```\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#kind-wait) [gone](c.md) [bad](b.md#not-a-heading) "
                    "[web](https://example.com) [self](#a)\n\n# A\n")
    found = [line.partition(": ")[2] for line in broken_links(page)]
    assert found == ["c.md (no such file)", "b.md#not-a-heading (no heading #not-a-heading)"]


@pytest.mark.parametrize(("heading", "anchor"), [
    ("The example: search the Python standard library",
     "the-example-search-the-python-standard-library"),
    ("`kind: wait`", "kind-wait"),
    ("Browsers on other origins (CORS)", "browsers-on-other-origins-cors"),
    ("Queues, workers and back-pressure", "queues-workers-and-back-pressure"),
    ("The services' token", "the-services-token"),
])
def test_anchors_are_github_slugs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
