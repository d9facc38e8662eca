"""The ``headwater`` command starts fast: ``--help``, ``version`` and ``status`` must not
import the Kafka, PostgreSQL, HTTP-server or stream-processing libraries (importing them
took about 1.5 s of each call). Checked on the import graph in a fresh interpreter, not
by timing: what a call imports is what it costs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from importlib.metadata import version

import pytest
import typer
from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.lazy import LAZY
from tests.unit.ops.conftest import Gateway

HEAVY = ("aiokafka", "asyncpg", "fastapi", "faust", "uvicorn", "starlette", "fastavro",
         "mode", "services", "ops.audit", "ops.history", "ops.sandbox")
"""Never needed by --help, version or status."""
NOT_FOR_HELP = (*HEAVY, "httpx", "httpx_sse", "yaml", "pydantic", "headwater.client",
                "headwater.core.events", "ops.cli.stack", "ops.cli.workflows")
"""Not needed to list the commands or print the version either."""

STATUS_DOC = {"id": "wf-1", "name": "n", "status": "running", "seq": 2, "output": None,
              "error": "", "nodes": [{"id": "a", "kind": "task", "status": "running",
                                      "succeeded": 0, "total": None, "failed": 0,
                                      "error": None}]}
PROBE = """\
import json, sys
sys.argv = ["headwater", *json.loads(sys.argv[1])]
try:
    {call}
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(k for k, v in sys.modules.items() if v is not None)))
"""


def imported(args: list[str], call: str = "from ops.cli.app import main; main()") -> set[str]:
    """The modules loaded after running ``headwater ARGS`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(call=call), json.dumps(args)],
                          capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1]))


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """Which of ``packages`` (or their submodules) are in ``modules``."""
    return sorted(p for p in packages if any(m == p or m.startswith(p + ".") for m in modules))


@pytest.mark.parametrize("args", [["--help"], ["version"], ["--version"], []])
def test_help_and_version_import_nothing_heavy(args: list[str]) -> None:
    modules = imported(args)
    assert "ops.cli.app" in modules  # the probe ran the command
    assert loaded(modules, NOT_FOR_HELP) == []


def test_status_imports_the_client_but_no_server_or_kafka_library(gateway: Gateway) -> None:
    """``headwater status ID`` against a stand-in gateway (a real HTTP server)."""
    gateway.otherwise = (200, STATUS_DOC)
    modules = imported(["status", "wf-1", "--gateway", gateway.url])
    assert ("GET", "/v1/workflows/wf-1") in [(m, p) for m, p, _ in gateway.requests]
    assert {"ops.cli.workflows", "headwater.client", "httpx", "rich.table"} <= modules
    assert loaded(modules, (*HEAVY, "trio", "ops.cli.follow")) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: the audit commands do import Kafka's client."""
    modules = imported(["replay", "--help"])
    assert loaded(modules, ("aiokafka",)) == ["aiokafka"]


def test_every_lazy_command_loads_under_its_name_with_its_listed_help() -> None:
    for name, lazy in LAZY.items():
        if lazy.optional:  # another part's module (its help is its own): if there, it loads
            assert not lazy.available() or lazy.load(name).name == name
            continue
        command = lazy.load(name)
        assert command.name == name
        target = getattr(__import__(lazy.module, fromlist=["_"]), lazy.attr.split("|")[0])
        doc = (target.info.help if isinstance(target, typer.Typer)
               else inspect.getdoc(target))
        assert lazy.help == " ".join(str(doc).split("\n\n")[0].split()), name


def test_version_is_the_installed_package_version() -> None:
    runner = CliRunner()
    for args in (["version"], ["--version"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0
        assert result.output == f"headwater {version('headwater')}\n"
    done = subprocess.run([sys.executable, "-c", "from ops.cli.app import main; main()",
                           "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"headwater {version('headwater')}\n")


def test_help_lists_every_command_by_panel() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in ("up", "restart", "down", "ps", "worker", "logs", "submit", "status", "list",
                 "cancel", "pause", "resume", "signal", "replay", "stuck", "projection",
                 "version"):
        assert f" {name} " in result.output, name
    assert "Local stack" in result.output and "Workflows" in result.output
