"""The profiling run's report: per window and per process, the top frames by self and
inclusive time (``load.profile.stacks.table``), with the benchmarks' own figures as they
came out while sampled; and the short summary printed at the end. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from load.profile.stacks import Profile, table, top


@dataclass(frozen=True)
class Sampled:
    """One process's profile over one window.

    Attributes:
        window: the window's label (``B2-spec-1-coordinator``, ``B3-loaded``).
        seconds: how long the window lasted.
        service: the process's service name (``coordinator``, ``worker-cpu-1``).
        profile: its samples.
        rate: samples per second asked of py-spy.
        raw: its collapsed stacks' file, relative to the report.
        svg: its flamegraph's file, relative to the report.
    """

    window: str
    seconds: float
    service: str
    profile: Profile
    rate: int
    raw: str
    svg: str

    @property
    def busy(self) -> float:
        """Samples ÷ the samples one thread busy the whole window would give: about the
        process's Python threads' busy time, as a share of the window (over 1 with more
        than one thread busy at once)."""
        return self.profile.samples / (self.rate * self.seconds) if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Outcome:
    """A benchmark's own result in the profiling run.

    Attributes:
        name: ``B2``, ``B3``.
        values: its figures, metric key -> value (what was measured before an error).
        error: why it failed, or ''.
    """

    name: str
    values: Mapping[str, float]
    error: str = ""


def markdown(heading: Mapping[str, str], outcomes: Sequence[Outcome],
             sampled: Sequence[Sampled], n: int = 25) -> str:
    """The report: the run's settings (``heading``: name -> value), each benchmark's
    figures, then one section per window and per process with its table of the top
    ``n`` frames."""
    lines = ["# Profiles under B2 and B3", ""]
    lines += [f"- {k}: {v}" for k, v in heading.items()]
    lines += ["", "Figures measured while sampled (py-spy's overhead included; not the "
              "benchmark's figures):", ""]
    for outcome in outcomes:
        figures = ", ".join(f"{k} {v:.4g}" for k, v in outcome.values.items())
        lines.append(f"- {outcome.name}: {figures or '(none)'}"
                     + (f" — failed: {outcome.error}" if outcome.error else ""))
    for s in sampled:
        links = f"[collapsed stacks]({s.raw}), [flamegraph]({s.svg})"
        lines += ["", f"## {s.window} — {s.service}", "",
                  f"{s.profile.samples} samples in {s.seconds:.1f} s at {s.rate}/s "
                  f"(busy {100 * s.busy:.0f}% of one thread). {links}", "",
                  table(s.profile, n).rstrip()]
    return "\n".join(lines) + "\n"


def summary(sampled: Sequence[Sampled], n: int = 10) -> str:
    """Per window and process, the top ``n`` frames by self time, as plain text."""
    lines: list[str] = []
    for s in sampled:
        lines.append(f"{s.window} / {s.service}: {s.profile.samples} samples, "
                     f"busy {100 * s.busy:.0f}% of one thread")
        for frame, percent in top(s.profile.self_time, s.profile.samples, n):
            lines.append(f"  {percent:5.1f}%  {frame}")
    return "\n".join(lines) + "\n"
