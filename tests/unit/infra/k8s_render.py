"""The deployment tests' tools and rendering: ``infra/k8s-tools.sh`` (kustomize, KEDA's and
compose-go's module sources) and ``kustomize build``. Without a tool a test fails on CI
(``CI=true``) and is skipped elsewhere, with the script's own message."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "infra" / "k8s"
TOOLS_SCRIPT = REPO / "infra" / "k8s-tools.sh"
INSTALL_TIMEOUT_S = 900.0
"""How long the first install may take, seconds (building kustomize on two busy cores)."""

Objects = list[dict[str, Any]]


def missing(reason: str) -> None:
    """Fail on CI, skip elsewhere: a tool the test needs is not there."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass(frozen=True)
class Tools:
    """What ``infra/k8s-tools.sh`` printed.

    Attributes:
        kustomize: the kustomize binary.
        keda_dir: the ``github.com/kedacore/keda/v2`` module's source.
        compose_go_dir: the ``github.com/compose-spec/compose-go/v2`` module's source.
    """

    kustomize: str
    keda_dir: str
    compose_go_dir: str


def install() -> Tools:
    """Install (first run) and find the tools, by the project's own script."""
    try:
        done = subprocess.run(["bash", str(TOOLS_SCRIPT)], capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        missing(f"{TOOLS_SCRIPT.name} took over {INSTALL_TIMEOUT_S:.0f} s")
        raise
    if done.returncode != 0:
        missing(f"{TOOLS_SCRIPT.name} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    found = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return Tools(found["KUSTOMIZE"], found["KEDA_DIR"], found["COMPOSE_GO_DIR"])


def build(kustomize: str, directory: Path) -> Objects:
    """``kustomize build directory``, parsed.

    Raises:
        AssertionError: kustomize refused it (with kustomize's message).
    """
    done = subprocess.run([kustomize, "build", str(directory)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"kustomize build {directory}: {done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]
