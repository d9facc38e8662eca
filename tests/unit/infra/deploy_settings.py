"""What the deployment files are checked against, read from the code itself: the
``HEADWATER_*`` settings the code reads, whether a ``python -m`` command names a module
that an installed package ships (``headwater serve`` as its ``python -m services.serve``),
and the settings each service parses."""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import itertools
import os
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from ops import localstack
from ops.preflight import preflight

REPO = Path(__file__).resolve().parents[3]
CODE_DIRS = ("headwater", "services", "ops", "examples")
"""Where settings are read: the packages that ``pip install .`` ships (pyproject.toml)."""
SETTING_READERS = {"env_str", "env_int", "env_float"}
"""``services.common.settings``'s readers: ``env_str("X", ...)`` reads ``HEADWATER_X``."""
ENVIRON_READERS = {"get", "getenv", "pop", "setdefault"}
"""``os.environ.get("HEADWATER_X")``, ``os.getenv(...)``: the name is the first argument."""
PREFIX = "HEADWATER_"


def _names_in(tree: ast.AST) -> Iterator[str]:
    """The ``HEADWATER_*`` names that one module's calls and subscripts read."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            if name in SETTING_READERS:
                yield PREFIX + first.value
            elif name in ENVIRON_READERS and first.value.startswith(PREFIX):
                yield first.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            value = node.slice.value
            if isinstance(value, str) and value.startswith(PREFIX):
                yield value


@cache
def settings_read_by_code() -> frozenset[str]:
    """Every ``HEADWATER_*`` variable the shipped code reads (an AST scan of
    ``CODE_DIRS``: the settings readers' first arguments and ``os.environ`` look-ups)."""
    names: set[str] = set()
    for folder in CODE_DIRS:
        for path in (REPO / folder).rglob("*.py"):
            names.update(_names_in(ast.parse(path.read_text(), str(path))))
    return frozenset(names)


def unknown_settings(names: Sequence[str] | Mapping[str, Any]) -> list[str]:
    """The ``HEADWATER_*`` names among ``names`` that no code reads (typos, leftovers,
    settings that do not exist)."""
    known = settings_read_by_code()
    return sorted(n for n in names if n.startswith(PREFIX) and n not in known)


@cache
def shipped_packages() -> tuple[str, ...]:
    """The ``[tool.setuptools.packages.find] include`` patterns of pyproject.toml: what
    ``pip install .`` (the image's install) puts in site-packages."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return tuple(config["tool"]["setuptools"]["packages"]["find"]["include"])


def python_form(argv: Sequence[str]) -> list[str]:
    """``argv`` as ``python -m <module> ...``: ``headwater serve ...`` (the console
    script pyproject.toml installs, its ``serve`` command) is ``python -m services.serve
    ...``; any other command as it is."""
    if list(argv[:2]) == ["headwater", "serve"]:
        scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
        assert scripts.get("headwater") == "ops.cli:main", scripts
        return ["python", "-m", "services.serve", *argv[2:]]
    return list(argv)


def flag_values(argv: Sequence[str], flag: str) -> list[str]:
    """The values given to ``flag`` (``--queue Q``, repeatable) in ``argv``."""
    return [value for given, value in itertools.pairwise(argv) if given == flag]


def module_problem(argv: Sequence[str]) -> str:
    """Why ``argv`` is not ``python -m <module> ...`` of a module that the installed
    package ships and that ``python -m`` can run (``""``: it is)."""
    if len(argv) < 3 or argv[0] != "python" or argv[1] != "-m":
        return f"{list(argv)} is not `python -m <module> ...`"
    module = argv[2]
    top = module.split(".")[0]
    if not any(fnmatch.fnmatch(top, pattern) for pattern in shipped_packages()):
        return f"{module}: package {top!r} is not installed by `pip install .`"
    spec = importlib.util.find_spec(module)
    if spec is None:
        return f"{module}: no such module"
    if spec.submodule_search_locations is not None and importlib.util.find_spec(
            f"{module}.__main__") is None:
        return f"{module}: a package without __main__"
    return ""


def import_failures(commands: Mapping[str, tuple[Sequence[str], Mapping[str, str]]]
                    ) -> dict[str, str]:
    """Run ``preflight.preflight`` on ``{name: (argv, env)}``: each command's module and
    a worker's ``--tasks`` modules imported in a fresh interpreter with ``env``.

    Returns:
        ``{name: error text}`` for each command whose imports fail.
    """
    launches = [(localstack.Service(name, (sys.executable, *argv[1:])), dict(env))
                for name, (argv, env) in commands.items()]
    return preflight(launches)


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with every ``HEADWATER_*`` variable replaced by those of ``env``
    (restored afterwards), to read a service's settings as its container would."""
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.startswith(PREFIX)]:
            del os.environ[name]
        os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settings_problem(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """Why the service that ``argv`` runs would refuse its settings under ``env`` (a
    ``ValueError`` from its ``Settings.from_env``; ``""``: it takes them)."""
    from services.common.settings import CommonSettings
    from services.coordinator.settings import Settings as CoordinatorSettings
    from services.gateway.settings import Settings as GatewaySettings
    from services.worker.settings import Settings as WorkerSettings

    module = argv[2] if len(argv) > 2 else ""
    try:
        with environment(env):
            if module == "services.worker":
                queue, tasks = localstack.worker_of(["python", *argv[1:]]) or ("", [])
                WorkerSettings.from_env(queue or None, tasks or None)
            elif module == "services.gateway":
                GatewaySettings.from_env()
            elif module == "services.coordinator":
                CoordinatorSettings.from_env()
            elif module == "services.serve":
                from services.common.metrics import port_from_env
                from services.serve.app import parts_from_env

                parts_from_env(flag_values(argv, "--queue"),
                               flag_values(argv, "--tasks") or None, None)
                port_from_env("serve")
            else:
                CommonSettings(**CommonSettings.common_from_env())
    except ValueError as e:
        return f"{module}: {e}"
    return ""
