"""The ``export`` and ``resume`` commands (issue 41, "take it anywhere"), kept apart from
cli.py; the library is archive/export.py.

Exit codes as every command's: 0 done, 1 a thread id that matches nothing or several, a
session no client can reopen (no resume command and no ``--to``), a file that exists
already (``-o``, an install over a different session), 2 usage.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .cli_common import _db_after, _echo_json, _open_read, cli
from .emit import INSTALLABLE
from .errors import ArchiveError


def _write_new(path: Path, data: bytes) -> None:
    """Write ``path`` atomically, never over an existing file (as ``emit -o`` does)."""
    if path.exists() or path.is_symlink():
        raise ArchiveError(f"refusing to overwrite: {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ArchiveError(f"refusing to overwrite: {path}")
    finally:
        tmp.unlink(missing_ok=True)


@cli.command(name="export")
@click.argument("thread")
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True,
              help="html: one standalone page (styles and images inside, loads nothing); md: Markdown.")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Write to FILE (never over an existing one); '-' or none: stdout.")
@click.option("--redact/--no-redact", default=True, show_default=True,
              help="Mask the secrets the scan found ([REDACTED rule]).")
@_db_after
@click.pass_context
def export_cmd(ctx: click.Context, thread: str, fmt: str, output: str | None, redact: bool) -> None:
    """Write THREAD (id or unambiguous prefix) as one file to read anywhere: its child threads
    inside, folded; tool calls folded; edits as diffs; secrets masked."""
    from .export import export_html, export_markdown

    to_stdout = output in (None, "-")
    if to_stdout and fmt == "html" and sys.stdout.isatty():
        raise click.UsageError("an HTML page on a terminal: give -o FILE (or redirect stdout)")
    db = _open_read(ctx)
    try:
        if fmt == "html":
            data = export_html(db, thread, redact=redact).encode()
        else:
            data = "".join(line + "\n" for line in export_markdown(db, thread, redact=redact)).encode()
        if not to_stdout:
            _write_new(Path(output), data)  # type: ignore[arg-type]
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if to_stdout:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        click.echo(f"wrote {output} ({len(data):,} bytes){'' if redact else ', secrets NOT masked'}", err=True)


@cli.command(name="resume")
@click.argument("thread")
@click.option("--to", "target", type=click.Choice(INSTALLABLE), default=None, help="Hand the session to this client: emit it, install it in the "
              "client's home (as `emit --to CLIENT --install`) and print that client's command.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan (or the install) as JSON on stdout.")
@_db_after
@click.pass_context
def resume_cmd(ctx: click.Context, thread: str, target: str | None, as_json: bool) -> None:
    """Print the command that reopens THREAD (id or unambiguous prefix) in its own client.

    When the client deleted the session's file, the command starts with the `emit --install`
    that writes the archived copy back. The command is printed, never run."""
    from .export import install_for, resume_plan

    db = _open_read(ctx)
    try:
        plan = resume_plan(db, thread)
        if target is None or (target == plan.provider and not plan.missing and plan.command):
            for note in plan.notes:
                click.echo(f"note: {note}", err=True)
            if plan.command is None:
                raise ArchiveError(f"no command reopens {plan.thread_id} ({plan.provider}); "
                                   f"use --to CLIENT ({', '.join(INSTALLABLE)})")  # fmt: skip
            if as_json:
                _echo_json(plan.report())
            else:
                click.echo(plan.full_command())
            return
        done = install_for(db, plan.thread_id, target, os.environ, Path(os.path.expanduser("~")))
    except ArchiveError as e:
        raise click.ClickException(str(e))
    out = done.outcome
    kind = "byte-exact copy of the archived files" if out.exact else f"built as {target}"
    click.echo(f"resume {plan.thread_id} in {target}: {kind}", err=True)
    if done.already:
        click.echo(f"  already installed: {len(out.files)} file(s) in place", err=True)
    for path in done.written:
        click.echo(f"  wrote {path}", err=True)
    for reason, n in sorted(out.counts.items()):
        click.echo(f"  {n:5d}  {reason}", err=True)
    for note in out.notes:
        click.echo(f"  note: {note}", err=True)
    if done.command is None:
        raise click.ClickException(f"{target} has no resume command; the session is installed")
    if as_json:
        _echo_json({**out.report(), "command": done.command, "already_installed": done.already})
    else:
        click.echo(done.command)
