"""The CPU time a deployment's processes use over a measured window, by role, read from
``/proc/<pid>/stat`` (user plus system time, the kernel's clock ticks): what a capacity
model divides the work done by to give it per core.

    before = cpu_by_role(sandbox)
    ...  # the measured work
    used = cpu_used(before, cpu_by_role(sandbox))   # {"coordinators": 3.2, ...} seconds
"""

from __future__ import annotations

import os
from pathlib import Path

from load.deploy import running
from ops.sandbox import Sandbox

ROLES = ("coordinators", "workers", "others")
"""What ``role_of`` sorts a sandbox's services into; ``others`` are the gateway and the
projector (a process of its own in a benchmark's deployment)."""
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
"""The unit of ``utime`` and ``stime`` in ``/proc/<pid>/stat``, per second."""
_UTIME = 11
"""``utime``'s index among the fields after the process name (field 14 of ``proc(5)``,
whose fields 1 and 2 are the pid and the name in parentheses); ``stime`` follows it."""


def role_of(service: str) -> str:
    """The role of a sandbox's service by its name: ``coordinator``, ``coordinator-2`` ...
    are coordinators, ``worker-<queue>-<n>`` workers, anything else one of the others."""
    if service == "coordinator" or service.startswith("coordinator-"):
        return "coordinators"
    return "workers" if service.startswith("worker-") else "others"


def cpu_s_of_stat(stat: str, ticks_per_s: int = CLOCK_TICKS_PER_S) -> float:
    """The CPU time a ``/proc/<pid>/stat`` line says its process has used, seconds
    (``utime + stime``; its children's time is not counted).

    Args:
        stat: the file's text.
        ticks_per_s: the kernel's clock ticks per second (``SC_CLK_TCK``).

    Raises:
        ValueError: not a ``stat`` line (no name in parentheses, too few fields, or not
            numbers where the times are).
    """
    # The name may hold spaces and parentheses: the fields start after its last ")".
    _, close, rest = stat.rpartition(")")
    fields = rest.split()
    if not close or len(fields) <= _UTIME + 1:
        raise ValueError(f"not a /proc/<pid>/stat line: {stat[:80]!r}")
    try:
        ticks = int(fields[_UTIME]) + int(fields[_UTIME + 1])
    except ValueError as e:
        raise ValueError(f"utime/stime are not numbers in {stat[:80]!r}") from e
    return ticks / ticks_per_s


def process_cpu_s(pid: int) -> float:
    """The CPU time process ``pid`` has used so far, seconds (``cpu_s_of_stat``).

    Raises:
        OSError: no such process.
    """
    return cpu_s_of_stat(Path(f"/proc/{pid}/stat").read_text())


def cpu_by_role(sandbox: Sandbox) -> dict[str, float]:
    """The CPU time the running processes of ``sandbox`` have used so far, summed by
    ``role_of`` their service, seconds; every role of ``ROLES`` is present (0 without a
    process).

    Raises:
        LookupError: a service of the sandbox is not running.
    """
    out = dict.fromkeys(ROLES, 0.0)
    for service in sandbox.services:
        _, pid = running(sandbox, service.name)
        out[role_of(service.name)] += process_cpu_s(pid)
    return out


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The CPU time used by role between two ``cpu_by_role`` readings, seconds.

    Raises:
        ValueError: a role used less after than before (a process restarted between the
            readings: its time is not comparable).
    """
    used = {role: after.get(role, 0.0) - before.get(role, 0.0) for role in ROLES}
    if any(v < 0 for v in used.values()):
        raise ValueError(f"CPU time went back between readings ({before} -> {after}): "
                         "a process restarted")
    return used
