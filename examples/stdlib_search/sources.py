"""Locating the standard library's Python source without importing it.

The first step of the ``stdlib-search`` example (:func:`list_modules`) and the
lookup behind each extraction (:func:`find_source`). Modules are located and
read, never imported: importing arbitrary stdlib modules has side effects
(``antigravity`` opens a browser, ``this`` prints, ``tkinter`` needs a display
library...).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

# Never listed, even though they have source: jokes with side effects on
# import and CPython's own regression-test suite (not public API, and
# absent from many distributions).
EXCLUDED_MODULES: frozenset[str] = frozenset({"this", "antigravity", "test"})


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[str, ...]:
    """Directories holding the pure-Python standard library.

    ``os`` is always imported, so its ``__file__`` is a reliable anchor even
    in a virtualenv, where ``sysconfig``'s ``platstdlib`` points into the venv.
    """
    candidates = [sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__)]
    dirs: list[str] = []
    for candidate in candidates:
        if candidate and os.path.isdir(candidate):
            real = os.path.realpath(candidate)
            if real not in dirs:
                dirs.append(real)
    return tuple(dirs)


def _find_spec(parts: Sequence[str]) -> importlib.machinery.ModuleSpec | None:
    """Walk a dotted name down from the stdlib directories, one package at a time.

    Args:
        parts: The name split on dots, at least one part (``["email", "mime"]``).

    Returns:
        The spec of the last part, or None if some part is not found, the
        finder fails, or a parent is a plain module rather than a package.

    """
    search_path: list[str] | None = list(_stdlib_dirs())
    spec: importlib.machinery.ModuleSpec | None = None
    for depth in range(1, len(parts) + 1):
        if search_path is None:  # the parent is a plain module, not a package
            return None
        try:
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), search_path)
        except Exception:  # any finder failure means "not found"
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        search_path = list(locations) if locations is not None else None
    return spec


def find_source(module: str) -> Path | None:
    """Return the ``.py`` file of a stdlib module (``__init__.py`` for a package).

    Uses :class:`importlib.machinery.PathFinder` on the stdlib directories
    instead of :func:`importlib.util.find_spec`: the latter reports frozen
    modules (``os``, ``codecs``, ``io``... on 3.11) with origin ``"frozen"``,
    honours ``sys.path`` (so a local ``queue.py`` would shadow the stdlib one)
    and, for a dotted name, imports the parent package. PathFinder imports
    nothing.

    Args:
        module: Module name, top-level or dotted (``"email.mime"``).

    Returns:
        The source path, or None if the name is not a stdlib module with
        Python source (C extension, builtin, unknown name, ...).

    """
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    if parts[0] not in sys.stdlib_module_names:
        return None
    spec = _find_spec(parts)
    if spec is None or not spec.has_location or not spec.origin:
        return None
    origin = Path(spec.origin)
    return origin if origin.suffix == ".py" and origin.is_file() else None


def list_modules(limit: int | None = None) -> list[str]:
    """List the public top-level stdlib modules that have Python source.

    Names come from :data:`sys.stdlib_module_names`; private names (leading
    underscore), :data:`EXCLUDED_MODULES` and modules without a ``.py`` file
    (builtins such as ``sys``, C extensions such as ``math``, platform
    modules absent here such as ``winreg``) are left out. No module is
    imported.

    Args:
        limit: Keep only the first ``limit`` names (after sorting); None
            means no limit.

    Returns:
        Sorted module names.

    Raises:
        ValueError: If ``limit`` is negative.

    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    names = sorted(
        name
        for name in sys.stdlib_module_names
        if not name.startswith("_")
        and name not in EXCLUDED_MODULES
        and find_source(name) is not None
    )
    return names if limit is None else names[:limit]
