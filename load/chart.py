"""The PNG chart of a run: latency percentiles per path, with each p50's ratio to B1."""

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
    ("B5", "http", "B5 POST\n/v1/workflows"),
    ("B5", "kafka", "B5 produce\nsubmission"),
    ("B5", "http_to_dispatch", "B5 POST →\nfirst dispatch"),
    ("B5", "kafka_to_dispatch", "B5 produce →\nfirst dispatch"),
)
COLOURS = {50: "#4c72b0", 95: "#dd8452", 99: "#c44e52"}


def draw(doc: dict[str, Any], path: Path) -> None:
    """Draw grouped bars (p50, p95, p99; log scale, ms) for every latency of ``doc``
    and write them to ``path`` as PNG.

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
    from matplotlib.patches import Patch

    groups = _groups(doc)
    base = doc["baseline"].get("rtt")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.5 * len(groups) + 2), 5), dpi=110)
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
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


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
