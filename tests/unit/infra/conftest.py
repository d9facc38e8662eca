"""Fixtures of the deployment tests: the tools ``infra/k8s-tools.sh`` installs and the
overlays rendered by the real kustomize (``k8s_render``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from k8s_render import K8S, Objects, Tools, build, install


@pytest.fixture(scope="session")
def tools() -> Tools:
    """The tools, installed on first use."""
    return install()


@pytest.fixture(scope="session")
def render(tools: Tools) -> Callable[[Path], Objects]:
    """Render a kustomization directory with the real kustomize."""
    return lambda directory: build(tools.kustomize, directory)


@pytest.fixture(scope="session")
def local(render: Callable[[Path], Objects]) -> Objects:
    """``overlays/local`` (KEDA), rendered."""
    return render(K8S / "overlays" / "local")


@pytest.fixture(scope="session")
def local_hpa(render: Callable[[Path], Objects]) -> Objects:
    """``overlays/local-hpa`` (HorizontalPodAutoscalers), rendered."""
    return render(K8S / "overlays" / "local-hpa")


@pytest.fixture(params=["local", "local_hpa"])
def objects(request: pytest.FixtureRequest) -> Objects:
    """Each overlay's render in turn: what holds for both."""
    rendered: Objects = request.getfixturevalue(request.param)
    return rendered


@pytest.fixture
def k8s_copy(tmp_path: Path) -> Path:
    """A copy of ``infra/k8s`` to add an overlay to or to break (the tree itself stays)."""
    target = tmp_path / "k8s"
    shutil.copytree(K8S, target)
    return target
