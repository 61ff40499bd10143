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
from .emit import TARGETS
from .ingest import IngestLocked, IngestOptions, ingest_lock, ingest_paths, rebuild, restore
from .pricing import ENV_VAR as PRICES_ENV_VAR
from .queries import STATS_BY
from .serve import DEFAULT_HOST, DEFAULT_PORT
from .vendors import names as vendor_names


def _db_path(ctx: click.Context) -> Path:
    if ctx.obj.get("pg_url"):
        raise click.UsageError("--db postgresql://... is for search, threads, show and stats; this command needs the local archive")
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
    type=click.Path(dir_okay=False),
    envvar="SESH_ARCHIVE_DB",
    help="Archive database (default: $XDG_DATA_HOME/sesh-archive/archive.db); search, threads, show "
    "and stats also read a team database: postgresql://...",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A local, lossless SQLite archive of AI coding agent sessions."""
    from .pg import is_postgres_url

    ctx.ensure_object(dict)
    ctx.obj["pg_url"] = db if is_postgres_url(db) else None
    ctx.obj["db"] = Path(db) if db and not ctx.obj["pg_url"] else default_db_path()


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
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Interface to listen on (loopback by default).")
@click.option("-p", "--port", default=DEFAULT_PORT, show_default=True, type=int)
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


@cli.command(name="emit")
@click.argument("thread")
@click.option("--to", "target", required=True,
              type=click.Choice(TARGETS), help="Output format.")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="A folder (vendor layout below it) or, for a single file, a file name.")
@click.option("--install", is_flag=True, help="Write into the vendor's own home so its CLI can resume it.")
@click.option("--rebuild-format", is_flag=True,
              help="Build the target format from the canonical model even when a byte-exact copy exists.")
@click.option("--cwd", help="Project folder for the target session (Claude Code: decides the projects/ slug).")
@click.option("--json-report", is_flag=True, help="Print the emit report as JSON on stdout.")
@click.pass_context
def emit_cmd(ctx: click.Context, thread: str, target: str, output: Path | None, install: bool, rebuild_format: bool,
             cwd: str | None, json_report: bool) -> None:  # fmt: skip
    """Write THREAD (id or unambiguous prefix) as a vendor session, canonical JSONL or Markdown."""
    from .emit import emit_thread, install_base, write_file, write_files

    if install and output:
        raise click.UsageError("--install and -o are exclusive")
    if install and target in ("canonical", "markdown"):
        raise click.UsageError("--install is for vendor formats (claude-code, codex, clm)")
    options = {"cwd": cwd} if cwd else {}
    try:
        outcome = emit_thread(open_db(_db_path(ctx)), thread, target, exact=not rebuild_format, **options)
        if install:
            write_files(outcome, install_base(target, os.environ, Path(os.path.expanduser("~"))))
        elif output is not None:
            if len(outcome.files) == 1 and not output.is_dir() and output.suffix:
                write_file(outcome, output)
            else:
                write_files(outcome, output)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if not install and output is None:
        if json_report:
            raise click.UsageError("--json-report needs -o or --install (stdout carries the session otherwise)")
        if len(outcome.files) != 1:
            raise click.UsageError(f"{len(outcome.files)} files to write: use -o DIR or --install")
        sys.stdout.buffer.write(next(iter(outcome.files.values())))
        sys.stdout.flush()
    _print_emit_report(outcome, json_report)


def _print_emit_report(outcome: Any, as_json: bool) -> None:
    kind = "byte-exact copy of the archived files" if outcome.exact else f"built as {outcome.target}"
    click.echo(f"emit {outcome.thread_id} -> {outcome.target}: {len(outcome.files)} files, {kind}", err=True)
    for path in outcome.written:
        click.echo(f"  wrote {path}", err=True)
    for reason, n in sorted(outcome.counts.items()):
        click.echo(f"  {n:5d}  {reason}", err=True)
    for note in outcome.notes:
        click.echo(f"  note: {note}", err=True)
    if outcome.resume_hint and outcome.written:
        click.echo(f"resume with: {outcome.resume_hint}", err=True)
    if as_json:
        _echo_json(outcome.report())


# ---------------------------------------------------------------- read commands: search, threads, show, stats


def _queries(ctx: click.Context) -> Any:
    """archive.queries, or its twin over the team database (--db postgresql://...)."""
    if ctx.obj.get("pg_url"):
        from .pg import queries as team

        return team
    from . import queries

    return queries


def _open_existing(ctx: click.Context) -> Any:
    if ctx.obj.get("pg_url"):
        from .pg import SCHEMA_ENV, connect

        try:
            return connect(ctx.obj["pg_url"], os.environ.get(SCHEMA_ENV) or "sesh", migrate=False)
        except ArchiveError as e:
            raise click.ClickException(str(e))
    db_path = _db_path(ctx)
    if not db_path.exists():
        raise click.ClickException(f"no archive at {db_path}: run `sesh-archive ingest` first")
    return open_db(db_path)


def _time_option(name: str, end: bool) -> Any:
    from .queries import parse_time

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_time(value, end=end)
            except ValueError as e:
                raise click.BadParameter(str(e))
        return value

    what = "Only on or before this date (a whole day) or before this date-time." if end else "Only from this ISO date or date-time on."
    return click.option(f"--{name}", callback=check, metavar="ISO", help=what)


def _filter_options(role: bool) -> Any:
    def wrap(f: Any) -> Any:
        f = _time_option("until", True)(f)
        f = _time_option("since", False)(f)
        f = click.option("--project", help="Working directory: an absolute path matches it and below; other text, a substring.")(f)
        f = click.option("--thread", "thread_ref", help="Thread id or id prefix.")(f)
        if role:
            f = click.option("--role", type=click.Choice(["user", "assistant", "system", "tool"]))(f)
        return click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor.")(f)

    return wrap


@cli.command(name="search")
@click.argument("query")
@_filter_options(role=True)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0), help="At most this many hits (0: all).")
@click.option("--literal", is_flag=True, help="Search the words as typed (each quoted), not FTS5 syntax.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON array.")
@click.pass_context
def search_cmd(ctx: click.Context, query: str, provider: str | None, role: str | None, thread_ref: str | None,
               project: str | None, since: str | None, until: str | None, limit: int, literal: bool,
               as_json: bool) -> None:  # fmt: skip
    """Full-text search of every message (SQLite FTS5 syntax: words, "phrases", OR, NOT, prefix*).

    A query FTS5 rejects is an error (exit 1); --literal searches the words as typed."""
    from .queries import Filters
    from .render import search_hits

    f = Filters(provider=provider, role=role, thread=thread_ref, project=project, since=since, until=until)
    try:
        hits = _queries(ctx).search(_open_existing(ctx), query, f, limit=limit or None, literal=literal)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json(hits)
    else:
        for line in search_hits(hits):
            click.echo(line)
    click.echo(f"{len(hits)} hits" + (" (limit reached)" if limit and len(hits) == limit else ""), err=True)


@cli.command(name="threads")
@_filter_options(role=False)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=0), help="At most this many threads (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the threads as a JSON array.")
@click.pass_context
def threads_cmd(ctx: click.Context, provider: str | None, thread_ref: str | None, project: str | None,
                since: str | None, until: str | None, limit: int, as_json: bool) -> None:  # fmt: skip
    """List threads, most recent activity first (--since/--until: active in that window)."""
    from .queries import Filters
    from .render import table

    f = Filters(provider=provider, thread=thread_ref, project=project, since=since, until=until)
    try:
        rows = _queries(ctx).threads(_open_existing(ctx), f, limit=limit or None)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json(rows)
    elif rows:
        for line in table(
            ("LAST ACTIVITY", "PROVIDER", "MSGS", "TOKENS", "KIDS", "PROJECT", "ID", "TITLE"),
            [((r["last_ts"] or r["created_at"] or "").replace("T", " ")[:16], r["provider"], r["messages"],
              r["total_tokens"], r["children"], _short_path(r["project"]), r["id"], (r["label"] or "")[:60])
             for r in rows],
        ):  # fmt: skip
            click.echo(line)
    click.echo(f"{len(rows)} threads" + (" (limit reached)" if limit and len(rows) == limit else ""), err=True)


def _short_path(p: str | None, width: int = 28) -> str:
    if not p:
        return ""
    return p if len(p) <= width else "…" + p[-(width - 1):]


@cli.command(name="show")
@click.argument("thread")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="json: the canonical records as JSON Lines, the thread first, then its messages.")
@click.option("--full", is_flag=True, help="Unfold tool calls, results, reasoning and injected context.")
@click.pass_context
def show_cmd(ctx: click.Context, thread: str, fmt: str, full: bool) -> None:
    """Print one thread (THREAD: an id or an unambiguous prefix of one)."""
    from .render import thread_markdown, thread_text

    try:
        view = _queries(ctx).show(_open_existing(ctx), thread)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if fmt == "json":
        for record in [view.thread.to_dict(), *(m.to_dict() for m in view.messages)]:
            click.echo(orjson.dumps(record).decode())
    else:
        for line in (thread_markdown if fmt == "markdown" else thread_text)(view, full):
            click.echo(line, color=None if fmt == "text" else False)
    click.echo(f"{len(view.messages)} messages, {len(view.children)} child threads", err=True)


@cli.command(name="stats")
@click.option("--by", type=click.Choice(STATS_BY),
              default="day", show_default=True, help="Grouping; `tool`: tool calls and errors instead of tokens.")
@_time_option("since", False)
@_time_option("until", True)
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor.")
@click.option("--prices", "prices_path", type=click.Path(dir_okay=False, path_type=Path), envvar=PRICES_ENV_VAR,
              help=f"Price table laid over the bundled one (same JSON shape; env {PRICES_ENV_VAR}).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the rows as CSV.")
@click.pass_context
def stats_cmd(ctx: click.Context, by: str, since: str | None, until: str | None, provider: str | None,
              prices_path: Path | None, as_json: bool, as_csv: bool) -> None:  # fmt: skip
    """Tokens (input, output, cache read, cache write) and estimated cost, or tool call errors."""
    import csv

    from .pricing import load_prices
    from .render import table

    if as_json and as_csv:
        raise click.UsageError("--json and --csv are exclusive")
    try:
        prices = load_prices(prices_path, env={})
        report = _queries(ctx).stats(_open_existing(ctx), by, prices, since=since, until=until, provider=provider)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    rows = report["rows"]
    if as_json:
        _echo_json(report)
        return
    if as_csv:
        if rows:
            w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: ";".join(v) if isinstance(v, list) else v for k, v in r.items()})
        return
    total = report["total"]
    if by == "tool":
        cols = ("calls", "errors", "error_rate", "no_result")
        body = [[r["key"], *(r[c] for c in cols)] for r in rows] + [["TOTAL", *(total[c] for c in cols)]]
        for line in table(("TOOL", "CALLS", "ERRORS", "ERROR RATE", "NO RESULT"), body):
            click.echo(line)
        return
    cols = ("responses", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
    body = [[r["key"] if r["key"] is not None else "(unknown)", *(r[c] for c in cols), _usd(r)]
            for r in rows] + [["TOTAL", *(total[c] for c in cols), _usd(total)]]  # fmt: skip
    for line in table((by.upper(), "RESPONSES", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST USD"), body):
        click.echo(line)
    p = report["prices"]
    click.echo(f"prices: as of {p['as_of']}" + (f", overridden by {p['overrides']}" if p["overrides"] else "")
               + "; input = input not read from or written to the cache", err=True)  # fmt: skip
    if report["unpriced_models"]:
        click.echo("  * partial: the row includes models without a price", err=True)
    for u in report["unpriced_models"]:
        click.echo(f"  no price for {u['provider']} model {u['model'] or '(none)'} ({u['responses']} responses): cost left out", err=True)


def _usd(row: dict[str, Any]) -> str:
    v = row["cost_usd"]
    return "" if v is None else f"${v:,.4f}" + ("*" if row["unpriced_models"] else "")


# ---------------------------------------------------------------- team archive


@cli.command(name="push")
@click.argument("url", required=False, envvar="SESH_ARCHIVE_PUSH_URL")
@click.option("--schema", default="sesh", show_default=True, envvar="SESH_ARCHIVE_SCHEMA", help="PostgreSQL schema to push into.")
@click.option("--machine", help="Name this archive's machine on the server (kept for later pushes; default: the host name).")
@click.option("--with-sources", is_flag=True, help="Also push the source layer: every stored line, byte for byte.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.pass_context
def push_cmd(ctx: click.Context, url: str | None, schema: str, machine: str | None, with_sources: bool,
             as_json: bool) -> None:  # fmt: skip
    """Push what is new in the archive to a team PostgreSQL database (URL or $SESH_ARCHIVE_PUSH_URL).

    Incremental and idempotent per machine; secrets in the archive are pushed as they are."""
    from .push import PushOptions, push

    if not url:
        raise click.UsageError("give the PostgreSQL URL (postgresql://user@host/db) or set SESH_ARCHIVE_PUSH_URL")
    db_path = _db_path(ctx)
    if not db_path.exists():
        raise click.ClickException(f"no archive at {db_path}: run `sesh-archive ingest` first")
    try:
        summary = push(open_db(db_path), url, PushOptions(schema=schema, machine_name=machine, with_sources=with_sources))
    except ArchiveError as e:
        raise click.ClickException(str(e))
    click.echo(summary.line(), err=True)
    if as_json:
        _echo_json(summary.to_dict())
