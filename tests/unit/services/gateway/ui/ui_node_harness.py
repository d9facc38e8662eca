"""Running a UI logic script under Node (``*_logic.mjs``) against the UI's own modules:
they are run from a copy beside a ``package.json`` of ``"type": "module"`` (plain ``.js``
files are ES modules there, whatever Node's version), and the script prints one JSON
document of what they answered. Skipped where Node is not installed, except on CI
(``CI=true``), where it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
JS = HERE.parents[4] / "services" / "gateway" / "ui" / "static" / "js"


def node_answers(script: str, zone: str = "UTC") -> dict[str, Any]:
    """What ``script`` (a file beside this one) prints, run with the time zone ``zone``
    and the URL of a copy of the UI's ``js/`` directory as its argument."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("needs Node.js (infra/browser.sh installs it): on CI it must be there")
        pytest.skip("needs Node.js (the UI's modules are run with it)")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "js"
        shutil.copytree(JS, copy)
        (Path(tmp) / "package.json").write_text('{"type": "module"}', encoding="utf-8")
        done = subprocess.run(
            [node, str(HERE / script), copy.as_uri() + "/"], capture_output=True,
            text=True, timeout=60, check=False, env={**os.environ, "TZ": zone})
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found
