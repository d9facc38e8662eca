"""The corpus of the ``hybrid`` example: the Debian packages installed on this machine.

dpkg keeps one stanza per package it knows in ``/var/lib/dpkg/status`` (deb822, the
format of Debian Policy §5.1), which every Debian system has, containers included.
:func:`load_packages` reads the installed ones with ``python-debian``'s parser;
:func:`read_docs` reads what ``/usr/share/doc/<package>/`` says about one of them
(slim images often leave that folder out, and then the stanza alone is the reading).
Every function returns plain JSON-compatible data so that a worker can send it on.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TypedDict

from debian.deb822 import Deb822

STATUS_PATH = "/var/lib/dpkg/status"
"""dpkg's database of packages (``dpkg --admindir`` moves it; the default)."""
DOC_ROOT = "/usr/share/doc"
"""Where packages put their documentation (Debian Policy §12.3)."""
DOC_FILES = ("README.Debian", "README", "README.md", "README.txt", "NEWS.Debian")
"""The files of a package's doc folder that :func:`read_docs` reads, in this order
(each also as ``<name>.gz``)."""

_NAME_OF_RELATION = re.compile(r"^\s*([a-z0-9][a-z0-9+.\-]+)")


class Package(TypedDict):
    """One installed package, from its stanza.

    ``installed_kb`` is dpkg's ``Installed-Size`` (KiB, an estimate); ``depends`` names
    the packages of its ``Depends`` (the first of each ``a | b`` alternative).
    """

    name: str
    version: str
    section: str
    priority: str
    installed_kb: int
    summary: str
    description: str
    depends: list[str]
    homepage: str


class Brief(TypedDict):
    """What the classification needs of a package: :data:`Package` less its text."""

    name: str
    version: str
    section: str
    installed_kb: int
    summary: str


def description_text(raw: str) -> tuple[str, str]:
    """Split a ``Description`` field into its synopsis and its extended text.

    Debian Policy §5.6.13: the first line is the synopsis; each further line starts
    with a space, a line of `` .`` is a blank line, and lines starting with two spaces
    are shown verbatim. Here the extended text's paragraphs are each joined into one
    line (verbatim lines kept as lines) and separated by a blank line.

    Args:
        raw: the field's value as the parser returns it (lines after the first keep
            their leading space).

    Returns:
        ``(synopsis, extended text)``; the latter is ``""`` when there is none.
    """
    first, _, rest = raw.partition("\n")
    paragraphs: list[list[str]] = [[]]
    for line in rest.splitlines():
        body = line[1:] if line.startswith(" ") else line
        if body.strip() == ".":
            paragraphs.append([])
        elif body.startswith(" "):
            paragraphs[-1].append("\n" + body.strip())
        elif body.strip():
            paragraphs[-1].append(body.strip())
    text = "\n\n".join(" ".join(p).replace(" \n", "\n").strip() for p in paragraphs if p)
    return first.strip(), text


def relation_names(raw: str) -> list[str]:
    """The package names of a relationship field such as ``Depends`` (Policy §7.1):
    ``"libc6 (>= 2.34), gpgv | gpgv2"`` gives ``["libc6", "gpgv"]``."""
    names: list[str] = []
    for group in raw.split(","):
        match = _NAME_OF_RELATION.match(group.split("|")[0])
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def _installed(stanza: Deb822) -> bool:
    """Whether dpkg's ``Status`` (``want flag state``) says the package is installed."""
    return str(stanza.get("Status", "")).split()[-1:] == ["installed"]


def _package(stanza: Deb822) -> Package:
    summary, text = description_text(stanza.get("Description", ""))
    size = stanza.get("Installed-Size", "0").strip()
    return {
        "name": stanza["Package"],
        "version": stanza.get("Version", ""),
        "section": stanza.get("Section", "unknown").rsplit("/", 1)[-1],
        "priority": stanza.get("Priority", ""),
        "installed_kb": int(size) if size.isdigit() else 0,
        "summary": summary,
        "description": text,
        "depends": relation_names(stanza.get("Depends", "")),
        "homepage": stanza.get("Homepage", ""),
    }


def parse_status(lines: Iterable[str]) -> list[Package]:
    """The installed packages of a dpkg status file, sorted by name.

    Stanzas without ``Package`` and packages not in the ``installed`` state
    (removed with their configuration kept, half-installed ...) are left out; where a
    name comes twice (one per architecture), the first stanza is kept.

    Args:
        lines: the file's lines.

    Returns:
        The packages.
    """
    seen: dict[str, Package] = {}
    for stanza in Deb822.iter_paragraphs(lines, use_apt_pkg=False):
        if "Package" in stanza and _installed(stanza):
            seen.setdefault(stanza["Package"], _package(stanza))
    return [seen[name] for name in sorted(seen)]


StatusKey = tuple[str, int, int]
"""A status file as of now: ``(path, modification time in ns, size in bytes)``."""


def status_key(path: str = STATUS_PATH) -> StatusKey:
    """``path`` with its modification time and size: what the caches are keyed by.

    Raises:
        FileNotFoundError: ``path`` does not exist (not a Debian system?); the message
            says which file was looked for.
    """
    try:
        stat = os.stat(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"no dpkg status file at {path}: the hybrid example needs "
                                "a Debian-based system (or give status_path)") from e
    return path, stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=4)
def packages_of(key: StatusKey) -> tuple[Package, ...]:
    """The installed packages of the status file ``key`` names (:func:`parse_status`),
    read once per process and key; treat them as read-only."""
    with open(key[0], encoding="utf-8", errors="replace") as f:
        return tuple(parse_status(f))


def load_packages(path: str = STATUS_PATH) -> Sequence[Package]:
    """The installed packages in the dpkg status file ``path`` (see :func:`parse_status`).

    The result is kept per process while the file's size and modification time stay
    the same (a worker's tasks share it); treat it as read-only.

    Raises:
        FileNotFoundError: ``path`` does not exist; the message names it.
    """
    return packages_of(status_key(path))


def brief(package: Package) -> Brief:
    """The fields of ``package`` the classification reads."""
    return {"name": package["name"], "version": package["version"],
            "section": package["section"], "installed_kb": package["installed_kb"],
            "summary": package["summary"]}


def find(packages: Sequence[Package], name: str) -> Package | None:
    """The package named ``name``, or None."""
    return next((p for p in packages if p["name"] == name), None)


def _read_text(path: Path, max_chars: int) -> str:
    """The first ``max_chars`` characters of a text file (gzip-compressed ones too)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return str(f.read(max_chars))


def read_docs(name: str, doc_root: str = DOC_ROOT, max_chars: int = 1200) -> tuple[str, str]:
    """The start of a package's documentation, from ``doc_root/<name>/``.

    Args:
        name: a package name.
        doc_root: where the packages' doc folders are.
        max_chars: the most characters read.

    Returns:
        ``(file, text)`` of the first of :data:`DOC_FILES` found (plain or ``.gz``), or
        ``("", "")`` when there is none or it cannot be read.
    """
    folder = Path(doc_root) / name
    for base in DOC_FILES:
        for candidate in (folder / base, folder / f"{base}.gz"):
            try:
                if candidate.is_file():
                    return str(candidate), _read_text(candidate, max_chars).strip()
            except (OSError, EOFError, ValueError):  # unreadable, truncated gzip
                continue
    return "", ""
