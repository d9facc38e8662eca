"""The PNG chart of a run: latency percentiles per path, with each p50's ratio to B1; below
them, when those benchmarks ran, B8's time per task by worker count and B7's recovery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from load.stats import PERCENTILES

# (benchmark, key prefix of its ``<prefix>_p<q>_ms`` values, label)
SERIES = (
    ("B1", "rtt", "B1 raw Kafka\nround trip"),
    ("B3", "hop", "B3 success →\nnext start"),
    ("B3", "dispatch", "B3 success →\nnext dispatch"),
    ("B3", "loaded_hop", "B3 success →\nnext start, loaded"),
    ("B3c", "spec_hop", "B3c spec:\nsuccess → next start"),
    ("B3c", "code_hop", "B3c code:\nsuccess → next start"),
    ("B3c", "nocache_hop", "B3c code, no cache:\nsuccess → next start"),
    ("B6", "quiet_hop", "B6 hop, loaded,\nquiet"),
    ("B6", "hog_hop", "B6 hop, loaded,\nCPU hog"),
    ("B6", "hog_dispatch", "B6 CPU hog:\nsuccess → dispatch"),
    ("B6", "hog_start", "B6 CPU hog:\ndispatch → start"),
    ("B5", "http", "B5 POST\n/v1/workflows"),
    ("B5", "kafka", "B5 produce\nsubmission"),
    ("B5", "http_to_dispatch", "B5 POST →\nfirst dispatch"),
    ("B5", "kafka_to_dispatch", "B5 produce →\nfirst dispatch"),
)
COLOURS = {50: "#4c72b0", 95: "#dd8452", 99: "#c44e52"}
RECOVERY = (("recovery_first_progress_s", "kill → first\nprogress"),
            ("recovery_all_done_s", "kill → all\ndone"))
RECOVERY_TARGET_S = 5.0


def draw(doc: dict[str, Any], path: Path) -> None:
    """Draw grouped bars (p50, p95, p99; log scale, ms) for every latency of ``doc``, and
    under them B8's and B7's bars when present, and write them to ``path`` as PNG.

    Raises:
        ImportError: matplotlib is missing (``pip install -e '.[bench]'``).
    """
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("the benchmark chart needs matplotlib: "
                          "`.venv/bin/pip install -e '.[bench]'`") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(doc)
    scaling, recovery = _scaling(doc), _recovery(doc)
    lower = bool(scaling or recovery)
    width = max(6.0, 1.5 * len(groups) + 2)
    fig = plt.figure(figsize=(width, 8.5 if lower else 5), dpi=110)
    grid = fig.add_gridspec(2 if lower else 1, 2, height_ratios=[5, 3.5] if lower else [1])
    _latencies(fig.add_subplot(grid[0, :]), doc, groups)
    if lower:
        _bars(fig.add_subplot(grid[1, 0]), scaling, "B8 time per task (ms) by workers; "
              "x: speed-up over 1", "#55a868")
        _bars(fig.add_subplot(grid[1, 1]), recovery, "B7 coordinator SIGKILLed (s); "
              f"dashed: first-progress target {RECOVERY_TARGET_S:g} s", "#8172b3",
              target=RECOVERY_TARGET_S if recovery else None)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def _latencies(ax: Any, doc: dict[str, Any], groups: list[tuple[str, dict[int, float]]]) -> None:
    from matplotlib.patches import Patch

    base = doc["baseline"].get("rtt")
    width = 0.26
    for i, (_, values) in enumerate(groups):
        for j, q in enumerate(PERCENTILES):
            if q in values:
                ax.bar(i + (j - 1) * width, values[q], width, color=COLOURS[q])
        if 50 in values and base:
            ax.annotate(f"x{values[50] / base:.3g}", (i - width, values[50]), ha="center",
                        va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(groups)), [g[0] for g in groups], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("milliseconds (log scale)")
    ax.set_title(f"Latency percentiles, {doc['timestamp']} ({doc['mode']}); "
                 "x: p50 ÷ B1 round trip p50", fontsize=10)
    ax.legend(handles=[Patch(color=COLOURS[q], label=f"p{q}") for q in PERCENTILES],
              loc="upper left", fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)


def _bars(ax: Any, bars: list[tuple[str, float, str]], title: str, colour: str,
          target: float | None = None) -> None:
    """One bar per ``(label, value, annotation)``; an empty panel says so."""
    ax.set_title(title, fontsize=9)
    if not bars:
        ax.set_axis_off()
        return
    for i, (_, value, note) in enumerate(bars):
        ax.bar(i, value, 0.6, color=colour)
        if note:
            ax.annotate(note, (i, value), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                        textcoords="offset points")
    if target is not None:
        ax.axhline(target, color="#c44e52", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _groups(doc: dict[str, Any]) -> list[tuple[str, dict[int, float]]]:
    """(label, {percentile: ms}) for every series present in the document."""
    out = []
    for bench, prefix, label in SERIES:
        values = doc["benchmarks"].get(bench, {}).get("values", {})
        found = {q: values[f"{prefix}_p{q}_ms"] for q in PERCENTILES
                 if values.get(f"{prefix}_p{q}_ms") is not None}
        if found:
            out.append((label, found))
    return out


def _scaling(doc: dict[str, Any]) -> list[tuple[str, float, str]]:
    """B8's ``(label, ms per task, speed-up)`` per worker count present."""
    bench = doc["benchmarks"].get("B8", {})
    values = bench.get("values", {})
    out = []
    for n in bench.get("settings", {}).get("workers", []):
        per_task = values.get(f"per_task_ms_{n}w")
        if per_task is not None:
            speedup = values.get(f"speedup_{n}_vs_1")
            out.append((f"{n} worker{'s' if n > 1 else ''}", per_task,
                        f"x{speedup:.2f}" if speedup is not None else ""))
    return out


def _recovery(doc: dict[str, Any]) -> list[tuple[str, float, str]]:
    """B7's ``(label, seconds, value)`` for the figures present."""
    values = doc["benchmarks"].get("B7", {}).get("values", {})
    return [(label, values[key], f"{values[key]:.1f} s") for key, label in RECOVERY
            if values.get(key) is not None]
