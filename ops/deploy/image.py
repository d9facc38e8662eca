"""The image's build context: a Dockerfile ``FROM`` the project's image (the root
``Dockerfile``'s, ``headwater:local`` unless ``--base-image`` says), the module's source
(its top package, or the file alone) and its requirements.

The image installs the requirements into the project's virtual environment
(``/opt/headwater``), puts the source under ``/opt/app`` on ``PYTHONPATH`` and runs as
the project image's user (10001), so the base manifests' security context holds. Its
tag is a digest of the whole context: the same module and requirements give the same
tag, any change another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

DEFAULT_BASE_IMAGE = "headwater:local"
"""The project's image, as the root ``Dockerfile`` says to build it."""
APP_DIR = "/opt/app"
"""Where the module's source goes in the image."""
TAG_CHARS = 12
"""Hex digits of the context's digest in the image tag."""
_SKIPPED = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".git"}


def dockerfile(module: str, base_image: str, requirements: bool) -> str:
    """The Dockerfile of the image (``requirements``: a ``requirements.txt`` is in the
    context)."""
    lines = [
        f"# The image of {module}'s workers, made by `headwater deploy`: deploy again",
        "# rather than edit. Build: docker build -t IMAGE:TAG . (podman build alike).",
        f"ARG BASE_IMAGE={base_image}",
        "FROM ${BASE_IMAGE}",
        "# Installing into the project's virtual environment needs its owner (root).",
        "USER 0:0",
    ]
    if requirements:
        lines += [f"COPY requirements.txt {APP_DIR}/requirements.txt",
                  f"RUN /opt/headwater/bin/pip install --no-cache-dir -r "
                  f"{APP_DIR}/requirements.txt"]
    lines += [f"COPY app/ {APP_DIR}/",
              f"ENV PYTHONPATH={APP_DIR}",
              "# As the project's image: non-root, numeric (runAsNonRoot checks it).",
              "USER 10001:10001",
              ""]
    return "\n".join(lines)


def sources(source: Path, root: Path) -> dict[str, bytes]:
    """The module's source files, path under ``app/`` -> content: ``source`` (a
    package directory or a file) relative to the import root ``root``; caches and
    compiled files left out."""
    if source.is_file():
        return {f"app/{source.relative_to(root).as_posix()}": source.read_bytes()}
    found = {}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not _SKIPPED & set(rel.parts) and path.suffix != ".pyc":
            found[f"app/{rel.as_posix()}"] = path.read_bytes()
    return found


def context(module: str, source: Path, root: Path, base_image: str,
            requirements: Path | None) -> dict[str, bytes]:
    """The build context's files, path -> content.

    Args:
        module: the module's dotted name (named in the Dockerfile's comment).
        source: the module's file or top package directory.
        root: the directory that imports it.
        base_image: the image to build from (``name:tag``).
        requirements: a requirements file to install, or None.
    """
    files = sources(source, root)
    if requirements is not None:
        files["requirements.txt"] = requirements.read_bytes()
    files["Dockerfile"] = dockerfile(module, base_image, requirements is not None).encode()
    return files


def tag_of(files: Mapping[str, bytes]) -> str:
    """A tag naming the context: ``TAG_CHARS`` hex digits of the SHA-256 over its paths
    and contents, in path order."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return h.hexdigest()[:TAG_CHARS]
