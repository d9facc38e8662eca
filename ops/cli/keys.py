"""``headwater keys create``, ``list`` and ``revoke``, and ``headwater whoami``: API keys
and the token in use.

``keys create`` makes an API key (``services.common.auth.new_key``) for a tenant and a
role: it prints the token, once (only its SHA-256 is kept anywhere), and the keys
file's line that admits it; with ``--file`` it appends that line to the gateway's keys
file (``HEADWATER_AUTH_KEYS_FILE``, read again within a second of a change). A keys
file it creates is mode 0600; an existing one is checked first (it must parse as a keys
file; one anybody may write is refused, since whoever writes it makes keys; one others
may read gets a warning). ``keys list`` shows a keys file's keys (id, tenant, role: a
file holds no token). ``keys revoke`` writes the file again without a key's line
(another file renamed over it, as docs/auth.md asks), refusing the last key: a file
with no key is taken for one caught mid-write, and the keys read before stay. Each
write holds an exclusive ``flock`` on the file, so a create and a revoke at once lose
neither. ``whoami`` asks the gateway whose the token is (``GET /v1/whoami``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console, errors_console, fail, print_table

keys_app = typer.Typer(help="API keys: bearer tokens of a tenant and a role.",
                       no_args_is_help=True, add_completion=False)
FILE_MODE = 0o600
"""The mode of a keys file ``keys create --file`` creates (owner read and write)."""


KeysFileOpt = Annotated[Path | None, typer.Option(
    "--file", envvar="HEADWATER_AUTH_KEYS_FILE",
    help="the keys file (default: HEADWATER_AUTH_KEYS_FILE)")]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[IO[str]]:
    """The keys file ``path`` open for reading and appending (created mode ``FILE_MODE``)
    under an exclusive ``flock``: the file the path names once locked (a revoke may have
    renamed another over it meanwhile). Checks it as ``append_line`` says.

    Raises:
        typer.Exit: it cannot be opened, or anybody may write it (exit 2, naming it).
    """
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        except OSError as e:
            fail(f"cannot open {path}: {e.strerror}")
        f = os.fdopen(fd, "r+", encoding="utf-8")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        f.close()
    with f:
        mode = os.fstat(fd).st_mode
        if mode & stat.S_IWOTH:
            fail(f"{path} is writable by anybody (mode {stat.filemode(mode)}): whoever "
                 f"writes it makes keys; `chmod 600 {path}` first")
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            errors_console.print(f"[yellow]warning:[/] {escape(str(path))} is readable by "
                                 f"others (mode {stat.filemode(mode)}); `chmod 600` it")
        yield f


def _parsed(path: Path, text: str) -> dict[str, Any]:
    """The keys of the keys file ``path``'s ``text`` by id. Raises ``typer.Exit`` (2) if
    it is no keys file."""
    from services.common.auth.tokens import parse_keys  # here: it imports PyJWT

    try:
        return parse_keys(text, str(path))
    except ValueError as e:
        fail(str(e))


def append_line(path: Path, line: str) -> None:
    """Append ``line`` to the keys file ``path``, creating it with mode ``FILE_MODE``.

    Raises:
        typer.Exit: the file is not a keys file, anybody may write it, or it cannot be
            read or written (exit 2, naming it).
    """
    from services.common.auth.tokens import parse_keys  # here: it imports PyJWT

    with locked(path) as f:
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


def _keys_file(file: Path | None) -> Path:
    """``--file``, or ``HEADWATER_AUTH_KEYS_FILE``; ends the command (2) with neither."""
    if file is None:
        fail("give the keys file: --file PATH, or set HEADWATER_AUTH_KEYS_FILE")
    return file


@keys_app.command("list")
def list_keys(
    file: KeysFileOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
) -> None:
    """List the API keys of a keys file: id, tenant and role (the file holds no token).

    E.g. ``headwater keys list --file .headwater/keys``.
    """
    path = _keys_file(file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    keys = _parsed(path, text)
    if as_json:
        typer.echo(json.dumps([{"key": k, "tenant": e.tenant, "role": e.role}
                               for k, e in keys.items()]))
        return
    from rich.table import Table

    table = Table("key", "tenant", "role")
    for key_id, entry in keys.items():
        table.add_row(key_id, escape(entry.tenant), entry.role)
    print_table(table, whole=("key",))
    errors_console.print(f"{len(keys)} key{'s' * (len(keys) != 1)} in {escape(str(path))}")


@keys_app.command()
def revoke(
    key: Annotated[str, typer.Argument(help="the key's id (12 hex digits, as keys list "
                                            "shows it) or its whole token")],
    file: KeysFileOpt = None,
) -> None:
    """Revoke an API key: write the keys file again without its line.

    The gateway and the coordinator stop taking the key within a second. The last key
    of a file is not revoked: a file with no key is taken for one caught mid-write, and
    the keys read before stay (turn auth off instead, or add another key first).
    E.g. ``headwater keys revoke 0123456789ab --file .headwater/keys``.
    """
    from services.common.auth.tokens import KEY_PREFIX

    key_id = key.removeprefix(KEY_PREFIX).split("_", 1)[0] if key.startswith(KEY_PREFIX) \
        else key
    path = _keys_file(file)
    if not path.exists():
        fail(f"no keys file {path}")
    with locked(path) as f:
        f.seek(0)
        text = f.read()
        keys = _parsed(path, text)
        if key_id not in keys:
            fail(f"no key {key_id} in {path} (`headwater keys list --file {path}` lists "
                 "them)", 1)
        if len(keys) == 1:
            fail(f"{key_id} is the last key of {path}: a file with no key is taken for one "
                 "being written, and the keys read before stay; add another key first, or "
                 "turn auth off (HEADWATER_AUTH=off)")
        kept = [line for line in text.splitlines(keepends=True)
                if line.split("#", 1)[0].split()[:1] != [key_id]]
        _replace(path, "".join(kept), os.fstat(f.fileno()).st_mode)
    entry = keys[key_id]
    console.print(f"revoked key {escape(key_id)} (tenant {escape(entry.tenant)}, role "
                  f"{escape(entry.role)}) from {escape(str(path))}: the gateway and the "
                  "coordinator stop taking it within a second")


def _replace(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to a new file beside ``path`` (its ``mode``) and rename it over
    ``path``: a reader sees the old file or the new one, whole."""
    new = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IMODE(mode))
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(new, path)
    except OSError as e:
        new.unlink(missing_ok=True)
        fail(f"cannot write {path}: {e.strerror}")
