"""The ``files`` command (file history) and the user's marks on threads: ``tag``, ``untag``,
``star``, ``note``, ``marks export|import`` (issue 42), kept apart from cli.py. The library
functions are archive/file_touches.py and archive/marks.py."""

from __future__ import annotations

from typing import Any

import click
import orjson

from .cli_common import _db_after, _echo_json, _filter_options, _open_read, _plural, _tz, cli
from .db import ArchiveError

DIFF_LINES = 12


def _thread(ctx: click.Context, ref: str) -> tuple[Any, str]:
    from .queries import resolve_thread

    db = _open_read(ctx)
    try:
        return db, resolve_thread(db, ref)
    except ArchiveError as e:
        raise click.ClickException(str(e))


@cli.command(name="files")
@click.argument("path")
@_filter_options(role=False)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=0), help="At most this many calls (0: all).")
@click.option("--no-diff", is_flag=True, help="Leave out the changes (faster on a long history).")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found in the changes ([REDACTED rule]).")
@click.option("--json", "as_json", is_flag=True, help="Print the calls as a JSON array.")
@_db_after
@click.pass_context
def files_cmd(ctx: click.Context, path: str, provider: str | None, thread_ref: str | None, project: str | None,
              since: str | None, until: str | None, limit: int, no_diff: bool, redact: bool, as_json: bool) -> None:  # fmt: skip
    """Which sessions read, created, changed or deleted PATH, newest first, with the change.

    PATH is an absolute path (that file), a relative one (every file ending with it:
    src/app.py) or a glob ('*.toml', '/repo/src/**'). Paths come from the sessions' tool
    calls, relative ones joined to the session's folder; shell commands are read
    conservatively (docs/file-history.md)."""
    from .file_touches import file_history
    from .queries import Filters, short_ids
    from .render import local_time

    tz = _tz(ctx)
    db = _open_read(ctx)
    f = Filters(provider=provider, thread=thread_ref, project=project, since=since, until=until, tz=tz)
    try:
        rows = file_history(db, path, f, limit=limit or None, diffs=not no_diff)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if redact:
        from .secrets import redactor_for_threads

        red = redactor_for_threads(db.conn, {r["thread_id"] for r in rows})
        rows = [red.value(r) for r in rows]
    if as_json:
        _echo_json(rows)
    else:
        shorts = short_ids(db, {r["thread_id"] for r in rows})
        for r in rows:
            when = local_time(r["ts"], tz) if r["ts"] else "?"
            click.echo(f"{when}  {r['action']:<8} {r['path']}  {r['provider'] or '?'} {shorts.get(r['thread_id'], r['thread_id'])}"
                       f"  {r['tool_name'] or ''}  {(r['label'] or '')[:60]}")  # fmt: skip
            if r["diff"]:
                lines = r["diff"].splitlines()
                for line in lines[:DIFF_LINES]:
                    click.echo("    " + line)
                if len(lines) > DIFF_LINES:
                    click.echo(f"    ... {len(lines) - DIFF_LINES} more lines (--json for all)")
    sessions = len({r["thread_id"] for r in rows})
    click.echo(_plural(len(rows), "call") + f" in {_plural(sessions, 'session')}"
               + (" (limit reached)" if limit and len(rows) == limit else ""), err=True)  # fmt: skip


@cli.command(name="tag")
@click.argument("thread")
@click.argument("names", nargs=-1, required=True)
@_db_after
@click.pass_context
def tag_cmd(ctx: click.Context, thread: str, names: tuple[str, ...]) -> None:
    """Tag THREAD (id or prefix) with NAMES; `threads --tag NAME` lists the tagged ones."""
    from . import marks

    db, tid = _thread(ctx, thread)
    try:
        tags = marks.tag(db.conn, tid, names)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    click.echo(f"{tid}: {' '.join(tags)}")


@cli.command(name="untag")
@click.argument("thread")
@click.argument("names", nargs=-1, required=True)
@_db_after
@click.pass_context
def untag_cmd(ctx: click.Context, thread: str, names: tuple[str, ...]) -> None:
    """Remove NAMES from THREAD's tags."""
    from . import marks

    db, tid = _thread(ctx, thread)
    tags = marks.untag(db.conn, tid, names)
    click.echo(f"{tid}: {' '.join(tags) or '(no tags)'}")


@cli.command(name="star")
@click.argument("thread")
@click.option("--off", is_flag=True, help="Remove the star.")
@_db_after
@click.pass_context
def star_cmd(ctx: click.Context, thread: str, off: bool) -> None:
    """Star THREAD (`threads --starred` lists the starred ones)."""
    from . import marks

    db, tid = _thread(ctx, thread)
    marks.star(db.conn, tid, not off)
    click.echo(f"{tid}: {'unstarred' if off else 'starred'}")


@cli.command(name="note")
@click.argument("thread")
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the note.")
@_db_after
@click.pass_context
def note_cmd(ctx: click.Context, thread: str, text: str | None, clear: bool) -> None:
    """Set THREAD's note to TEXT (one note per thread; without TEXT, print it)."""
    from . import marks

    db, tid = _thread(ctx, thread)
    if clear or text is not None:
        marks.note(db.conn, tid, None if clear else text)
        click.echo(f"{tid}: note {'cleared' if clear or not (text or '').strip() else 'set'}", err=True)
        return
    row = db.conn.execute("SELECT note FROM thread_notes WHERE thread_id = ?", (tid,)).fetchone()
    if row and row[0]:
        click.echo(row[0])


@cli.group(name="marks")
def marks_group() -> None:
    """Tags, stars and notes as JSON lines: export them, import them (another machine's)."""


@marks_group.command(name="export")
@_db_after
@click.pass_context
def marks_export(ctx: click.Context) -> None:
    """Print every mark as a JSON line: thread_id, tags, starred, note, updated_at."""
    from . import marks

    db = _open_read(ctx)
    n = 0
    for r in marks.export(db.conn):
        click.echo(orjson.dumps(r).decode())
        n += 1
    click.echo(_plural(n, "thread") + " marked", err=True)


@marks_group.command(name="import")
@click.argument("file", type=click.File("rb"), default="-")
@_db_after
@click.pass_context
def marks_import(ctx: click.Context, file: Any) -> None:
    """Merge marks from FILE (JSON lines as `marks export` prints; - for stdin)."""
    from . import marks

    db = _open_read(ctx)
    try:
        records = [orjson.loads(line) for line in file if line.strip()]
        n = marks.import_marks(db.conn, records)
    except orjson.JSONDecodeError as e:
        raise click.ClickException(f"not JSON lines: {e}")
    except ArchiveError as e:
        raise click.ClickException(str(e))
    click.echo(f"imported the marks of {_plural(n, 'thread')}", err=True)
