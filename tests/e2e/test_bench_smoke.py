"""``python -m load.bench --quick`` on the real broker and database: every benchmark
reports every figure as a positive finite number (a count of occurrences, such as B6's
hops over a second, as a finite number ≥ 0), and the Markdown and PNG are written."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from stackkit import require_services

from tests.polling import scaled

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.timeout(scaled(600))
def test_quick_benchmark_reports_every_figure(tmp_path: Path) -> None:
    require_services()
    expected = orjson.loads(_bench("--quick", "--list").stdout)
    assert set(expected) == {"B1", "B2", "B2c", "B3", "B3c", "B4", "B5", "B6", "B7", "B8",
                             "B9"}
    _bench("--quick", "--out", str(tmp_path))
    [json_path] = tmp_path.glob("*.json")
    doc = orjson.loads(json_path.read_bytes())
    for name, keys in expected.items():
        bench = doc["benchmarks"][name]
        assert bench["error"] is None, bench["error"]
        counts = {m["key"] for m in bench["metrics"] if m["unit"] == "count"}
        for key in keys:
            value = bench["values"].get(key)
            assert isinstance(value, int | float) and math.isfinite(value) \
                and (value >= 0 if key in counts else value > 0), f"{name}.{key} = {value!r}"
            if key in bench["ratios"]:
                r = bench["ratios"][key]
                assert isinstance(r, int | float) and math.isfinite(r) and r > 0, \
                    f"{name}.{key} ratio = {r!r}"
    stem = json_path.with_suffix("")
    assert "| bench | figure |" in stem.with_suffix(".md").read_text()
    assert stem.with_suffix(".png").read_bytes()[:8] == PNG_MAGIC


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m load.bench`` from the repository root; fail with its output.

    A subprocess, because sandboxes set ``HEADWATER_HOME`` in the environment of whoever
    starts them, which would confuse this session's own stack.
    """
    run = subprocess.run([sys.executable, "-m", "load.bench", *args], cwd=REPO,
                         capture_output=True, text=True, timeout=scaled(580))
    assert run.returncode == 0, f"{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return run
