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
