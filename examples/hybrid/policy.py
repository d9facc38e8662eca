"""The default decide policy of the ``hybrid`` example's research loop: no model, the
best-scoring tool.

Each step scores the three tools from what the loop knows (its grounding passages and
its transcript), each score in [0, 1]:

- ``read`` — the relevance of the best candidate package not read yet (0 once
  ``max_reads`` packages are read): reading a strong candidate is worth most;
- ``search`` — one minus that relevance (0 once ``max_searches`` searches are done):
  the weaker the best unread candidate, the more a new search is worth. It searches
  the question widened by the distinctive words of the synopses of the packages read
  (pseudo-relevance feedback, done by the tool) and leaves out every package seen;
- ``answer`` — the relevance of the packages read, summed, over
  ``enough_evidence`` (capped at 1); 1 when nothing is left to read or search, and
  when only two steps remain (the answer must be drafted while a step is left to
  finish with it).

The best score wins; ties go to ``read``, then ``answer``, then ``search``. Once the
``answer`` tool has drafted an answer, the loop finishes with it. The same inputs give
the same decision, so a replayed loop decides as the original did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from examples.hybrid.packages import DOC_ROOT, STATUS_PATH

TOOLS = ("read", "answer", "search")
"""The tools in tie-break order."""


@dataclass(frozen=True)
class Bounds:
    """The policy's knobs.

    Attributes:
        enough_evidence: summed relevance of the packages read that makes an answer
            worth a score of 1.
        max_reads: packages read at most.
        max_searches: searches at most.
        search_k: hits asked of each search.
    """

    enough_evidence: float = 1.5
    max_reads: int = 3
    max_searches: int = 2
    search_k: int = 5


DEFAULT_BOUNDS = Bounds()


@dataclass
class LoopView:
    """What the policy reads of one decide call.

    Attributes:
        question: the question researched.
        status_path, doc_root: where the tools read packages and their docs.
        max_steps: the loop's ``max_steps`` (its input repeats it).
        step: this step (0-based).
        tools: the tools the loop offers.
        candidates: package -> best relevance seen (grounding and searches).
        summaries: package -> synopsis, of the candidates.
        read: the outputs of the ``read`` calls, in order.
        searches: the queries searched so far.
        draft: the output of the ``answer`` call, once made.
        category: the question's main class (from the grounding).
    """

    question: str
    status_path: str
    doc_root: str
    max_steps: int
    step: int
    tools: tuple[str, ...]
    candidates: dict[str, float] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)
    read: list[dict[str, Any]] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    draft: dict[str, Any] | None = None
    category: str = ""

    @property
    def unread(self) -> list[tuple[str, float]]:
        """The candidates not read yet, best first (ties by name)."""
        done = {r.get("package") for r in self.read}
        return sorted(((p, s) for p, s in self.candidates.items() if p not in done),
                      key=lambda item: (-item[1], item[0]))


def _note_hits(view: LoopView, hits: Any) -> None:
    for hit in hits if isinstance(hits, list) else []:
        if isinstance(hit, Mapping) and isinstance(hit.get("package"), str):
            name = hit["package"]
            view.candidates[name] = max(view.candidates.get(name, 0.0),
                                        float(hit.get("relevance") or 0.0))
            view.summaries.setdefault(name, str(hit.get("summary", "")))


def view_of(loop_input: Mapping[str, Any], transcript: Sequence[Mapping[str, Any]],
            step: int, tools: Sequence[str]) -> LoopView:
    """Fold the decide task's arguments into a :class:`LoopView`.

    Args:
        loop_input: the loop node's input: ``{"question", "grounding" (the retrieve
            node's output), "status_path", "doc_root", "max_steps"}``.
        transcript: ``[{"step", "tool", "input", "output"}, ...]`` so far.
        step: this step.
        tools: the tool names the loop offers.

    Raises:
        ValueError: the input has no question.
    """
    question = loop_input.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("the loop's input needs a 'question' (a non-empty string)")
    grounding = loop_input.get("grounding") or {}
    view = LoopView(
        question=question, step=step, tools=tuple(tools),
        status_path=str(loop_input.get("status_path") or STATUS_PATH),
        doc_root=str(loop_input.get("doc_root") or DOC_ROOT),
        max_steps=int(loop_input.get("max_steps") or 6),
        category=str(grounding.get("category", "")))
    _note_hits(view, grounding.get("passages"))
    for entry in transcript:
        output = entry.get("output")
        if entry.get("tool") == "search" and isinstance(output, Mapping):
            view.searches.append(str(output.get("query", "")))
            _note_hits(view, output.get("hits"))
        elif entry.get("tool") == "read" and isinstance(output, Mapping):
            view.read.append(dict(output))
        elif entry.get("tool") == "answer" and isinstance(output, Mapping):
            view.draft = dict(output)
    return view


def scores(view: LoopView, bounds: Bounds = DEFAULT_BOUNDS) -> dict[str, float]:
    """Each offered tool's score (see the module docstring), rounded to 3 places."""
    unread = view.unread
    best = unread[0][1] if unread else 0.0
    read = best if unread and len(view.read) < bounds.max_reads else 0.0
    search = 1.0 - best if len(view.searches) < bounds.max_searches else 0.0
    evidence = sum(view.candidates.get(str(r.get("package")), 0.0) for r in view.read)
    answer = min(1.0, evidence / bounds.enough_evidence)
    if (read == 0.0 and search == 0.0) or view.step >= view.max_steps - 2:
        answer = 1.0
    every = {"answer": answer, "read": read, "search": search}
    return {tool: round(every[tool], 3) for tool in TOOLS if tool in view.tools}


def tool_input(tool: str, view: LoopView, bounds: Bounds = DEFAULT_BOUNDS, *,
               package: str | None = None, query: str | None = None) -> dict[str, Any]:
    """The input of a call of ``tool`` in this state.

    Args:
        tool: ``"search"``, ``"read"`` or ``"answer"``.
        view: the state.
        bounds: the policy's knobs.
        package: the package to read (default: the best unread candidate).
        query: the query to search (default: the question; the tool widens it with
            the packages read).

    Raises:
        ValueError: an unknown tool, or ``read`` with nothing to read.
    """
    if tool == "answer":
        return {"question": view.question, "category": view.category,
                "evidence": [_evidence(r, view) for r in view.read]}
    if tool == "read":
        name = package or (view.unread[0][0] if view.unread else None)
        if not name:
            raise ValueError("read: no package to read")
        return {"package": name, "status_path": view.status_path, "doc_root": view.doc_root}
    if tool == "search":
        return {"query": query or view.question, "status_path": view.status_path,
                "k": bounds.search_k, "exclude": sorted(view.candidates),
                "feedback": [str(r.get("package")) for r in view.read]}
    raise ValueError(f"unknown tool {tool!r}; the policy knows {', '.join(TOOLS)}")


def _evidence(read: Mapping[str, Any], view: LoopView) -> dict[str, Any]:
    name = str(read.get("package", ""))
    return {"package": name, "version": read.get("version", ""),
            "summary": read.get("summary", ""), "relevance": view.candidates.get(name, 0.0),
            "excerpt": str(read.get("excerpt", ""))[:300]}


@dataclass(frozen=True)
class Choice:
    """A decision and why.

    Attributes:
        decision: the decide task's output, ``{"tool", "input"}`` or ``{"finish"}``.
        reason: one line saying why, for the stream and the logs.
    """

    decision: dict[str, Any]
    reason: str


def choose(view: LoopView, bounds: Bounds = DEFAULT_BOUNDS) -> Choice:
    """The policy's decision for this step (see the module docstring).

    Raises:
        ValueError: the loop offers none of the policy's tools.
    """
    if view.draft is not None:
        finish = {**view.draft, "steps": view.step}
        return Choice({"finish": finish}, f"step {view.step}: finish with the drafted answer")
    ranked = scores(view, bounds)
    if not ranked:
        raise ValueError(f"the loop offers {list(view.tools)}, none of {', '.join(TOOLS)}")
    order = {t: i for i, t in enumerate(TOOLS)}
    tool = min(ranked, key=lambda t: (-ranked[t], order[t]))
    args = tool_input(tool, view, bounds)
    target = args.get("package") or args.get("query") or view.question
    listed = " ".join(f"{t}={s:.2f}" for t, s in sorted(ranked.items(), key=lambda i: -i[1]))
    return Choice({"tool": tool, "input": args},
                  f"step {view.step}: {tool} {target!s:.60} ({listed})")
