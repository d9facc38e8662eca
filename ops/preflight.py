"""Whether a process of the local stack would start: ``preflight`` checks, in a fresh
interpreter per command line, that it gets past its imports and (the gateway, the
coordinator) that its settings parse, before ``restart`` stops anything."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence

from ops.localstack import REPO, Service, worker_of

IMPORT_CHECK = """\
import importlib, importlib.util, sys
main, *tasks = sys.argv[1:]
spec = importlib.util.find_spec(main)
if spec is None:
    sys.exit(f"ModuleNotFoundError: No module named {main!r}")
if spec.submodule_search_locations is not None:
    importlib.import_module(main + ".__main__")
for module in tasks:
    importlib.import_module(module)
if main in ("services.gateway", "services.coordinator"):
    importlib.import_module(main + ".settings").Settings.from_env()
"""
"""What ``preflight`` runs: imports a ``python -m`` process's module (a package's
``__main__``, whose ``main()`` runs only as a script) and a worker's task modules, and
reads the gateway's or the coordinator's settings (a bad one raises ``ValueError``,
e.g. ``HEADWATER_TOKEN`` with auth on)."""
PREFLIGHT_TIMEOUT_S = 120.0
"""How long ``preflight`` waits for its imports, seconds (the coordinator imports faust:
seconds on a busy two-core machine)."""


def preflight(launches: Sequence[tuple[Service, Mapping[str, str]]],
              timeout_s: float = PREFLIGHT_TIMEOUT_S) -> dict[str, str]:
    """Check, before stopping anything, that each process would get past its imports (and
    its settings: ``IMPORT_CHECK``): in
    a fresh interpreter per distinct command line (run at once, in parallel) with the
    process's environment and directory, import its ``-m`` module and, for a worker, its
    ``--tasks`` modules. Processes not started with ``-m`` are not checked.

    Args:
        launches: ``(service, extra environment)`` as ``start`` takes them.
        timeout_s: how long to wait for all the checks, seconds.

    Returns:
        ``{name: error text}`` for each process that would fail (the last lines of the
        check's traceback); empty when all pass.
    """
    groups: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], list[str]] = {}
    for service, env in launches:
        worker = worker_of(service.argv)
        if len(service.argv) < 3 or service.argv[1] != "-m":
            continue
        argv = (service.argv[0], "-c", IMPORT_CHECK, service.argv[2],
                *(worker[1] if worker else ()))
        groups.setdefault((argv, tuple(sorted(env.items()))), []).append(service.name)
    procs = {key: subprocess.Popen(key[0], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   cwd=REPO, env={**os.environ, **dict(key[1])})
             for key in groups}
    deadline = time.monotonic() + timeout_s
    failures: dict[str, str] = {}
    for key, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            err = f"its imports took over {timeout_s:.0f} s".encode()
        if proc.returncode != 0:
            text = "\n".join(err.decode(errors="replace").strip().splitlines()[-8:])
            failures.update(dict.fromkeys(groups[key], text or f"exit {proc.returncode}"))
    return failures
