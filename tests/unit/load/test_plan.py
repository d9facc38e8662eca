"""The benchmark plan is complete: every benchmark has a module, full and quick sizes,
figures with unique keys, and a row in load/README.md's table."""

from __future__ import annotations

from pathlib import Path

import pytest

from load import plan

README = Path(plan.__file__).with_name("README.md").read_text()


@pytest.mark.parametrize("name", plan.ORDER)
def test_every_benchmark_is_planned_in_both_modes(name: str) -> None:
    module = plan.MODULES[name]
    assert name == module.NAME
    for sizes in (plan.FULL[name], plan.QUICK[name]):
        keys = [m.key for m in module.metrics(sizes)]
        assert keys and len(keys) == len(set(keys)), f"{name}: figures {keys}"


@pytest.mark.parametrize("name", plan.ORDER)
def test_every_benchmark_has_a_readme_row(name: str) -> None:
    assert f"\n| {name} | " in README, f"load/README.md has no table row for {name}"


def test_quick_and_full_plan_the_same_benchmarks() -> None:
    assert set(plan.ORDER) == set(plan.MODULES) == set(plan.FULL) == set(plan.QUICK)
    assert [p.name for p in plan.plan(quick=True, only={"B9"})] == ["B1", "B9"]


def test_quick_benchmarks_ask_for_one_deployments_settings() -> None:
    """``--quick`` gives a benchmark a deployment kept from an earlier one only for the
    same workers and concurrency (``load.kept``): a quick size that differs starts a
    deployment of its own, seconds more on every CI run. B9 always starts its own."""
    asked = {name: (s.workers[0] if isinstance(s.workers, tuple) else s.workers, s.concurrency)
             for name, s in plan.QUICK.items() if hasattr(s, "concurrency") and name != "B9"}
    assert set(asked) == set(plan.ORDER) - {"B1", "B9"}
    assert len(set(asked.values())) == 1, asked
