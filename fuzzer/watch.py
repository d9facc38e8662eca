"""Whether the sandbox's processes survived the run: their pids before and after, and
what their logs say meanwhile.

A process that died has no live pid; one that was restarted has another pid; a
coordinator that replaced itself (``exec``, same pid) logs ``restarting: <why>``
(``services/coordinator/shutdown.py``). Tracebacks and the gateway's ``unexpected
error`` lines (``services/gateway/edge/middleware.py``) are counted too, with a few kept as
evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ops import localstack
from ops.sandbox import Sandbox

EVIDENCE_LINES = 5
"""Log lines kept per kind of finding and service."""
_PATTERNS = {
    "restarts_in_place": re.compile(r"restarting: .*"),
    "tracebacks": re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE),
    "unexpected_errors": re.compile(r"unexpected error in .*"),
    "cannot_apply": re.compile(r"cannot apply .*"),
    "critical": re.compile(r"CRITICAL.*|\[CRITICAL\].*"),
}


@dataclass
class Seen:
    """One service at the start of the run."""

    pid: int | None
    log_offset: int


@dataclass
class Watch:
    """The sandbox's processes as the run began (``start``) and how they ended
    (``finish``).

    Args:
        sandbox: the running sandbox.
    """

    sandbox: Sandbox
    before: dict[str, Seen] = field(default_factory=dict)

    def start(self) -> None:
        """Note each service's pid and the size of its log."""
        for s in self.sandbox.services:
            size = s.log_file.stat().st_size if s.log_file.exists() else 0
            self.before[s.name] = Seen(localstack.read_pid(s.pid_file), size)

    def finish(self) -> dict[str, Any]:
        """Each service's pids, whether it still runs, and counts (with a few lines) of
        what its log said since ``start``.

        Returns:
            ``{"services": {name: {...}}, "crashed": [names], "restarted": [names],
            "restarts_in_place": n, "tracebacks": n, "unexpected_errors": n}``.
        """
        services: dict[str, Any] = {}
        for s in self.sandbox.services:
            seen = self.before.get(s.name, Seen(None, 0))
            pid = localstack.read_pid(s.pid_file)
            text = _read_from(s.log_file, seen.log_offset)
            found = {name: [m.group(0)[:300] for m in p.finditer(text)]
                     for name, p in _PATTERNS.items()}
            services[s.name] = {
                "pid_before": seen.pid, "pid_after": pid, "alive": pid is not None,
                "same_pid": pid is not None and pid == seen.pid,
                **{name: len(lines) for name, lines in found.items()},
                "evidence": {name: lines[:EVIDENCE_LINES] for name, lines in found.items()
                             if lines and name != "tracebacks"},
                "traceback_tails": _traceback_tails(text),
            }
        return {
            "services": services,
            "crashed": sorted(n for n, v in services.items() if not v["alive"]),
            "restarted": sorted(n for n, v in services.items() if v["alive"] and not v["same_pid"]),
            **{name: sum(v[name] for v in services.values())
               for name in ("restarts_in_place", "tracebacks", "unexpected_errors",
                            "cannot_apply")},
        }


def _read_from(path: Any, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _traceback_tails(text: str) -> list[str]:
    """The last line of the first few tracebacks (the exception and its message)."""
    tails: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j] and not lines[j].startswith((" ", "\t"))), None)
            if end is not None:
                tails.append(lines[end][:300])
        if len(tails) >= EVIDENCE_LINES:
            break
    return tails
