"""``headwater projection rebuild``: rebuild the PostgreSQL projection from the log.

The work is done by ``services.projector.rebuild`` (it uses the projector's own code);
``headwater`` never imports ``services`` (docs/architecture.md §2), so this command runs
it as a process with the same Python, passes the endpoints through ``HEADWATER_*``
variables, relays its output and exits with its status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Annotated

import typer

from ops.cli.endpoints import BOOTSTRAP, PG_DSN, PREFIX, endpoints

projection_app = typer.Typer(help="The PostgreSQL projection (a view of the log).",
                             no_args_is_help=True, add_completion=False)
REBUILD_MODULE = "services.projector.rebuild"


@projection_app.command()
def rebuild(
    check: Annotated[bool, typer.Option(
        "--check", help="rebuild a copy in a schema rebuild_<n> and compare it with the "
        "live tables; change nothing")] = False,
    keep: Annotated[bool, typer.Option(
        "--keep", help="keep the copy's schema after --check")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="rebuild even when the log cannot give everything back")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    bootstrap: str | None = BOOTSTRAP,
    prefix: str = PREFIX,
    pg_dsn: str | None = PG_DSN,
) -> None:
    """Rebuild the projection's tables (workflows, nodes, tasks, events) from the events
    topic, while the live projector runs.

    A copy is built in a fresh schema, then, under a lock on the live tables, brought up
    to date and swapped in (or, with --check, compared row by row and dropped). Refuses
    when the log cannot give the projection back (no events topic, records deleted by
    retention, workflows missing from the copy) unless --force. Exit status: 0 done,
    1 differences (--check), 2 refused, 3 Kafka or PostgreSQL unreachable. Details:
    ``services/projector/rebuild.py``.
    """
    ep = endpoints(bootstrap, prefix, pg_dsn)
    env = {**os.environ, "HEADWATER_KAFKA_BOOTSTRAP": ep.bootstrap,
           "HEADWATER_TOPIC_PREFIX": ep.prefix, "HEADWATER_PG_DSN": ep.pg_dsn}
    flags = [flag for flag, on in (("--check", check), ("--keep", keep), ("--force", force),
                                   ("--json", as_json)) if on]
    with subprocess.Popen([sys.executable, "-m", REBUILD_MODULE, *flags], env=env,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # through sys.stdout, so that callers can capture it
            typer.echo(line, nl=False)
    raise typer.Exit(proc.returncode)
