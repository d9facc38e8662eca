"""``headwater deploy`` and ``headwater rollback`` against a stand-in gateway (a real
HTTP server): a dry run prints the plan with the version each definition would be and
writes and registers nothing; a deploy writes the files and registers each definition
(a new version only when its body changed); a rollback asks the gateway for it and
says what became current. And the pools' rules (``ops.deploy.pools``) and the
discovery's refusals, on their own."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import standin_gateway
from typer.testing import CliRunner

from headwater.core.definitions import digest
from ops.cli.app import app
from ops.deploy.discover import DiscoveryError, discover
from ops.deploy.pools import Pool, pool

runner = CliRunner()
MODULE = '''
    from headwater import task

    @task(name="shop.price", queue="cpu", cpu="250m")
    def price(sku: str) -> float:
        return 1.0

    SPEC = {"name": "shop.order", "nodes": [{"id": "p", "task": "shop.price",
                                             "input": {"sku": "${input.sku}"}}]}
    DEFINITIONS = {"shop.order": SPEC, "shop.quote": {"workflow": SPEC,
                   "input_schema": {"type": "object"}}}
'''


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "shop.py"
    path.write_text(textwrap.dedent(MODULE))
    return path


class Registry:
    """The stand-in's definitions: ``name -> [(body, digest)]`` (the current last)."""

    def __init__(self) -> None:
        self.versions: dict[str, list[dict[str, Any]]] = {}
        self.asked: list[tuple[str, str]] = []

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.asked.append((method, path))
        name = path.split("/")[3].split("?")[0]
        held = self.versions.setdefault(name, [])
        if method == "GET":
            if not held:
                return 404, {"status": 404, "title": "Not found", "detail": "no definition"}
            return 200, {**held[-1], "name": name, "latest": len(held)}
        if method == "PUT":
            mine = digest(body["workflow"], body.get("input_schema"))
            if not held or held[-1]["digest"] != mine:
                held.append({"version": len(held) + 1, "digest": mine})
            return 200, {"name": name, **held[-1]}
        if method == "POST" and path.endswith("/rollback"):
            to = (body or {}).get("to") or len(held) - 1
            return 200, {"name": name, "version": to, "previous": len(held),
                         "latest": len(held), "changed": True}
        return 405, {"status": 405, "title": "Method not allowed"}


def test_a_dry_run_prints_the_plan_and_writes_and_registers_nothing(
        module: Path, tmp_path: Path) -> None:
    registry = Registry()
    registry.versions["shop.order"] = [{"version": 1, "digest": "0" * 64}]
    out = tmp_path / "out"
    with standin_gateway.serve(registry.answer) as url:
        done = runner.invoke(app, ["deploy", str(module), "--out", str(out), "--dry-run",
                                   "--gateway", url])
    assert done.exit_code == 0, done.output
    assert "queue cpu: 1-8 replicas, cpu 250m" in done.output
    assert f"would write {out / 'k8s' / 'kustomization.yaml'}" in done.output
    assert f"would write {out / 'image' / 'app' / 'shop.py'}" in done.output
    assert "would register shop.order: new version 2" in done.output
    assert "would register shop.quote: new version 1" in done.output
    assert not out.exists()
    assert {m for m, _ in registry.asked} == {"GET"}


def test_a_deploy_writes_and_registers_new_versions_only_when_bodies_change(
        module: Path, tmp_path: Path) -> None:
    registry = Registry()
    out = tmp_path / "out"
    with standin_gateway.serve(registry.answer) as url:
        args = ["deploy", str(module), "--out", str(out), "--gateway", url]
        first = runner.invoke(app, args)
        again = runner.invoke(app, args)
        module.write_text(module.read_text().replace('"${input.sku}"', '"x"'))
        changed = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "registered shop.order: new version 1" in first.output
    assert "registered shop.order: current version 1, unchanged" in again.output
    assert "registered shop.order: new version 2" in changed.output
    assert "registered shop.quote: new version 2" in changed.output
    assert (out / "image" / "Dockerfile").is_file()
    assert (out / "k8s" / "workers.yaml").is_file()


def test_a_module_that_fails_to_import_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    done = runner.invoke(app, ["deploy", str(broken), "--dry-run", "--no-register"])
    assert done.exit_code == 2
    assert "importing broken failed" in done.output and "no_such_module_here" in done.output


def test_malformed_definitions_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('DEFINITIONS = {"x": {"name": "x"}}\n')
    with pytest.raises(DiscoveryError, match=r"DEFINITIONS\['x'\] is neither a spec"):
        discover(bad)


def test_a_packaged_module_is_imported_by_its_dotted_name(tmp_path: Path) -> None:
    package = tmp_path / "top" / "sub"
    package.mkdir(parents=True)
    (tmp_path / "top" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text("from headwater import task\n\n"
                                     "@task(name='top.job', queue='q1')\n"
                                     "def job() -> int:\n    return 1\n")
    found = discover(package / "jobs.py")
    assert (found.module, found.root, found.source) == ("top.sub.jobs", tmp_path,
                                                        tmp_path / "top")
    assert [(t.name, t.queue) for t in found.tasks] == [("top.job", "q1")]


def test_rollback_says_what_is_current() -> None:
    registry = Registry()
    registry.versions["shop.order"] = [{"version": 1, "digest": "a"},
                                       {"version": 2, "digest": "b"}]
    with standin_gateway.serve(registry.answer) as url:
        done = runner.invoke(app, ["rollback", "shop.order", "--to", "1", "--gateway", url])
    assert done.exit_code == 0, done.output
    assert "shop.order: version 1 is current (was 2; latest 2)" in done.output
    assert registry.asked == [("POST", "/v1/definitions/shop.order/rollback")]


@pytest.mark.parametrize(("hints", "expected"), [
    ([{}], (1, 8, False, "1", "512Mi", "1Gi", 0, 8)),
    ([{"replicas": 2}, {"replicas": 3}], (3, 3, True, "1", "512Mi", "1Gi", 0, 8)),
    ([{"replicas": 2}, {"max_replicas": 5}], (2, 5, False, "1", "512Mi", "1Gi", 0, 8)),
    ([{"min_replicas": 0, "max_replicas": 2}, {"max_replicas": 4}],
     (0, 4, False, "1", "512Mi", "1Gi", 0, 8)),
    ([{"cpu": "1500m"}, {"cpu": 1}, {"memory": "2Gi"}, {"memory": "1500Mi"}],
     (1, 8, False, "1500m", "2Gi", "2Gi", 0, 8)),
    ([{"gpu": 1}, {"gpu": 2, "min_replicas": 12}], (12, 12, False, "1", "512Mi", "1Gi", 2, 1)),
])
def test_a_pool_holds_what_each_of_its_tasks_asks(hints: list[dict[str, Any]],
                                                  expected: tuple[Any, ...]) -> None:
    p: Pool = pool("q", {f"t{i}": h for i, h in enumerate(hints)}, partitions=8)
    assert (p.min_replicas, p.max_replicas, p.fixed, p.cpu, p.memory, p.memory_limit,
            p.gpu, p.concurrency) == expected
