"""The ``headwater`` command: run the local stack, submit, list, watch and signal
workflows, read the stack's logs, audit a deployment.

Every command but ``version`` lives in a module of its own, imported only when it runs
(``ops.cli.lazy``): ``headwater --help``, ``version`` and ``status ID`` start in well
under 0.3 s, since they do not import the Kafka, PostgreSQL and HTTP-server libraries.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from ops.cli.lazy import LAZY, LazyCommand, LazyGroup

STACK, RUNS, AUDIT = "Local stack", "Workflows", "Audit (reads Kafka and PostgreSQL)"
AUTH = "Tokens"
SHIP = "Deploy"
LAZY.update({
    "up": LazyCommand("ops.cli.stack", "up", "Start Kafka, PostgreSQL, the coordinator, "
                      "the gateway and the remembered workers.", STACK),
    "restart": LazyCommand("ops.cli.stack", "restart", "Restart every process of the local "
                           "stack as recorded, after checking each would start.", STACK),
    "down": LazyCommand("ops.cli.stack", "down", "Stop the Headwater processes (by pid), "
                        "then PostgreSQL and Kafka.", STACK),
    "ps": LazyCommand("ops.cli.stack", "ps", "List the local stack's processes, and the "
                      "remembered workers that do not run.", STACK),
    "worker": LazyCommand("ops.cli.stack", "worker_app", "The workers the local stack "
                          "remembers (see `headwater ps`).", STACK),
    "logs": LazyCommand("ops.cli.logs", "logs", "Show a run's task logs, or the local "
                        "stack's process logs.", RUNS),
    "submit": LazyCommand("ops.cli.workflows", "submit", "Submit a workflow; with --follow, "
                          "show its progress and print its output.", RUNS),
    "run": LazyCommand("ops.cli.run", "run", "Run a stored definition by name and print "
                       "its output.", RUNS),
    "status": LazyCommand("ops.cli.workflows", "status", "Show a workflow's status, nodes "
                          "and output.", RUNS),
    "list": LazyCommand("ops.cli.listing", "list_runs", "List runs, newest first, filtered.", RUNS),
    "cancel": LazyCommand("ops.cli.workflows", "cancel", "Cancel a running workflow.", RUNS),
    "pause": LazyCommand("ops.cli.pausing", "pause", "Pause a running workflow: it "
                         "dispatches nothing new until resumed.", RUNS),
    "resume": LazyCommand("ops.cli.pausing", "resume", "Resume a paused workflow: what it "
                          "held is dispatched, due timers fire.", RUNS),
    "task": LazyCommand("ops.cli.task", "task", "Show one task of a run: its input, output "
                        "and every attempt.", RUNS),
    "rerun": LazyCommand("ops.cli.rerun", "rerun", "Run an ended run again under a new id, "
                         "reusing the outputs of what succeeded.", RUNS),
    "signal": LazyCommand("ops.cli.signals", "signal", "Send a signal to a workflow's wait "
                          "node.", RUNS),
    "definitions": LazyCommand("ops.cli.definitions", "definitions_app",
                               "Stored workflow definitions and their versions.", RUNS,
                               optional=True),
    "schedules": LazyCommand("ops.cli.schedules", "schedules_app", "Schedules: runs of a "
                             "definition at cron times.", RUNS, optional=True),
    "triggers": LazyCommand("ops.cli.triggers", "triggers_app", "Triggers: Kafka topics "
                            "whose records start runs.", RUNS, optional=True),
    "webhooks": LazyCommand("ops.cli.webhooks", "webhooks_app", "Webhooks: signed "
                            "deliveries of run events, and their attempts.", RUNS,
                            optional=True),
    "queues": LazyCommand("ops.cli.queues", "queues", "Show every queue: backlog, in "
                          "flight, live workers and the tasks they serve.", RUNS,
                          optional=True),
    "replay": LazyCommand("ops.cli.replay", "replay", "Replay a workflow's history from the "
                          "events topic and audit the stores.", AUDIT),
    "stuck": LazyCommand("ops.cli.stuck", "stuck", "List running workflows with no attempt "
                         "queued or running, no timer and no wait.", AUDIT),
    "dead-letters": LazyCommand("ops.cli.deadletters", "dead_letters", "List the records "
                                "the coordinators dead-lettered, with their reasons.", AUDIT),
    "projection": LazyCommand("ops.cli.projection", "projection_app",
                              "The PostgreSQL projection (a view of the log).", AUDIT),
    "bulk": LazyCommand("ops.cli.bulk", "bulk_app", "Cancel, signal or rerun every run a "
                        "filter matches, as one operation.", RUNS),
    "keys": LazyCommand("ops.cli.keys", "keys_app", "API keys: bearer tokens of a tenant "
                        "and a role.", AUTH),
    "whoami": LazyCommand("ops.cli.keys", "whoami", "Show the tenant and role of the token "
                          "sent (HEADWATER_TOKEN or --token).", AUTH),
    "deploy": LazyCommand("ops.cli.deploy", "deploy", "Build what a cluster needs from "
                          "MODULE: an image build context, kustomize overlays with a "
                          "Deployment per queue, and its definitions as new versions.", SHIP),
    "rollback": LazyCommand("ops.cli.deploy", "rollback", "Make an earlier version of a "
                            "definition current: new runs use it, runs already started "
                            "keep theirs.", SHIP),
    "serve": LazyCommand("ops.cli.serve", "serve", "Run the gateway, a coordinator, the "
                         "projector and the workers of the named queues in one process, "
                         "until SIGTERM or Ctrl-C.", STACK),
})

app = typer.Typer(cls=LazyGroup, help="Headwater: event-sourced workflows on Kafka.",
                  no_args_is_help=True, add_completion=False)


def package_version() -> str:
    """The installed ``headwater`` distribution's version (``importlib.metadata``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("headwater")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"headwater {package_version()}")
        raise typer.Exit()


@app.callback()
def root(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="print the version and exit")] = False,
    token: Annotated[str | None, typer.Option(
        "--token", show_default=False, metavar="TOKEN",
        help="the bearer token the command sends the gateway, as HEADWATER_TOKEN (which "
             "it sets for the command and the processes it starts); needed when the "
             "gateway's auth is on")] = None,
) -> None:
    """Headwater: event-sourced workflows on Kafka."""
    if token is not None:
        # One setting for every client of the command: the Python client's default,
        # ``queues``, and the services ``up`` starts.
        os.environ["HEADWATER_TOKEN"] = token


@app.command(rich_help_panel=STACK)
def version() -> None:
    """Print the installed package's version."""
    typer.echo(f"headwater {package_version()}")


_MOVED = {"signal_fields": "ops.cli.signals", "styled": "ops.cli.common",
          "console": "ops.cli.common"}


def __getattr__(name: str) -> Any:
    """Names this module had before its commands moved out (imported when asked)."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of the ``headwater`` script. ``headwater version`` and ``headwater
    --version`` answer before Typer starts: running a Typer command builds its
    parameters with pydantic, which alone takes about 0.1 s to import."""
    if sys.argv[1:] in (["version"], ["--version"]):
        print(f"headwater {package_version()}")
        sys.exit(0)
    # httpcore imports trio whenever it is installed (selenium, a test dependency, brings
    # it), about 0.1 s, though a blocking client never uses it: in this process, which
    # runs no trio code, it is not installed (a None entry makes its import fail).
    if "trio" not in sys.modules:
        sys.modules["trio"] = None  # type: ignore[assignment]
    sys.exit(app())
