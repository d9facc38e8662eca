"""Fixtures of the deployment tests: the tools ``infra/k8s-tools.sh`` installs and the
overlays rendered by the real kustomize (``k8s_render``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from k8s_render import K8S, REPO, Objects, Tools, build, install


@pytest.fixture(scope="session")
def tools() -> Tools:
    """The tools, installed on first use."""
    return install()


@pytest.fixture(scope="session")
def render(tools: Tools) -> Callable[[Path], Objects]:
    """Render a kustomization directory with the real kustomize."""
    return lambda directory: build(tools.kustomize, directory)


def with_local_keys(tree: Path) -> Path:
    """``tree`` (a copy of ``infra/k8s``) with the local cluster's API keys made in it by
    ``infra/k8s-local-auth.sh``, as a user makes them before applying an overlay."""
    env = {**os.environ, "HEADWATER_K8S_AUTH_DIR": str(tree / "components" / "local-cluster"
                                                        / "auth")}
    done = subprocess.run(["bash", str(REPO / "infra" / "k8s-local-auth.sh")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return tree


@pytest.fixture(scope="session")
def k8s_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of ``infra/k8s`` with local keys, for the session's renders."""
    target = tmp_path_factory.mktemp("k8s-tree") / "k8s"
    shutil.copytree(K8S, target, ignore=shutil.ignore_patterns("auth"))
    return with_local_keys(target)


@pytest.fixture(scope="session")
def local(render: Callable[[Path], Objects], k8s_tree: Path) -> Objects:
    """``overlays/local`` (KEDA), rendered."""
    return render(k8s_tree / "overlays" / "local")


@pytest.fixture(scope="session")
def local_hpa(render: Callable[[Path], Objects], k8s_tree: Path) -> Objects:
    """``overlays/local-hpa`` (HorizontalPodAutoscalers), rendered."""
    return render(k8s_tree / "overlays" / "local-hpa")


@pytest.fixture(params=["local", "local_hpa"])
def objects(request: pytest.FixtureRequest) -> Objects:
    """Each overlay's render in turn: what holds for both."""
    rendered: Objects = request.getfixturevalue(request.param)
    return rendered


@pytest.fixture
def k8s_copy(tmp_path: Path) -> Path:
    """A copy of ``infra/k8s`` to add an overlay to or to break (the tree itself stays)."""
    target = tmp_path / "k8s"
    shutil.copytree(K8S, target, ignore=shutil.ignore_patterns("auth"))
    return with_local_keys(target)
