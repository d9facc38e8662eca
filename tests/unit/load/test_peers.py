"""The peers' table: figures from task stamps (hops, steady rate, submissions), the
columns taken from make bench's results, Headwater's ratios, the Markdown page, the
sizes taken from load.plan and the venv pins' stamp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from load import plan
from load.peers import __main__ as peers_main
from load.peers import shapes, table, venvs


def test_a_hop_is_the_next_tasks_start_minus_the_previous_tasks_end() -> None:
    chains = [[(10.0, 10.001), (10.005, 10.006), (10.016, 10.017)], [(20.0, 20.5)]]
    assert shapes.hops_ms(chains) == pytest.approx([4.0, 10.0])


def test_hop_figures_are_load_stats_percentiles_under_the_prefix() -> None:
    chains = [[(0.0, 0.0), (0.001 * k, 0.001 * k)] for k in range(1, 101)]
    figures = shapes.hop_figures("loaded_hop", chains)
    assert set(figures) == {"loaded_hop_p50_ms", "loaded_hop_p95_ms", "loaded_hop_p99_ms"}
    assert figures["loaded_hop_p50_ms"] == pytest.approx(50.5)
    assert figures["loaded_hop_p99_ms"] == pytest.approx(99.01)


def test_steady_rate_drops_the_first_and_last_tenth_of_the_window() -> None:
    # 100 ends 10 ms apart over 0.99 s, plus a straggler 9 s later: the window is 0-9.99 s,
    # its middle 80 % (1-9 s) holds no end at all once the burst is over
    burst = [(t / 100, t / 100) for t in range(100)]
    assert shapes.steady_tasks_per_s(burst) == pytest.approx(80 / 0.792, rel=0.02)
    assert shapes.steady_tasks_per_s([*burst, (9.99, 9.99)]) == 0.0
    with pytest.raises(ValueError, match="two or more"):
        shapes.steady_tasks_per_s([(1.0, 1.0)])


def test_submit_figures_are_p50_and_p99_in_ms() -> None:
    got = shapes.submit_figures([0.001] * 99 + [0.1])
    assert got["submit_p50_ms"] == pytest.approx(1.0)
    assert got["submit_p99_ms"] == pytest.approx(1.99)


def test_workloads_round_trip_through_json() -> None:
    w = peers_main.workloads(quick=True)
    assert shapes.Workloads.from_json(json.loads(json.dumps(w.to_json()))) == w


def test_peer_sizes_are_make_benchs_of_the_same_mode() -> None:
    full = peers_main.workloads(quick=False)
    assert full.chains == plan.FULL["B2"].workflows
    assert full.hop_chains == plan.FULL["B3"].chains and full.hop_length == plan.FULL["B3"].length
    assert full.widths == (100, 1000, 10_000)  # B4's 100,000 is over shapes.MAX_WIDTH
    assert peers_main.workloads(quick=True).widths == plan.QUICK["B4"].widths


def _bench_doc() -> dict[str, Any]:
    values = {
        "B1": {"pipelined_per_s": 10_000.0, "rtt_p50_ms": 2.0, "rtt_p95_ms": 3.0,
               "rtt_p99_ms": 4.0},
        "B2": {"tasks_per_s_1_coordinator": 500.0},
        "B3": {"hop_p50_ms": 8.0, "loaded_hop_p99_ms": float("nan")},
        "B4": {"total_ms_100": 400.0},
        "B5": {"http_p50_ms": 6.0, "kafka_p50_ms": 3.0},
    }
    return {"mode": "quick", "benchmarks": {b: {"values": v} for b, v in values.items()}}


def test_columns_take_headwater_and_raw_kafka_from_make_bench() -> None:
    rows = table.rows((100,))
    peers = {"celery": {"tasks_per_s": 250.0, "hop_p50_ms": 4.0, "map_total_ms_100": 800.0}}
    got = table.columns(rows, _bench_doc(), peers)
    assert got["headwater"]["tasks_per_s"] == 500.0
    assert got["raw_kafka"]["tasks_per_s"] == 10_000.0
    assert got["raw_kafka"]["hop_p95_ms"] == 3.0
    assert got["raw_kafka"]["map_total_ms_100"] == pytest.approx(10.0)  # 100 pipelined records
    assert got["raw_kafka"]["submit_p50_ms"] == 3.0 and got["headwater"]["submit_p50_ms"] == 6.0
    assert got["headwater"]["loaded_hop_p99_ms"] is None  # NaN counts as missing
    assert got["dbos"]["tasks_per_s"] is None  # a peer that did not run
    assert got["celery"]["map_total_ms_100"] == 800.0


def test_ratios_are_headwater_over_each_column() -> None:
    values = table.columns(table.rows((100,)), _bench_doc(),
                           {"celery": {"tasks_per_s": 250.0, "hop_p50_ms": 4.0,
                                       "map_total_ms_100": 0.0}})
    got = table.ratios(values)
    assert set(got) == {"celery", "dbos", "raw_kafka"}
    assert got["celery"]["tasks_per_s"] == pytest.approx(2.0)
    assert got["celery"]["hop_p50_ms"] == pytest.approx(2.0)
    assert got["raw_kafka"]["tasks_per_s"] == pytest.approx(0.05)
    assert got["celery"]["map_total_ms_100"] is None  # a zero divisor
    assert got["dbos"]["tasks_per_s"] is None


def test_markdown_has_a_row_per_figure_and_the_guarantees(tmp_path: Path) -> None:
    w = peers_main.workloads(quick=True)
    doc = peers_main.document("20250101T000000Z", "quick", tmp_path / "x.json", _bench_doc(),
                              {"celery": {"tasks_per_s": 250.0}}, w)
    doc["preamble"] = peers_main._preamble(None, w, doc["peer_settings"], 1.25)
    doc["notes"] = ["dbos failed: boom"]
    page = table.markdown(doc)
    body = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(body) == 1 + len(table.rows(w.widths))
    assert "| 500 /s | 250 /s | — | 10,000 /s | 2x |" in page
    assert "task_acks_late" in page and "acks=all" in page and "dbos failed: boom" in page
    assert "load average 1.25 as the peers' run began" in page


def test_newest_bench_skips_other_modes_and_failed_runs(tmp_path: Path) -> None:
    good = _bench_doc()
    (tmp_path / "20250101T000000Z.json").write_text(json.dumps(good))
    failed = {**good, "benchmarks": {**good["benchmarks"], "B4": {"error": "x", "values": {}}}}
    (tmp_path / "20250102T000000Z.json").write_text(json.dumps(failed))
    (tmp_path / "20250103T000000Z.json").write_text(json.dumps({**good, "mode": "full"}))
    (tmp_path / "peers-20250104T000000Z.json").write_text("{}")
    assert peers_main.newest_bench(tmp_path, "quick") == tmp_path / "20250101T000000Z.json"
    assert peers_main.newest_bench(tmp_path, "full") == tmp_path / "20250103T000000Z.json"


def test_the_pins_stamp_changes_with_the_pins() -> None:
    assert venvs.pins_stamp(("a==1",)) != venvs.pins_stamp(("a==2",))
    assert venvs.pins_stamp(("a==1", "b==2")) == venvs.pins_stamp(("b==2", "a==1"))


def test_measure_runs_every_workload_through_the_peers_callables() -> None:
    w = peers_main.workloads(quick=True)
    asked: list[tuple[int, int, float]] = []

    def chains(count: int, length: int, gap_s: float) -> list[list[shapes.Stamp]]:
        asked.append((count, length, gap_s))
        return [[(i + 0.0, i + 0.001), (i + 0.011, i + 0.012)] for i in range(count)]

    got = shapes.measure(w, chains, lambda n: float(n * 2), lambda: [0.002] * w.submits)
    assert asked == [(w.chains, w.chain_length, 0.0), (w.hop_chains, w.hop_length, w.gap_s),
                     (w.hop_chains, w.hop_length, w.loaded_gap_s)]
    assert got["hop_p50_ms"] == pytest.approx(10.0)
    assert got["loaded_hop_p99_ms"] == pytest.approx(10.0)
    assert [got[f"map_total_ms_{n}"] for n in w.widths] == [float(n * 2) for n in w.widths]
    assert got["submit_p50_ms"] == pytest.approx(2.0) and got["tasks_per_s"] > 0
