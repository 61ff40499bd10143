"""The ``sesh-archive`` command line: thin click commands over the library.

Invariants: data goes to stdout, progress and summaries to stderr; ``--json`` prints a
stable JSON document on stdout; exit codes are 0 ok, 1 failure (domain errors become
``click.ClickException`` here and only here), 2 usage. No SQL lives in this module.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from . import __version__
from .db import ArchiveError, default_db_path, open_db
from .ingest import IngestLocked, IngestOptions, ingest_lock, ingest_paths, rebuild, restore
from .vendors import names as vendor_names


def _db_path(ctx: click.Context) -> Path:
    return ctx.obj["db"]


def _echo_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


class _Progress:
    """A one-line progress indicator on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.files = 0

    def __call__(self, path: str, bytes_read: int) -> None:
        if not self.enabled:
            return
        self.files += 1
        name = path if len(path) < 50 else "…" + path[-49:]
        click.echo(f"\r\x1b[K{self.files} files, {bytes_read / 1e6:,.1f} MB  {name}", err=True, nl=False)

    def done(self) -> None:
        if self.enabled and self.files:
            click.echo("\r\x1b[K", err=True, nl=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sesh-archive")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SESH_ARCHIVE_DB",
    help="Archive database (default: $XDG_DATA_HOME/sesh-archive/archive.db).",
)
@click.pass_context
def cli(ctx: click.Context, db: Path | None) -> None:
    """A local, lossless SQLite archive of AI coding agent sessions."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db or default_db_path()


def _lock(db_path: Path, wait: float, no_wait: bool) -> Any:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    return ingest_lock(db_path, None if no_wait else wait)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--provider", "providers", multiple=True, type=click.Choice(vendor_names()), help="Only these vendors.")
@click.option("--idle", "idle_seconds", type=float, default=3600, show_default=True,
              help="Take a file's unterminated last line once the file is this many seconds old and it parses.")
@click.option("--wait", type=float, default=600, show_default=True, help="Seconds to wait for another ingest to finish.")
@click.option("--no-wait", is_flag=True, help="Exit at once (code 1) if another ingest is running.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the summary line.")
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[Path, ...], providers: tuple[str, ...], idle_seconds: float,
           wait: float, no_wait: bool, as_json: bool, quiet: bool) -> None:  # fmt: skip
    """Import new session data from every vendor's default location, or from PATHS."""
    db_path = _db_path(ctx)
    progress = _Progress(sys.stderr.isatty() and not quiet)
    try:
        with _lock(db_path, wait, no_wait):
            db = open_db(db_path)
            summary = ingest_paths(
                db, list(paths) or None,
                IngestOptions(providers=providers, idle_seconds=idle_seconds, progress=progress),
            )  # fmt: skip
    except (IngestLocked, ArchiveError) as e:
        raise click.ClickException(str(e))
    progress.done()
    _finish(summary, as_json)


def _finish(summary: Any, as_json: bool) -> None:
    click.echo(summary.line(), err=True)
    for p in summary.problems:
        click.echo(f"  problem: {p['path']}: {p['problem']}" + (f" ({p['detail']})" if p.get("detail") else ""), err=True)
    for w in summary.warnings:
        click.echo(f"  warning: {w}", err=True)
    if as_json:
        _echo_json(summary.to_dict())
    if summary.failed:
        sys.exit(1)


@cli.command(name="rebuild")
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor's sources.")
@click.option("--source", help="Only this source (uid, uid prefix, id or last path).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.pass_context
def rebuild_cmd(ctx: click.Context, provider: str | None, source: str | None, as_json: bool) -> None:
    """Re-derive the canonical tables from the stored lines alone."""
    db_path = _db_path(ctx)
    try:
        with _lock(db_path, 600, False):
            summary = rebuild(open_db(db_path), provider=provider, source=source)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    _finish(summary, as_json)


@cli.command(name="restore")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor's sources.")
@click.option("--source", help="Only this source (uid, uid prefix, id or last path).")
@click.option("--generation", type=int, help="This generation instead of the current one.")
@click.option("--all-generations", is_flag=True, help="Every generation (older ones get a .genN suffix).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def restore_cmd(ctx: click.Context, out_dir: Path, provider: str | None, source: str | None,
                generation: int | None, all_generations: bool, as_json: bool) -> None:  # fmt: skip
    """Write archived source files back, byte for byte, under OUT_DIR."""
    try:
        files = restore(open_db(_db_path(ctx)), out_dir, source=source, provider=provider,
                        generation=generation, all_generations=all_generations)  # fmt: skip
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json([{"source": f.source_uid, "generation": f.generation, "path": str(f.path),
                     "sha256": f.sha256, "size": f.size} for f in files])  # fmt: skip
    else:
        for f in files:
            click.echo(f"{f.sha256}  {f.path}")
    click.echo(f"restored {len(files)} files", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Database path and size, sources, threads and messages per provider, the last run."""
    from .stats import archive_status

    db_path = _db_path(ctx)
    info = archive_status(open_db(db_path), db_path)
    if as_json:
        _echo_json(info)
        return
    click.echo(f"database: {info['database']} ({info['size_bytes']:,} bytes)")
    for p in info["providers"]:
        click.echo(
            f"  {p['provider']}: {p['sources']} sources, {p['threads']} threads, {p['messages']} messages"
            + (f", {p['missing_files']} files gone from disk" if p["missing_files"] else "")
        )
    run = info["last_run"]
    if run:
        click.echo(f"last run: {run['command']} at {run['started_at']} ({run['status']}): "
                   f"{run['files_changed']} files changed, {run['messages_added']} messages added")  # fmt: skip
    else:
        click.echo("last run: never")
    gone = info["missing_sources"]
    if gone:
        click.echo(f"sources whose file is gone ({len(gone)}; their data stays in the archive):")
        for g in gone[:20]:
            click.echo(f"  {g['provider']}  {g['path']}")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (loopback by default).")
@click.option("-p", "--port", default=8001, show_default=True, type=int)
@click.option("--open", "open_browser", is_flag=True, help="Open a browser on the archive.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, open_browser: bool) -> None:
    """Browse and query the archive with Datasette (read-only)."""
    from .serve import run_server

    db_path = _db_path(ctx)
    if not db_path.exists():
        open_db(db_path)  # an empty archive still serves
    try:
        run_server(db_path, host=host, port=port, open_browser=open_browser)
    except ArchiveError as e:
        raise click.ClickException(str(e))


def main() -> None:  # pragma: no cover
    cli(prog_name="sesh-archive")


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
