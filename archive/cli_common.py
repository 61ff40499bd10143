"""What every ``sesh-archive`` command module shares: the command group, ``--db`` and the
archive it names, time options, JSON output and interruption. Command modules (``cli.py``,
``cli_*.py``) import from here and never from each other; ``cli.py`` imports them last so
that their commands join the group.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click
import orjson

from . import __version__
from .db import default_db_path, private_dir
from .errors import ArchiveError
from .ingest import ingest_lock, open_archive
from .vendors import names as vendor_names


def _set_db(obj: dict[str, Any], value: str) -> None:
    """A local archive path, or a team database URL (postgresql://...: read commands only)."""
    from .pg import is_postgres_url

    obj["pg_url"] = value if is_postgres_url(value) else None
    obj["db"] = default_db_path() if obj["pg_url"] else Path(value)


def _db_path(ctx: click.Context) -> Path:
    obj = ctx.find_root().obj
    if obj.get("pg_url"):
        raise click.UsageError("--db postgresql://... is for search, threads, show and stats; this command needs the local archive")
    return obj["db"]


def _set_sub_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        _set_db(ctx.find_root().ensure_object(dict), value)


def _team(ctx: click.Context) -> Any:
    """The team database's connection when --db names one (postgresql://...), else None."""
    url = ctx.find_root().obj.get("pg_url")
    if not url:
        return None
    from .pg import SCHEMA_ENV, connect

    try:
        return connect(url, os.environ.get(SCHEMA_ENV) or "sesh", migrate=False)
    except ArchiveError as e:
        raise click.ClickException(str(e))


def _db_after(f: Any) -> Any:
    """``--db`` accepted after the subcommand too (``sesh-archive status --db X``)."""
    # a plain string: click's Path type would fold the // of a postgresql:// URL
    return click.option("--db", type=click.Path(dir_okay=False), expose_value=False,
                        callback=_set_sub_db, is_eager=True,
                        help="Archive database (also accepted before the command).")(f)  # fmt: skip


def _open_read(ctx: click.Context) -> Any:
    """Open an existing archive for a read command: never creates one (only ``ingest`` does).
    A missing path or a file that is not an archive is one line and exit 1."""
    from .stats import check_archive

    db_path = _db_path(ctx)
    try:
        check_archive(db_path)
        return open_archive(db_path)
    except ArchiveError as e:
        raise click.ClickException(str(e))


def _echo_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # the reader went away (`show X | head -1`): not a failure. Later writes and the
            # final flush go to /dev/null, so Python does not complain on the way out either.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sesh-archive")
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="SESH_ARCHIVE_DB",
    help="Archive database (default: $XDG_DATA_HOME/sesh-archive/archive.db); search, threads, show "
    "and stats also read a team database: postgresql://...",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A local, lossless SQLite archive of AI coding agent sessions."""
    ctx.ensure_object(dict)
    ctx.obj.setdefault("pg_url", None)
    ctx.obj["db"] = default_db_path()
    if db:
        _set_db(ctx.obj, db)


def _lock(db_path: Path, wait: float, no_wait: bool) -> Any:
    private_dir(db_path.parent)  # the lock is the first file written there
    return ingest_lock(db_path, None if no_wait else wait)


@contextmanager
def _interruptible(command: str) -> Iterator[None]:
    """Ctrl-C, or SIGTERM (systemd stopping the unit, ``kill``), ends a writing command as
    an interrupted run: the engine records it so, and this says it in one line, exit 130
    (a shell's code for SIGINT), instead of click's bare "Aborted!"."""
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread (a test runner's worker): Ctrl-C only
        previous = None
    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"{command}: interrupted; what was committed is kept (the run is recorded as interrupted) "
                   "and the next run continues", err=True)
        raise click.exceptions.Exit(130) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def _check_port(host: str, port: int) -> None:
    """One clear line (exit 1) when the port is taken, instead of uvicorn's log and traceback."""
    import errno
    import socket

    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise click.ClickException(f"cannot listen on {host}: {e.strerror}")
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # what uvicorn sets too
        try:
            sock.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise click.ClickException(f"port {port} on {host} is in use: stop the other server or pick --port")
            raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror or e}")


def _open_existing(ctx: click.Context) -> Any:
    return _open_read(ctx)


def _set_tz(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value:
        ctx.meta["tz"] = "UTC" if param.name == "utc" else value


def _tz_options(f: Any) -> Any:
    """``--tz ZONE`` / ``--utc``; the local zone ($TZ, else the system's) by default."""
    f = click.option("--utc", is_flag=True, expose_value=False, callback=_set_tz,
                     help="Dates and days in UTC (same as --tz UTC).")(f)  # fmt: skip
    return click.option("--tz", metavar="ZONE", expose_value=False, callback=_set_tz,
                        help="Time zone of dates and day buckets (IANA name; default: local, from $TZ).")(f)  # fmt: skip


def _tz(ctx: click.Context) -> str:
    from .queries import UTC, QueryError, is_utc, local_zone_name

    name = ctx.meta.get("tz") or local_zone_name()
    try:
        return UTC if is_utc(name) else name
    except QueryError as e:
        raise click.BadParameter(str(e), param_hint="--tz")


def _time_option(name: str, end: bool) -> Any:
    from .queries import parse_time

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_time(value, end=end)
            except ValueError as e:
                raise click.BadParameter(str(e))
        return value

    what = ("Up to this day (whole day), or before this date-time." if end else "From this day, or this date-time, on.")
    what += " YYYY-MM-DD, a date-time, today, yesterday, 7d, 2w, 12h; days are local (see --tz)."
    return click.option(f"--{name}", callback=check, metavar="WHEN", help=what)


def _filter_options(role: bool) -> Any:
    def wrap(f: Any) -> Any:
        f = _tz_options(f)
        f = _time_option("until", True)(f)
        f = _time_option("since", False)(f)
        f = click.option("--project", help="Working directory: an absolute path matches it and below; other text, a substring.")(f)
        f = click.option("--thread", "thread_ref", help="Thread id or id prefix.")(f)
        if role:
            f = click.option("--role", type=click.Choice(["user", "assistant", "system", "tool"]))(f)
        return click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor.")(f)

    return wrap
