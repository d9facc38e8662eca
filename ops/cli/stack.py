"""``headwater up``, ``restart``, ``down``, ``ps`` and ``worker stop``: the local stack
(``ops.localstack``) and the workers it remembers (``ops.stackstate``).

``up`` starts Kafka and PostgreSQL (unless ``--no-infra``), the coordinator, the gateway
and every remembered worker; ``--queue``/``--tasks``/``--workers``/``--env`` first
record (or replace) that queue's workers, once their modules import. ``restart`` first
checks, in fresh interpreters, that every process it would restart gets past its
imports: if one would not, it stops nothing and names it with its error. ``down`` stops
the processes and keeps the memory; ``worker stop QUEUE`` stops a queue's workers and
forgets them.
"""

from __future__ import annotations

import os
import textwrap
import time
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ops import localstack, stackstate
from ops.cli.common import GATEWAY, console, fail, print_table
from ops.localstack import Service
from ops.preflight import preflight
from ops.stackstate import WorkerGroup
from services.common.settings import ON

Launch = tuple[Service, dict[str, str]]
INFRA = typer.Option("--infra/--no-infra",
                     help="start (stop) Kafka and PostgreSQL too; --no-infra when they "
                          "are not this stack's own")
START_GRACE_S = 1.0
"""How long after the gateway is ready the processes must still run, seconds: a worker
that cannot import its tasks exits within it."""


def _indent(text: str) -> str:
    return textwrap.indent(escape(text) or "(no output)", "    ")


def _remembered(adopt: bool = True) -> list[WorkerGroup]:
    try:
        return stackstate.adopt() if adopt else stackstate.remembered()
    except stackstate.StackStateError as e:
        fail(str(e))


def _pythonpath() -> str:
    """The current directory, then ``$PYTHONPATH``: where task modules import from."""
    return os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))


def _core_env() -> dict[str, str]:
    """The coordinator's and gateway's extra environment: ``PYTHONPATH`` and a faust
    data directory under ``$HEADWATER_HOME`` (unless ``HEADWATER_DATA_DIR`` is set)."""
    env = {"PYTHONPATH": _pythonpath()}
    if "HEADWATER_DATA_DIR" not in os.environ:
        env["HEADWATER_DATA_DIR"] = str(localstack.home() / "coordinator")
    return env


def _is_auth(name: str) -> bool:
    return name == "HEADWATER_TOKEN" or name.startswith("HEADWATER_AUTH")


def auth_env() -> dict[str, str]:
    """The auth settings the stack's processes start with (``HEADWATER_AUTH*`` and
    ``HEADWATER_TOKEN``): those the coordinator was last started with, unless this
    shell sets ``HEADWATER_AUTH`` to another value; else this shell's. So ``restart``
    and ``up`` keep a stack's auth as started, whatever the shell holds meanwhile (a
    tenant's ``HEADWATER_TOKEN`` for the CLI's own requests, say), and turning auth on
    or off takes ``HEADWATER_AUTH`` set in the shell."""
    shell = {k: v for k, v in os.environ.items() if _is_auth(k)}
    launch = localstack.launched("coordinator")
    recorded = {k: v for k, v in launch[1].items() if _is_auth(k)} if launch else {}
    if not recorded or shell.get("HEADWATER_AUTH", recorded.get("HEADWATER_AUTH")) != (
            recorded.get("HEADWATER_AUTH")):
        return shell
    return recorded


def _with_auth(plan: list[Launch]) -> list[Launch]:
    """``plan`` with ``auth_env`` in every process's environment, said once."""
    auth = auth_env()
    if (auth.get("HEADWATER_AUTH") or "off").lower() in ON:
        console.print("auth is on (HEADWATER_AUTH): the services take tokens from "
                      f"{auth.get('HEADWATER_AUTH_KEYS_FILE') or 'the JWT key'}")
    return [(s, {**env, **auth}) for s, env in plan]


def env_pairs(pairs: list[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` options as a mapping.

    Raises:
        typer.BadParameter: a pair without ``=`` or without a name.
    """
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--env {pair!r}: expected NAME=VALUE")
        env[name] = value
    return env


def _core(recorded: bool) -> list[Launch]:
    """The coordinator and the gateway: as last started when ``recorded`` and known."""
    launches = []
    for service in localstack.default_services(workers=0):
        launch = localstack.launched(service.name) if recorded else None
        launches.append(launch or (service, _core_env()))
    return launches


def _settle(gateway: str, pids: dict[str, int]) -> list[str]:
    """Wait for the gateway started (``pids["gateway"]``: ``/health`` must answer with
    its pid), then ``START_GRACE_S``; print each process that exited (its log's tail)
    and return their names.

    Raises:
        typer.Exit: the gateway was not ready in time, a process exited before, or
            another process answers on the gateway's port (the gateway started is
            stopped).
    """
    console.print("waiting for the gateway to be ready ...")
    try:
        localstack.wait_ready(f"{gateway}/ready", pids=pids,
                              owner="gateway" if "gateway" in pids else None)
        time.sleep(START_GRACE_S)
    except (TimeoutError, RuntimeError) as e:
        fail(f"{e}\nLogs: {localstack.home() / 'logs'}. If the gateway listens elsewhere, "
             "set HEADWATER_GATEWAY_PORT or HEADWATER_GATEWAY_URL.")
    dead = [name for name, pid in pids.items() if not localstack.alive(pid)]
    for name in dead:
        Service(name, ()).pid_file.unlink(missing_ok=True)
        console.print(f"[red]{escape(name)} exited[/]:\n{_indent(localstack.log_tail(name))}")
    return dead


def _record(group: WorkerGroup) -> None:
    """Remember ``group`` once its modules import; stop the workers it no longer has.

    Raises:
        typer.Exit: its modules do not import (nothing recorded or started).
    """
    service = group.services()[0]
    failures = preflight([(service, dict(group.env))])
    if failures:
        fail(f"the workers of queue {group.queue} would not start ({service.name} "
             f"imports {', '.join(group.tasks)}):\n{failures[service.name]}", 1)
    before = stackstate.remember(group)
    if before is not None and before.count > group.count:
        for name in localstack.stop_all(before.services()[group.count:]):
            console.print(f"stopped {name} (queue {group.queue} has {group.count} now)")


def up(
    workers: Annotated[int | None, typer.Option(
        min=1, help="worker processes for the queue (default 1)")] = None,
    queue: Annotated[str | None, typer.Option(help="queue the workers serve (default cpu)")]
    = None,
    tasks: Annotated[list[str] | None, typer.Option(help="task modules to import")] = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", help="NAME=VALUE in these workers' environment (repeatable)")] = None,
    infra: Annotated[bool, INFRA] = True,
    gateway: str = GATEWAY,
) -> None:
    """Start Kafka, PostgreSQL, the coordinator, the gateway and the remembered workers.

    Idempotent. With --queue, --tasks, --workers or --env, that queue's workers are
    recorded first (task modules import from the current directory, put on their
    ``PYTHONPATH``), replacing what the stack remembered of that queue. A new stack
    remembers the example's ``cpu`` worker too (``headwater worker stop cpu`` forgets
    it).
    """
    asked = workers is not None or queue is not None or bool(tasks) or bool(env)
    fresh = not _remembered() and not stackstate.state_file().exists()
    if fresh and not (asked and (queue or "cpu") == "cpu"):
        _record(WorkerGroup("cpu", (localstack.EXAMPLE_TASKS,), 1, os.getcwd(),
                            {"PYTHONPATH": _pythonpath()}))
    if asked:
        _record(WorkerGroup(queue or "cpu", tuple(tasks or [localstack.EXAMPLE_TASKS]),
                            workers or 1, os.getcwd(),
                            {"PYTHONPATH": _pythonpath(), **env_pairs(env or [])}))
    groups = _remembered()
    if infra:
        localstack.infra("up")
    plan = _with_auth(_core(recorded=False) + [(s, dict(g.env)) for g in groups
                                               for s in g.services()])
    remembered = plan[2:]  # after the coordinator and the gateway
    pids: dict[str, int] = {}
    for service, extra in plan:
        was = localstack.read_pid(service.pid_file)
        if (was is not None and (service, extra) in remembered
                and localstack.launched(service.name) != (service, extra)):
            console.print(f"[yellow]{escape(service.name)} runs as started before: "
                          "`headwater restart` starts it as now recorded[/]")
        pids[service.name] = localstack.start(service, extra)
    dead = _settle(gateway, pids)
    ps()
    if dead:
        raise typer.Exit(1)


def _restart_plan(groups: list[WorkerGroup]) -> tuple[list[Launch], list[str]]:
    """What ``restart`` starts: the coordinator and the gateway, the remembered workers,
    and every other process with a pid file (running, or crashed since) and a launch
    record. Also the names of the running processes it leaves alone (no record)."""
    plan = _core(recorded=True) + [(s, dict(g.env)) for g in groups for s in g.services()]
    names = {s.name for s, _ in plan}
    unknown = []
    for name in [n for n, _ in localstack.running_services()] + localstack.stopped_services():
        launch = localstack.launched(name)
        if name in names:
            continue
        if launch is None:
            unknown.append(name)
        else:
            plan.append(launch)
            names.add(name)
    return plan, [n for n in unknown if localstack.read_pid(Service(n, ()).pid_file)]


def restart(gateway: str = GATEWAY) -> None:
    """Restart every process of the local stack as recorded, after checking each would start.

    The coordinator, the gateway, every remembered worker (its queue, task modules,
    directory and environment) and any other process started before; e.g. to load
    changed task code. Before stopping anything, each one's modules are imported in a
    fresh interpreter: if one fails, nothing is stopped and it is named with its error.
    Kafka, PostgreSQL and the data stay.
    """
    plan, unknown = _restart_plan(_remembered())
    plan = _with_auth(plan)
    for name in unknown:
        console.print(f"[yellow]{escape(name)} left running: how it was started is not "
                      "recorded[/]")
    console.print(f"checking that {len(plan)} processes would start ...")
    failures = preflight(plan)
    if failures:
        for name, text in failures.items():
            console.print(f"[red]{escape(name)} would not start[/]:\n{_indent(text)}")
        fail("nothing was stopped. Fix the modules, or forget a queue's workers with "
             "`headwater worker stop QUEUE`, then restart again.", 1)
    for name in localstack.stop_all([s for s, _ in plan]):
        console.print(f"stopped {escape(name)}")
    pids = {service.name: localstack.start(service, extra) for service, extra in plan}
    dead = _settle(gateway, pids)
    ps()
    if dead:
        raise typer.Exit(1)


def down(infra: Annotated[bool, INFRA] = True) -> None:
    """Stop the Headwater processes (by pid), then PostgreSQL and Kafka.

    The stack still remembers its workers: the next ``up`` starts them again.
    """
    _remembered()  # a stack started before it remembered its workers: remember them now
    running = [Service(name, ()) for name, _ in localstack.running_services()]
    for name in localstack.stop_all(running):
        console.print(f"stopped {escape(name)}")
    if infra:
        localstack.infra("down")


def ps() -> None:
    """List the local stack's processes, and the remembered workers that do not run.

    A process that is recorded (the coordinator or the gateway started before, or one
    whose pid file names a process gone) but does not run shows as ``stopped``.
    """
    table = Table("process", "pid", "queue", "tasks", "log")
    running = dict(localstack.running_services())
    serves = {s.name: (g.queue, list(g.tasks)) for g in _remembered(adopt=False)
              for s in g.services()}
    core = [s.name for s in localstack.default_services(workers=0)
            if localstack.launched(s.name) is not None]
    names = list(dict.fromkeys([*running, *core, *localstack.stopped_services(), *serves]))
    for name in names:
        launch = localstack.launched(name)
        worker = serves.get(name) or (localstack.worker_of(launch[0].argv) if launch else None)
        pid = str(running[name]) if name in running else "[yellow]stopped[/]"
        table.add_row(escape(name), pid, escape(worker[0]) if worker else "",
                      escape(" ".join(worker[1])) if worker else "",
                      escape(str(Service(name, ()).log_file)))
    print_table(table)


worker_app = typer.Typer(help="The workers the local stack remembers (see `headwater ps`).",
                         no_args_is_help=True, add_completion=False)


@worker_app.command("stop")
def worker_stop(queue: Annotated[str, typer.Argument(help="the queue")]) -> None:
    """Stop QUEUE's workers and forget them: ``up`` and ``restart`` no longer start them."""
    try:
        gone = stackstate.forget(queue)
    except stackstate.StackStateError as e:
        fail(str(e))
    names = {s.name for s in gone.services()} if gone else set()
    for name, _pid in localstack.running_services():
        launch = localstack.launched(name)
        worker = localstack.worker_of(launch[0].argv) if launch else None
        if worker and worker[0] == queue:
            names.add(name)
    if gone is None and not names:
        fail(f"no worker of queue {queue!r} is remembered or running", 1)
    stopped = localstack.stop_all([Service(n, ()) for n in sorted(names)])
    console.print(f"stopped {', '.join(stopped) or 'nothing (none ran)'}; "
                  f"queue {escape(queue)} forgotten")
