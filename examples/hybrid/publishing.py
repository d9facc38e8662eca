"""The last steps of the ``hybrid`` example, after the approval signal: ``publish``
the approved answer as a Markdown file, or ``shelve`` a rejected one, then ``report``.

Publishing is idempotent: the file is named after the workflow and written whole
(a temporary file renamed over it), so a second attempt of the same task writes the
same bytes to the same place.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

PUBLISH_DIR_SETTING = "HEADWATER_EXAMPLE_PUBLISH_DIR"
"""Where published answers go; default ``$HEADWATER_HOME/published`` (``HEADWATER_HOME``
defaults to ``.headwater`` in the worker's directory)."""


class Outcome(TypedDict):
    """The output of :func:`publish` and :func:`shelve`."""

    published: bool
    path: str
    note: str


def publish_dir() -> Path:
    """The folder of published answers (see :data:`PUBLISH_DIR_SETTING`)."""
    explicit = os.environ.get(PUBLISH_DIR_SETTING)
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HEADWATER_HOME", ".headwater")) / "published"


def markdown(research: Mapping[str, Any], approval: Mapping[str, Any],
             profile: Mapping[str, Any]) -> str:
    """The published document: the answer, its sources, the approval, the machine."""
    lines = [f"# {research.get('question', '')}", "", str(research.get("answer", "")), "",
             "## Sources", ""]
    lines += [f"- `{c.get('package')}` {c.get('version', '')} (relevance "
              f"{float(c.get('relevance') or 0):.2f})"
              for c in research.get("citations") or []]
    note = approval.get("note")
    lines += ["", "## Approval", "", "approved" + (f": {note}" if note else ""), "",
              "## This machine", "",
              f"{profile.get('packages', 0)} packages installed, "
              f"{profile.get('installed_mb', 0)} MB:"]
    lines += [f"- {c}: {n}" for c, n in (profile.get("by_category") or {}).items()]
    return "\n".join(lines) + "\n"


def publish(workflow_id: str, research: Mapping[str, Any], approval: Mapping[str, Any],
            profile: Mapping[str, Any], folder: Path | None = None) -> Outcome:
    """Write the approved answer to ``<folder>/<workflow_id>.md``, replacing it whole.

    Args:
        workflow_id: names the file (``/`` replaced by ``_``).
        research: the research loop's output (``tools.Answer``).
        approval: the approval signal's fields.
        profile: the machine's profile (``classify.Profile``).
        folder: where to write; default :func:`publish_dir`.

    Returns:
        ``{"published": True, "path", "note"}``.

    Raises:
        OSError: the file cannot be written (retried as any failure).
    """
    target_dir = folder or publish_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{workflow_id.replace('/', '_')}.md"
    fd, tmp = tempfile.mkstemp(dir=target_dir, prefix=".publishing-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(markdown(research, approval, profile))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"published": True, "path": str(target), "note": str(approval.get("note") or "")}


def shelve(approval: Mapping[str, Any]) -> Outcome:
    """Record that the answer was not approved: nothing is written."""
    return {"published": False, "path": "", "note": str(approval.get("note") or "")}


def report(research: Mapping[str, Any], profile: Mapping[str, Any],
           published: Mapping[str, Any] | None, shelved: Mapping[str, Any] | None
           ) -> dict[str, Any]:
    """The workflow's output: the answer, the machine's classes, and what became of it.

    Args:
        research: the research loop's output.
        profile: the machine's profile.
        published: ``publish``'s output, or None when that branch was skipped.
        shelved: ``shelve``'s output, or None when that branch was skipped.
    """
    outcome = published or shelved or {"published": False, "path": "", "note": ""}
    return {"question": research.get("question"), "answer": research.get("answer"),
            "citations": research.get("citations"), "steps": research.get("steps"),
            "category": research.get("category"),
            "machine": {"packages": profile.get("packages"),
                        "installed_mb": profile.get("installed_mb"),
                        "by_category": profile.get("by_category")},
            "published": bool(outcome.get("published")), "path": outcome.get("path", ""),
            "note": outcome.get("note", "")}
