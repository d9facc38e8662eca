"""``headwater deploy`` and ``headwater rollback`` on the real stack: a module's
definition deployed as version 1, changed and deployed again as version 2 (the same
module again makes no version), a run started on version 2, a rollback to version 1
while it runs: a new run by name uses version 1, the running one ends on version 2, and
the registry says version 1 is current of 2."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import httpx
from stackkit import Stack
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from ops.cli.app import app

runner = CliRunner()


def module_text(name: str, nodes: int) -> str:
    """A module exposing one spec definition of ``nodes`` sleeps in a row."""
    return textwrap.dedent(f'''
        DEFINITIONS = {{"{name}": {{"name": "{name}", "nodes": [
            {{"id": f"n{{i}}", "task": "e2e.sleep", "input": {{"seconds": "${{input.s}}"}},
              **({{"needs": [f"n{{i - 1}}"]}} if i else {{}})}} for i in range({nodes})]}}}}
    ''')


def deploy(module: Path, out: Path, gateway: str) -> str:
    done = runner.invoke(app, ["deploy", str(module), "--out", str(out), "--gateway",
                               gateway])
    assert done.exit_code == 0, done.output
    return done.output


async def test_deploy_two_versions_and_roll_back_while_one_runs(stack: Stack,
                                                                tmp_path: Path) -> None:
    name = f"ship-{uuid.uuid4().hex[:8]}"
    module, out = tmp_path / "ship.py", tmp_path / "out"
    module.write_text(module_text(name, 1))
    assert f"registered {name}: new version 1" in deploy(module, out, stack.gateway)
    assert f"registered {name}: current version 1, unchanged" in deploy(module, out,
                                                                        stack.gateway)
    module.write_text(module_text(name, 2))
    assert f"registered {name}: new version 2" in deploy(module, out, stack.gateway)
    assert (out / "k8s" / "kustomization.yaml").is_file()

    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        started = await client.post("/v1/workflows", json={"definition": name,
                                                           "input": {"s": 1.5}})
        assert started.status_code == 202, started.text
        on_v2 = started.json()["id"]
        await wait_status(stack, on_v2, until=("running",))

        back = runner.invoke(app, ["rollback", name, "--gateway", stack.gateway])
        assert back.exit_code == 0, back.output
        assert f"{name}: version 1 is current (was 2; latest 2)" in back.output

        fresh = await client.post("/v1/workflows", json={"definition": name,
                                                         "input": {"s": 0.05}})
        assert fresh.status_code == 202, fresh.text
        for run_id, version, nodes in ((fresh.json()["id"], 1, 1), (on_v2, 2, 2)):
            done = await wait_status(stack, run_id)
            assert done["status"] == "succeeded", done
            assert done["definition"] == {"name": name, "version": version}, done
            assert len(done["nodes"]) == nodes, done

        shown = (await client.get(f"/v1/definitions/{name}")).json()
        assert (shown["version"], shown["current"], shown["latest"]) == (1, 1, 2), shown
        forward = runner.invoke(app, ["rollback", name, "--to", "2", "--gateway",
                                      stack.gateway])
        assert f"{name}: version 2 is current (was 1; latest 2)" in forward.output
        missing = runner.invoke(app, ["rollback", name, "--to", "9", "--gateway",
                                      stack.gateway])
        assert missing.exit_code == 1 and "no version 9" in missing.output, missing.output
