"""What a module registers: its ``@task``s, its ``@workflow``s and the spec definitions
it exposes, found by importing it in a process of its own.

A fresh interpreter (``python -m ops.deploy.discover FILE``) imports the module and
prints what the import added to ``headwater.sdk.REGISTRY`` and
``headwater.workflows.WORKFLOWS``, as JSON: what a worker started with ``--tasks
MODULE`` serves, exactly, whatever this process imported before. A module in a package
(a directory with ``__init__.py`` up to the top package) is imported by its dotted name
with the top package's parent on ``sys.path``, as the image will hold it; a file on its
own by its name, with its directory on ``sys.path``.

Spec definitions: a module-level ``DEFINITIONS`` mapping, name -> a spec (a mapping with
``nodes``), a mapping ``{"workflow": spec, "input_schema": schema}``, or the path of a
YAML or JSON file holding either (relative to the module's directory).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFINITIONS_ATTRIBUTE = "DEFINITIONS"
"""The module attribute that names its spec definitions."""
TIMEOUT_S = 120.0
"""How long importing the module may take, seconds."""


class DiscoveryError(Exception):
    """Raised when the module cannot be imported or what it exposes is malformed; the
    message says what to fix."""


@dataclass(frozen=True)
class Task:
    """A registered task: its ``name``, ``queue`` and deploy ``hints``."""

    name: str
    queue: str
    hints: dict[str, Any]


@dataclass(frozen=True)
class Definition:
    """A definition the deploy registers: a ``@workflow``'s (``code_version`` set) or a
    spec definition the module exposes."""

    name: str
    workflow: dict[str, Any]
    input_schema: dict[str, Any] | None
    code_version: str | None = None


@dataclass(frozen=True)
class Found:
    """What importing a module registers.

    Attributes:
        module: its dotted name (a worker's ``--tasks``).
        file: the module's file.
        root: the directory on ``sys.path`` that imports it.
        source: what the image must hold, under ``root``: the top package's directory
            or the module's file.
        tasks: the tasks registered (a ``@workflow``'s activation among them, on its
            queue, with the workflow's hints).
        definitions: the definitions to register, by name.
    """

    module: str
    file: Path
    root: Path
    source: Path
    tasks: tuple[Task, ...]
    definitions: tuple[Definition, ...]

    @property
    def queues(self) -> list[str]:
        """The queues the tasks run on, sorted."""
        return sorted({t.queue for t in self.tasks})


def locate(file: Path) -> tuple[str, Path, Path]:
    """``(dotted name, import root, source)`` of a module file (see the module doc).

    Raises:
        DiscoveryError: not a ``.py`` file.
    """
    file = file.resolve()
    if file.suffix != ".py" or not file.is_file():
        raise DiscoveryError(f"{file} is not a Python file (MODULE.py)")
    parts = [file.stem]
    directory = file.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    if parts[-1] == "__init__":
        parts.pop()
    source = directory / parts[0] if len(parts) > 1 or file.stem == "__init__" else file
    return ".".join(parts), directory, source


def _spec_definition(name: str, value: Any, base: Path) -> Definition:
    where = f"{DEFINITIONS_ATTRIBUTE}[{name!r}]"
    if isinstance(value, str | os.PathLike):
        path = base / Path(value)
        try:
            value = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise DiscoveryError(f"{where}: cannot read {path}: {e}") from e
    if isinstance(value, Mapping) and isinstance(value.get("workflow"), Mapping):
        schema = value.get("input_schema")
        if schema is not None and not isinstance(schema, Mapping):
            raise DiscoveryError(f"{where}: input_schema must be a mapping or absent")
        return Definition(name, dict(value["workflow"]), dict(schema) if schema else None)
    if isinstance(value, Mapping) and "nodes" in value:
        return Definition(name, dict(value), None)
    raise DiscoveryError(f"{where} is neither a spec (with nodes), a mapping with "
                         "'workflow', nor the path of a file holding one")


def _registered(module_name: str, file: Path) -> dict[str, Any]:
    """Import the module here and describe what it registered (run in the child)."""
    from headwater.sdk import REGISTRY
    from headwater.workflows.decorator import WORKFLOWS
    from services.gateway.definitions.announced import body_of
    from services.worker.workflows import announced

    tasks_before, flows_before = set(REGISTRY), set(WORKFLOWS)
    module = importlib.import_module(module_name)
    flows = {n: WORKFLOWS[n] for n in WORKFLOWS if n not in flows_before}
    tasks = []
    for name in sorted(set(REGISTRY) - tasks_before):
        info = REGISTRY[name]
        hints = flows[name].deploy if name in flows else info.deploy
        tasks.append({"name": name, "queue": info.queue, "hints": hints})
    definitions = []
    code_version = os.environ.get("HEADWATER_CODE_VERSION") or None
    for name in sorted(flows):
        said = announced(flows[name], code_version)
        body = body_of(said)
        definitions.append({"name": name, "workflow": body.spec,
                            "input_schema": body.input_schema,
                            "code_version": said.code_version})
    exposed = getattr(module, DEFINITIONS_ATTRIBUTE, None) or {}
    if not isinstance(exposed, Mapping):
        raise DiscoveryError(f"{DEFINITIONS_ATTRIBUTE} must be a mapping of name -> spec")
    for name in sorted(exposed):
        found = _spec_definition(str(name), exposed[name], file.parent)
        definitions.append({"name": found.name, "workflow": found.workflow,
                            "input_schema": found.input_schema, "code_version": None})
    return {"tasks": tasks, "definitions": definitions}


def discover(file: Path, code_version: str | None = None) -> Found:
    """Import ``file`` in a fresh interpreter and return what it registers.

    Args:
        file: the module's ``.py`` file.
        code_version: the workers' ``HEADWATER_CODE_VERSION`` (None: the digest of each
            ``@workflow``'s source, as a worker without one announces).

    Raises:
        DiscoveryError: the import failed (its traceback's last lines quoted), or what
            the module exposes is malformed.
    """
    module, root, source = locate(file)
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), str(repo), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("HEADWATER_CODE_VERSION", None)
    if code_version:
        env["HEADWATER_CODE_VERSION"] = code_version
    try:
        done = subprocess.run([sys.executable, "-m", "ops.deploy.discover", module,
                               str(file.resolve())], capture_output=True, text=True, env=env,
                              cwd=root, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
                              check=False)
    except subprocess.TimeoutExpired as e:
        raise DiscoveryError(f"importing {module} took over {TIMEOUT_S:.0f} s") from e
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise DiscoveryError(f"importing {module} failed:\n{tail}")
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    return Found(module, file.resolve(), root, source,
                 tuple(Task(**t) for t in doc["tasks"]),
                 tuple(Definition(**d) for d in doc["definitions"]))


def main(argv: list[str]) -> int:
    """The child's entry: ``python -m ops.deploy.discover MODULE FILE``; prints one
    line of JSON, or the fault on stderr with exit status 2."""
    try:
        doc = _registered(argv[0], Path(argv[1]))
    except DiscoveryError as e:
        print(str(e), file=sys.stderr)
        return 2
    print(json.dumps(doc, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
