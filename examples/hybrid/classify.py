"""The deterministic first step of the ``hybrid`` example: classify the installed
packages, and profile the machine by class.

A package's class comes from its Debian archive section (Debian Policy §2.4 lists
the sections), refined by the naming conventions of Policy §8 and the language teams'
policies: ``lib*-dev`` packages are development files, ``python3-*``, ``lib*-perl``,
``lib*-java`` and ``node-*`` are language libraries. The rules are a table, so every
class can be traced to the rule that gave it (``reason``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from examples.hybrid.packages import Brief

CATEGORIES: dict[str, tuple[str, ...]] = {
    "shared libraries": ("libs", "oldlibs", "introspection"),
    "development": ("libdevel", "devel", "vcs", "debug", "rust", "golang", "haskell",
                    "ocaml", "lisp"),
    "language runtimes": ("python", "perl", "java", "javascript", "interpreters", "ruby",
                          "php", "tcl", "r"),
    "system administration": ("admin", "utils", "shells", "otherosfs", "kernel",
                              "embedded", "metapackages"),
    "networking": ("net", "web", "httpd", "mail", "comm", "news"),
    "documents and text": ("doc", "text", "editors", "tex", "localization", "fonts",
                           "math", "science"),
    "desktop and media": ("x11", "gnome", "kde", "xfce", "graphics", "sound", "video",
                          "games"),
    "databases": ("database",),
}
"""Class -> the archive sections in it; a section in none of them is ``other``."""
OTHER = "other"

_BY_SECTION = {section: name for name, sections in CATEGORIES.items()
               for section in sections}
_NAME_RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^lib.+-dev$"), "development", "name lib*-dev: development files"),
    (re.compile(r"^(python3?-|lib.+-perl$|lib.+-java$|node-|ruby-)"), "language runtimes",
     "name of a language library (python3-*, lib*-perl, lib*-java, node-*, ruby-*)"),
    (re.compile(r"^fonts?-"), "documents and text", "name fonts-*"),
)


class Classified(TypedDict):
    """One package's class and the rule that gave it."""

    name: str
    category: str
    reason: str


class Profile(TypedDict):
    """The machine by class (the output of :func:`profile`)."""

    packages: int
    installed_mb: float
    by_category: dict[str, int]
    largest: dict[str, list[str]]
    category_of: dict[str, str]


def classify_package(package: Mapping[str, Any]) -> Classified:
    """The class of one package: a naming rule first, else its section, else ``other``.

    Args:
        package: a :class:`~examples.hybrid.packages.Brief` (``name`` and ``section``
            are read).

    Returns:
        ``{"name", "category", "reason"}``.
    """
    name = str(package["name"])
    for pattern, category, reason in _NAME_RULES:
        if pattern.search(name):
            return {"name": name, "category": category, "reason": reason}
    section = str(package.get("section") or "unknown")
    category = _BY_SECTION.get(section, OTHER)
    return {"name": name, "category": category, "reason": f"section {section}"}


def classify_batch(batch: Sequence[Mapping[str, Any]]) -> list[Classified]:
    """:func:`classify_package` of each package of one batch, in order.

    Raises:
        TypeError: an entry is not a mapping with a ``name``.
    """
    out: list[Classified] = []
    for package in batch:
        if not isinstance(package, Mapping) or "name" not in package:
            raise TypeError(f"expected a package record with a name, got {package!r:.80}")
        out.append(classify_package(package))
    return out


def batches(items: Sequence[Brief], size: int) -> list[list[Brief]]:
    """``items`` cut into consecutive lists of ``size`` (the last may be shorter).

    Raises:
        ValueError: ``size`` < 1.
    """
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def profile(classified: Sequence[Sequence[Mapping[str, Any]] | None],
            briefs: Sequence[Mapping[str, Any]], top: int = 3) -> Profile:
    """Fold the classified batches into the machine's profile.

    Args:
        classified: the map's output, one list of :class:`Classified` per batch (None
            for a batch without output is skipped).
        briefs: the inventory's packages (for their sizes).
        top: how many of the largest packages to name per class.

    Returns:
        ``{"packages", "installed_mb", "by_category": {class: count} (most first),
        "largest": {class: [names, largest first]}, "category_of": {name: class}}``.
    """
    category_of = {str(c["name"]): str(c["category"])
                   for batch in classified if batch for c in batch}
    size = {str(b["name"]): int(b.get("installed_kb") or 0) for b in briefs}
    members: dict[str, list[str]] = {}
    for name, category in category_of.items():
        members.setdefault(category, []).append(name)
    order = sorted(members, key=lambda c: (-len(members[c]), c))
    return {
        "packages": len(category_of),
        "installed_mb": round(sum(size.get(n, 0) for n in category_of) / 1024, 1),
        "by_category": {c: len(members[c]) for c in order},
        "largest": {c: sorted(members[c], key=lambda n: (-size.get(n, 0), n))[:top]
                    for c in order},
        "category_of": category_of,
    }
