"""``headwater keys create`` and ``headwater whoami``: API keys and the token in use.

``keys create`` makes an API key (``services.common.auth.new_key``) for a tenant and a
role: it prints the token, once (only its SHA-256 is kept anywhere), and the keys
file's line that admits it; with ``--file`` it appends that line to the gateway's keys
file (``HEADWATER_AUTH_KEYS_FILE``, read again within a second of a change). A keys
file it creates is mode 0600; an existing one is checked first (it must parse as a keys
file; one anybody may write is refused, since whoever writes it makes keys; one others
may read gets a warning). ``whoami`` asks the gateway whose the token is
(``GET /v1/whoami``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console, errors_console, fail

keys_app = typer.Typer(help="API keys: bearer tokens of a tenant and a role.",
                       no_args_is_help=True, add_completion=False)
FILE_MODE = 0o600
"""The mode of a keys file ``keys create --file`` creates (owner read and write)."""


def append_line(path: Path, line: str) -> None:
    """Append ``line`` to the keys file ``path``, creating it with mode ``FILE_MODE``.

    Raises:
        typer.Exit: the file is not a keys file, anybody may write it, or it cannot be
            read or written (exit 2, naming it).
    """
    from services.common.auth.tokens import parse_keys  # here: it imports PyJWT

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
    except OSError as e:
        fail(f"cannot open {path}: {e.strerror}")
    with os.fdopen(fd, "r+", encoding="utf-8") as f:
        mode = os.fstat(f.fileno()).st_mode
        if mode & stat.S_IWOTH:
            fail(f"{path} is writable by anybody (mode {stat.filemode(mode)}): whoever "
                 f"writes it makes keys; `chmod 600 {path}` first")
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            errors_console.print(f"[yellow]warning:[/] {escape(str(path))} is readable by "
                                 f"others (mode {stat.filemode(mode)}); `chmod 600` it")
        f.seek(0)
        text = f.read()
        try:
            parse_keys(text, str(path))
        except ValueError as e:
            fail(f"not appended: {e}")
        f.write(("\n" if text and not text.endswith("\n") else "") + line + "\n")


@keys_app.command()
def create(
    tenant: Annotated[str, typer.Option(help="the tenant the key acts for ('*': every "
                                              "tenant, for operators and the services)")],
    role: Annotated[str, typer.Option(help="read, submit or admin")],
    file: Annotated[Path | None, typer.Option(
        help="append the key's line to this keys file (HEADWATER_AUTH_KEYS_FILE; "
             "created mode 0600)")] = None,
) -> None:
    """Make an API key: print its token (once) and its keys-file line.

    E.g. ``headwater keys create --tenant acme --role submit --file keys.txt``.
    """
    from services.common.auth.tokens import new_key  # here: it imports PyJWT

    try:
        token, line = new_key(tenant, role)
    except ValueError as e:
        fail(str(e))
    if file is not None:
        append_line(file, line)
    typer.echo(f"token: {token}")
    typer.echo(f"line:  {line}")
    where = f"appended to {file}" if file is not None else \
        "add the line to the gateway's HEADWATER_AUTH_KEYS_FILE"
    errors_console.print(f"key {escape(line.split()[0])} for tenant {escape(tenant)} as "
                         f"{escape(role)}: {escape(where)}; the token is shown only now "
                         "(give it to its user as HEADWATER_TOKEN)")


def whoami(
    gateway: str = GATEWAY,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
) -> None:
    """Show the tenant and role of the token sent (HEADWATER_TOKEN or --token)."""
    from ops.cli.workflows import client, gateway_errors

    with gateway_errors(gateway), client(gateway) as hw:
        me = hw.whoami()
    if as_json:
        typer.echo(json.dumps({"auth": me.auth, "tenant": me.tenant, "role": me.role,
                               "subject": me.subject}))
    elif not me.auth:
        console.print(f"auth is off at {escape(gateway)}: every request acts for every "
                      "tenant as admin")
    else:
        every = " (every tenant)" if me.tenant == "*" else ""
        console.print(f"tenant [bold]{escape(me.tenant)}[/]{every}, role "
                      f"[bold]{escape(me.role)}[/], subject {escape(me.subject)}")
