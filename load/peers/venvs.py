"""Each peer's own virtual environment, ``.headwater/peers/<peer>/venv``, with its pinned
packages from PyPI; made when missing and made again when the pins change."""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
from pathlib import Path

PINS: dict[str, tuple[str, ...]] = {
    "celery": ("celery[redis]==5.7.0", "redis==8.1.0"),
    "dbos": ("dbos==3.4.0",),
}
"""Each peer's packages, pinned."""
log = logging.getLogger("load.peers")


def pins_stamp(pins: tuple[str, ...]) -> str:
    """The name of the file that says a venv holds ``pins`` (a hash of them, with the
    Python version: a new interpreter needs a new venv)."""
    text = "\n".join(sorted(pins)) + f"\n{sys.version_info[:2]}"
    return ".pins-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def ensure(home: Path, peer: str) -> Path:
    """The peer's venv's Python, after making the venv if missing or its pins changed.

    Args:
        home: the peers' directory (``.headwater/peers``).
        peer: a key of ``PINS``.

    Raises:
        subprocess.CalledProcessError: making the venv or installing failed.
    """
    venv = home / peer / "venv"
    stamp = venv / pins_stamp(PINS[peer])
    python = venv / "bin" / "python"
    if stamp.exists() and python.exists():
        return python
    log.info("peers: making %s with %s (first run, or the pins changed)", venv,
             " ".join(PINS[peer]))
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *PINS[peer]], check=True)
    stamp.touch()
    return python
