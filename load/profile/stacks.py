"""Collapsed stacks (py-spy's ``raw`` format) read and counted: where a process spent its
samples, by the function running (self time) and by every function on the stack
(inclusive time).

A line of the format is one distinct stack and its sample count, the frames root first
and ``;``-separated: ``main (app.py:9);run (app.py:4);work (lib/x.py:12) 37``. A frame is
named here ``file:function`` (``lib/x.py:work``), its line number dropped, so that one
function's samples from different lines count together. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

Stack = tuple[str, ...]
"""Frames root first, each ``file:function``."""
NO_FRAMES = "(no Python frame)"
"""The frame a sample without any is counted under: py-spy writes such stacks when it read
a thread between two frames (``--nonblocking``) or with none yet."""
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    """``file:function`` of a py-spy frame ``function (file:line)`` (or ``function
    (file)``, recorded with ``--nolineno``); any other text as it is."""
    found = _FRAME.match(frame)
    return f"{found['file']}:{found['function']}" if found else frame


def parse(text: str) -> Counter[Stack]:
    """The stacks of a collapsed-stacks text and their samples.

    Args:
        text: lines ``frame;frame;... count``; blank lines are skipped, a line of a
            count alone is a sample without frames (``NO_FRAMES``).

    Returns:
        Each stack (frames named by ``frame_name``, root first) -> samples; stacks that
        differ only in line numbers are added together.

    Raises:
        ValueError: a line does not end in a space and a sample count.
    """
    stacks: Counter[Stack] = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        frames, space, count = line.rstrip().rpartition(" ")
        if not space or not count.isdigit():
            raise ValueError(f"line {number} is not 'frames count': {line[:120]!r}")
        names = [frame_name(f) for f in frames.split(";") if f]
        stacks[tuple(names or [NO_FRAMES])] += int(count)
    return stacks


@dataclass(frozen=True)
class Profile:
    """Where one process's samples went.

    Attributes:
        samples: all its samples (of threads not idle: py-spy without ``--idle``).
        self_time: frame -> samples in which it was the function running (the leaf).
        inclusive: frame -> samples in which it was anywhere on the stack (counted once
            per sample, however often it recurs).
    """

    samples: int
    self_time: Counter[str]
    inclusive: Counter[str]


def aggregate(stacks: Counter[Stack]) -> Profile:
    """Count each frame's self and inclusive samples (``parse``'s stacks)."""
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for stack, count in stacks.items():
        if not stack:
            continue
        self_time[stack[-1]] += count
        for frame in set(stack):
            inclusive[frame] += count
    return Profile(sum(stacks.values()), self_time, inclusive)


def top(counts: Counter[str], samples: int, n: int) -> list[tuple[str, float]]:
    """The ``n`` frames with the most samples, most first (ties by name), each with its
    percent of ``samples`` (0 when there are none)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [(frame, 100.0 * count / samples if samples else 0.0) for frame, count in ranked]


def table(profile: Profile, n: int = 25) -> str:
    """A Markdown table of the top ``n`` frames by self time beside the top ``n`` by
    inclusive time, percent of the process's samples; one line saying so when it has
    no samples."""
    if not profile.samples:
        return "_no samples: the process ran no Python code in the window_\n"
    selfs = top(profile.self_time, profile.samples, n)
    incl = top(profile.inclusive, profile.samples, n)
    lines = ["| # | self % | function running (file:function) | inclusive % | "
             "function on the stack (file:function) |", "|---:|---:|---|---:|---|"]
    for i in range(max(len(selfs), len(incl))):
        left = f"{selfs[i][1]:.1f} | `{_cell(selfs[i][0])}`" if i < len(selfs) else " | "
        right = f"{incl[i][1]:.1f} | `{_cell(incl[i][0])}`" if i < len(incl) else " | "
        lines.append(f"| {i + 1} | {left} | {right} |")
    return "\n".join(lines) + "\n"


def _cell(frame: str) -> str:
    """A frame name safe inside a Markdown table cell's code span."""
    return frame.replace("|", "\\|").replace("`", "'")
