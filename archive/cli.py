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

from . import coverage
from .cli_common import (
    _check_port,
    _db_after,
    _db_path,
    _echo_json,
    _filter_options,
    _interruptible,
    _lock,
    _open_existing,
    _open_read,
    _plural,
    _team,
    _time_option,
    _tz,
    _tz_options,
    cli,
)
from .cli_progress import _prescan, _Progress
from .emit import TARGETS
from .errors import ArchiveError
from .ingest import (
    IngestLocked,
    IngestOptions,
    ingest_paths,
    open_archive,
    rebuild,
    restore,
)
from .pricing import ENV_VAR as PRICES_ENV_VAR
from .queries import STATS_BY
from .records import unpack_restored
from .serve import DEFAULT_HOST, DEFAULT_PORT
from .unread import describe as describe_unread
from .vendors import names as vendor_names


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--provider", "providers", multiple=True, type=click.Choice(vendor_names()), help="Only these vendors.")
@click.option("--root", "roots", multiple=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Also search this folder for project-local logs, now and in every later run (see `roots`).")
@click.option("--idle", "idle_seconds", type=float, default=3600, show_default=True,
              help="Take a file's unterminated last line once the file is this many seconds old and it parses.")
@click.option("--wait", type=float, default=600, show_default=True, help="Seconds to wait for another ingest to finish.")
@click.option("--no-wait", is_flag=True, help="Exit at once (code 1) if another ingest is running.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the summary line.")
@_db_after
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[Path, ...], providers: tuple[str, ...], roots: tuple[Path, ...],
           idle_seconds: float, wait: float, no_wait: bool, as_json: bool, quiet: bool) -> None:  # fmt: skip
    """Import new session data from every vendor's default location, or from PATHS.

    Exit 1 when a source failed or a PATH given does not exist (cron sees it)."""
    from .stats import check_archive

    db_path = _db_path(ctx)
    missing = [p for p in paths if not os.path.lexists(p)]
    progress = _Progress(sys.stderr.isatty() and not quiet)
    try:
        with _interruptible("ingest"), _lock(db_path, wait, no_wait):
            # under the lock: another ingest may be creating the file right now
            if db_path.exists() and (db_path.is_dir() or db_path.stat().st_size):
                check_archive(db_path)  # never migrate someone else's SQLite file into an archive
            db = open_archive(db_path)
            cli_roots.add_roots(db, roots)  # kept: every later plain run searches them too (issue 36)
            if progress.enabled:
                progress.start(*_prescan(list(paths), providers))
            before = coverage.mark(db)
            try:
                summary = ingest_paths(
                    db, list(paths) or None,
                    IngestOptions(providers=providers, idle_seconds=idle_seconds, progress=progress),
                )  # fmt: skip
                progress.complete()
            finally:
                progress.done()
            coverage.add_drift_warnings(summary, db, before)  # format drift, named by version
            cli_side.ingest_warnings(db, summary)  # a vendor's cleanup outrunning the runs (issue 38)
            embedded = cli_semantic.ingest_step(db, quiet)  # embed what the run added (issue 40)
    except (IngestLocked, ArchiveError) as e:
        raise click.ClickException(str(e))
    if not paths and summary.files_seen == 0 and not quiet:
        _searched(providers)
    _finish(summary, as_json, failed=bool(missing), then=embedded)


def _searched(providers: tuple[str, ...]) -> None:
    """Where a run without PATHS looked, per vendor: a first run that finds nothing says so."""
    from .vendors import VENDORS

    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    click.echo("no session files found; searched:", err=True)
    for a in VENDORS:
        if providers and a.name not in providers:
            continue
        roots = a.default_roots(os.environ, home)
        if not roots:
            continue
        where = ", ".join(f"{r}{'' if Path(r).exists() else ' (absent)'}" for r in roots)
        click.echo(f"  {a.name}: {where}", err=True)
        if a.env_vars:
            click.echo(f"    (set {', '.join(a.env_vars)} if its files live elsewhere)", err=True)


def _summary_line(summary: Any) -> str:
    d = summary.to_dict()
    reports = ", ".join(f"{k} {v:,}" for k, v in d["reports"].items()) or "none"
    added = "rebuilt" if d["command"] == "rebuild" else "added"
    return (
        f"{d['command']}: {_plural(d['files_seen'], 'file')} seen, {d['files_changed']:,} changed, "
        f"{_plural(d['bytes_read'], 'byte')}, {_plural(d['lines'], 'line')}, "
        f"{_plural(d['messages_added'], 'message')} {added}; reports: {reports}; "
        f"{_plural(len(d['problems']), 'problem')}, {_plural(len(d['warnings']), 'warning')}; "
        + (f"{_plural(len(d['unread']), 'folder')} of sessions not read; " if d.get("unread") else "")
        + f"{d['elapsed_seconds']:.2f}s"
    )


def _finish(summary: Any, as_json: bool, failed: bool = False, then: str | None = None) -> None:
    click.echo(_summary_line(summary), err=True)
    if then:  # the summary line stays the first (scripts read it)
        click.echo(then, err=True)
    for p in summary.problems:
        click.echo(f"  problem: {p['path']}: {p['problem']}" + (f" ({p['detail']})" if p.get("detail") else ""), err=True)
    for w in summary.warnings:
        click.echo(f"  warning: {w}", err=True)
    for u in summary.unread or []:
        click.echo(f"  not read: {describe_unread(u)}", err=True)
    if as_json:
        _echo_json(summary.to_dict())
    if summary.failed or failed:
        sys.exit(1)


@cli.command(name="rebuild")
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor's sources.")
@click.option("--source", help="Only this source (uid, uid prefix, id or last path).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@_db_after
@click.pass_context
def rebuild_cmd(ctx: click.Context, provider: str | None, source: str | None, as_json: bool) -> None:
    """Re-derive the canonical tables from the stored lines alone."""
    from .stats import check_archive

    db_path = _db_path(ctx)
    try:
        check_archive(db_path)
        with _interruptible("rebuild"), _lock(db_path, 600, False):
            summary = rebuild(open_archive(db_path), provider=provider, source=source)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    _finish(summary, as_json)


def restore_imports(db: Any, out_dir: Path, source_uids: list[str], redact: bool) -> list[tuple[Path, str]]:
    """For sources whose adapter ``restores_by_emit`` (a database's documents): each of their
    threads emitted in the client's import form under ``out_dir``, with its import hint."""
    from .emit import emit_thread, write_files
    from .secrets import redact_outcome
    from .vendors import get as get_adapter

    out = []
    done: set[str] = set()  # a thread several documents hold (a session's messages and its totals) is written once
    for uid in dict.fromkeys(source_uids):
        row = db.execute("SELECT id, provider FROM sources WHERE uid = ?", (uid,)).fetchone()
        if row is None or not get_adapter(row[1]).restores_by_emit:
            continue
        threads = [r[0] for r in db.execute(
            "SELECT DISTINCT thread_id FROM thread_facts WHERE source_id = ? ORDER BY thread_id", (row[0],))]
        for tid in threads:
            if tid in done:
                continue
            done.add(tid)
            outcome = emit_thread(db, tid, row[1], exact=False)
            if redact:
                redact_outcome(db.conn, outcome)
            out += [(p, outcome.resume_hint or "") for p in write_files(outcome, out_dir)]
    return out


@cli.command(name="restore")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor's sources.")
@click.option("--source", help="Only this source (uid, uid prefix, id or last path).")
@click.option("--generation", type=int, help="This generation instead of the current one.")
@click.option("--all-generations", is_flag=True, help="Every generation (older ones get a .genN suffix).")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found ([REDACTED rule]): not byte-exact then.")
@click.option("--json", "as_json", is_flag=True)
@_db_after
@click.pass_context
def restore_cmd(ctx: click.Context, out_dir: Path, provider: str | None, source: str | None,
                generation: int | None, all_generations: bool, redact: bool, as_json: bool) -> None:  # fmt: skip
    """Write archived source files back, byte for byte, under OUT_DIR."""
    from .secrets import forgotten_note, redactor_all

    db = _open_read(ctx)
    try:
        files = restore(db, out_dir, source=source, provider=provider, generation=generation,
                        all_generations=all_generations, redact=redactor_all(db.conn).bytes if redact else None)  # fmt: skip
        # a record kept as several files (a JSON storage session): its files too, byte for byte
        unpacked = unpack_restored(lambda uid: (db.execute("SELECT provider FROM sources WHERE uid = ?", (uid,))
                                                .fetchone() or [None])[0], files, out_dir)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json([{"source": f.source_uid, "generation": f.generation, "path": str(f.path),
                     "sha256": f.sha256, "size": f.size} for f in files]
                   + [{"path": str(p), "sha256": sha, "unpacked": True} for p, sha in unpacked])  # fmt: skip
    else:
        for f in files:
            click.echo(f"{f.sha256}  {f.path}")
        for p, sha in unpacked:
            click.echo(f"{sha}  {p}")
    click.echo(f"restored {_plural(len(files), 'file')}" + (", secrets masked" if redact else "")
               + (f", and {_plural(len(unpacked), 'file')} they hold" if unpacked else ""), err=True)
    try:
        imports = restore_imports(db, out_dir, [f.source_uid for f in files], redact)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    for path, hint in imports:
        click.echo(f"also wrote {path}: the session in the form its client imports"
                   + (f" (where `emit --install` files it, it resumes with: {hint})" if hint else ""), err=True)
    note = forgotten_note(db.conn, files)
    if note:
        click.echo(note, err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@_db_after
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Database path and size, sources, threads and messages per provider, the last run."""
    from .stats import archive_status

    db_path = _db_path(ctx)
    db = _open_read(ctx)
    info = archive_status(db, db_path)
    info["coverage"] = coverage.coverage_rows(db)  # per provider and client version
    cli_side.status_info(db, info)  # lost sessions, retention warnings (issue 38)
    info["project_roots"] = cli_roots.status_info(db)  # where project-local logs are searched (issue 36)
    cli_semantic.status_info(db, info)  # model, vectors, pending (issue 40)
    if as_json:
        _echo_json(info)
        return
    click.echo(f"database: {info['database']} ({_plural(info['size_bytes'], 'byte')})")
    for p in info["providers"]:
        click.echo(
            f"  {p['provider']}: {_plural(p['sources'], 'source')}, {_plural(p['threads'], 'thread')}, "
            f"{_plural(p['messages'], 'message')}"
            + (f", {_plural(p['missing_files'], 'file')} gone from disk" if p["missing_files"] else "")
        )
    run = info["last_run"]
    if run:
        head = f"last run: {run['command']} at {run['started_at']} ({run['status']})"
        if run["files_changed"] is None:  # still running, or killed before it closed its row
            click.echo(f"{head}: no counts recorded" + ("" if run["status"] == "running" else "; the next ingest continues"))
        else:
            click.echo(f"{head}: {_plural(run['files_changed'], 'file')} changed, "
                       f"{_plural(run['messages_added'], 'message')} "
                       f"{'rebuilt' if run['command'] == 'rebuild' else 'added'}")  # fmt: skip
    else:
        click.echo("last run: never")
    _print_coverage(info["coverage"])
    for u in info["unread"]:
        click.echo(f"not read: {describe_unread(u)}")
    gone = info["missing_sources"]
    if gone:
        click.echo(f"sources whose file is gone ({len(gone)}; their data stays in the archive):")
        for g in gone[:20]:
            click.echo(f"  {g['provider']}  {g['path']}")
    cli_side.print_status(info)
    cli_roots.print_status(info["project_roots"])
    click.echo(cli_semantic.status_line(info))


def _print_coverage(rows: list[dict[str, Any]]) -> None:
    """Lines read per provider and client version, and their share by report kind."""
    if not rows:
        return
    click.echo("coverage (lines read, share by kind):")
    for r in rows:
        kinds = ", ".join(f"{k} {v['share']:g}%" for k, v in r["kinds"].items())
        flag = "  <- unknown lines: the adapter may need an update" if set(r["kinds"]) & set(coverage.PROBLEMS) else ""
        click.echo(f"  {r['provider']} {r['client_version']}: {_plural(r['lines'], 'line')}: {kinds}{flag}")


@cli.command()
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Interface to listen on (loopback by default).")
@click.option("-p", "--port", default=DEFAULT_PORT, show_default=True, type=int)
@click.option("--open", "open_browser", is_flag=True, help="Open a browser on the archive.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests for this Host name (repeatable; '*' for any). Others get 403.")
@click.option("--show-secrets", is_flag=True, help="Show found secrets on the conversation and search pages (masked by default).")
@click.option("--no-watch", is_flag=True, help="Do not watch the vendors' folders (by default what changes is ingested within seconds).")
@_db_after
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, open_browser: bool, allow_hosts: tuple[str, ...],
          show_secrets: bool, no_watch: bool) -> None:  # fmt: skip
    """Browse and query the archive with Datasette (pages read-only); while it runs, what the
    vendors write is ingested within seconds, as `ingest` would (--no-watch: not)."""
    from .serve import exposed, run_server

    if exposed(host):
        click.echo(f"warning: --host {host} exposes the archive (pasted secrets included) beyond this machine, "
                   "with no authentication; requests must name an allowed host (--allow-host)", err=True)  # fmt: skip

    db_path = _db_path(ctx)
    _open_read(ctx).conn.close()  # migrated, and an archive: else one line, exit 1
    _check_port(host, port)
    shown = f"[{host}]" if ":" in host else host
    watching = "" if no_watch else ", ingesting what the vendors write"
    click.echo(f"serving {db_path} at http://{shown}:{port}/ (read-only pages{watching}); press Ctrl-C to stop", err=True)
    try:
        run_server(db_path, host=host, port=port, open_browser=open_browser, allow_hosts=allow_hosts,
                   show_secrets=show_secrets, watch=not no_watch)  # fmt: skip
    except ArchiveError as e:
        raise click.ClickException(str(e))
    except OSError as e:  # lost the race for the port after the check
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror or e}")


@cli.command(name="emit")
@click.argument("thread")
@click.option("--to", "target", required=True,
              type=click.Choice(TARGETS), help="Output format.")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="A folder (vendor layout below it) or, for a single file, a file name.")
@click.option("--install", is_flag=True, help="Write into the vendor's own home so its CLI can resume it.")
@click.option("--rebuild-format", is_flag=True,
              help="Build the target format from the canonical model even when a byte-exact copy exists.")
@click.option("--cwd", help="Project folder for the target session (where its client files and resumes it).")
@click.option("--model-provider", help="The model provider the target session names (default: the target "
              "client's own configuration, e.g. model_provider in $CODEX_HOME/config.toml).")
@click.option("--client-version", help="The client release the session is written for (a vendor whose releases "
              "keep sessions differently writes that release's layout, e.g. OpenCode 1.1.65's JSON storage).")
@click.option("--json-report", is_flag=True, help="Print the emit report as JSON on stdout.")
@click.option("--redact/--no-redact", default=None,
              help="Mask the secrets the scan found ([REDACTED rule]). Default: on for markdown, off for sessions.")
@_db_after
@click.pass_context
def emit_cmd(ctx: click.Context, thread: str, target: str, output: Path | None, install: bool, rebuild_format: bool,
             cwd: str | None, model_provider: str | None, client_version: str | None, json_report: bool,
             redact: bool | None) -> None:  # fmt: skip
    """Write THREAD (id or unambiguous prefix) as a vendor session, canonical JSONL or Markdown."""
    from .emit import INSTALLABLE, MARKDOWN, emit_thread, install_files, write_file, write_files
    from .vendors import get as get_adapter
    from .vendors.base import EmitOptions

    if install and output:
        raise click.UsageError("--install and -o are exclusive")
    if install and target not in INSTALLABLE:
        raise click.UsageError(f"--install is for vendor formats ({', '.join(INSTALLABLE)})")
    db = _open_read(ctx)
    try:
        home = Path(os.path.expanduser("~"))
        configured = get_adapter(target).configured_options(os.environ, home) if target != MARKDOWN else {}
        outcome = emit_thread(db, thread, target, exact=not rebuild_format,
                              options=EmitOptions(cwd=cwd, model_provider=model_provider, client_version=client_version),
                              configured=configured)
        if redact or (redact is None and target == MARKDOWN):
            from .secrets import redact_outcome

            redact_outcome(db.conn, outcome)
        if install:
            install_files(outcome, os.environ, Path(os.path.expanduser("~")))
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
        from .vendors.base import file_chunks

        for chunk in file_chunks(outcome.files, next(iter(outcome.files))):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    elsewhere = None
    if output is not None and target in INSTALLABLE:
        # the file is not where the client looks: a resume command alone would fail
        elsewhere = f"sesh-archive emit {thread} --to {target} --install"
    _print_emit_report(outcome, json_report, install_with=elsewhere)


def _print_emit_report(outcome: Any, as_json: bool, install_with: str | None = None) -> None:
    kind = "byte-exact copy of the archived files" if outcome.exact else f"built as {outcome.target}"
    click.echo(f"emit {outcome.thread_id} -> {outcome.target}: {len(outcome.files)} files, {kind}", err=True)
    for path in outcome.written:
        click.echo(f"  wrote {path}", err=True)
    for reason, n in sorted(outcome.counts.items()):
        click.echo(f"  {n:5d}  {reason}", err=True)
    for note in outcome.notes:
        click.echo(f"  note: {note}", err=True)
    if outcome.resume_hint and outcome.written:
        if install_with:
            click.echo(f"written outside {outcome.target}'s folders; to resume it, install it there ({install_with}), "
                       f"then: {outcome.resume_hint}", err=True)  # fmt: skip
        else:
            click.echo(f"resume with: {outcome.resume_hint}", err=True)
    if as_json:
        _echo_json(outcome.report())


# ---------------------------------------------------------------- read commands: search, threads, show, stats


@cli.command(name="search")
@click.argument("query")
@_filter_options(role=True)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0), help="At most this many hits (0: all).")
@click.option("--literal", is_flag=True, help="Search the words as typed (each quoted), not FTS5 syntax.")
@click.option("--semantic", "mode", flag_value="semantic", help="By meaning (the [semantic] extra's model).")
@click.option("--hybrid", "mode", flag_value="hybrid", help="Words and meaning, ranks fused (RRF).")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON array.")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found in the snippets ([REDACTED rule]).")
@_db_after
@click.pass_context
def search_cmd(ctx: click.Context, query: str, provider: str | None, role: str | None, thread_ref: str | None,
               project: str | None, since: str | None, until: str | None, limit: int, literal: bool,
               mode: str | None, as_json: bool, redact: bool) -> None:  # fmt: skip
    """Full-text search of every message (SQLite FTS5 syntax: words, "phrases", OR, NOT, prefix*).

    A query FTS5 rejects is an error (exit 1); --literal searches the words as typed."""
    from .queries import Filters
    from .render import search_hits
    from .semantic_search import search as semantic_search

    tz = _tz(ctx)
    f = Filters(provider=provider, role=role, thread=thread_ref, project=project, since=since, until=until, tz=tz)
    try:
        team = _team(ctx)
        if team is not None:  # the team database (PostgreSQL full-text syntax)
            from .pg import queries as team_queries

            if redact or mode:
                raise click.UsageError(f"--{'redact' if redact else mode} works on the local archive only (no findings or vectors are pushed)")
            hits = team_queries.search(team, query, f, limit=limit or None, literal=literal)
        else:
            db = _open_existing(ctx)
            hits = semantic_search(db, query, f, mode=mode or "lexical", limit=limit or None, literal=literal)
            if redact:
                from .secrets import redact_hits

                hits = redact_hits(db.conn, hits)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json(hits)
    else:
        for line in search_hits(hits, tz):
            click.echo(line)
    click.echo(_plural(len(hits), "hit") + (" (limit reached)" if limit and len(hits) == limit else ""), err=True)


@cli.command(name="threads")
@_filter_options(role=False)
@click.option("--all", "show_all", is_flag=True, help="Also child threads (subagents) as rows, and empty threads.")
@click.option("--empty", is_flag=True, help="Also empty sessions (no message of their own or their subagents').")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=0), help="At most this many threads (0: all).")
@click.option("--prices", "prices_path", type=click.Path(dir_okay=False, path_type=Path), envvar=PRICES_ENV_VAR,
              help=f"Price table laid over the bundled one (env {PRICES_ENV_VAR}).")
@click.option("--tag", "tags", multiple=True, metavar="NAME", help="Only threads with this tag (repeatable: all of them).")
@click.option("--starred", is_flag=True, help="Only starred threads.")
@click.option("--json", "as_json", is_flag=True, help="Print the threads as a JSON array (with signals, tags, star, note).")
@_db_after
@click.pass_context
def threads_cmd(ctx: click.Context, provider: str | None, thread_ref: str | None, project: str | None,
                since: str | None, until: str | None, show_all: bool, empty: bool, limit: int,
                prices_path: Path | None, tags: tuple[str, ...], starred: bool, as_json: bool) -> None:  # fmt: skip
    """List threads, most recent activity first (--since/--until: active in that window).

    A session is a thread that is not a subagent: a top-level thread, a fork or a hand-off
    (the web's session list counts the same). Subagents are folded into their session (KIDS)
    unless --all; empty sessions (no message of their own or their subagents') are left out
    unless --empty or --all."""
    import shutil

    from .pricing import load_prices
    from .queries import Filters, short_ids, threads
    from .render import threads_table

    tz = _tz(ctx)
    f = Filters(provider=provider, thread=thread_ref, project=project, since=since, until=until, tz=tz)
    try:
        prices = load_prices(prices_path, env={})
        team = _team(ctx)
        if team is not None:  # the team database: every thread of every machine
            from .pg import queries as team_queries

            if tags or starred:
                raise ArchiveError("--tag and --starred read the local archive (the team's marks: SQL on thread_tags)")
            rows = team_queries.threads(team, f, limit=limit or None, top_level=not show_all and not thread_ref,
                                        include_empty=show_all or empty, prices=prices)  # fmt: skip
            rows = team_queries.annotate(team, rows) if as_json else rows
            shorts = {}
        else:
            from .marks import annotate, tagged

            db = _open_existing(ctx)
            ids = tagged(db.conn, tags, starred=starred) if tags or starred else None
            rows = threads(db, f, limit=limit or None, top_level=not show_all and not thread_ref and ids is None,
                           include_empty=show_all or empty, prices=prices, ids=ids)  # fmt: skip
            rows = annotate(db.conn, rows) if as_json else rows
            shorts = short_ids(db, [r["id"] for r in rows]) if not as_json else {}
    except ArchiveError as e:
        raise click.ClickException(str(e))
    if as_json:
        _echo_json(rows)
    elif rows:
        # the terminal's width, or $COLUMNS, or 120 when piped
        width = shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or 120)
        for line in threads_table(rows, shorts, tz, width):
            click.echo(line)
    click.echo(_plural(len(rows), "thread" if show_all or thread_ref else "session")
               + (" (limit reached)" if limit and len(rows) == limit else "")
               + ("" if show_all else "; subagents folded into their session (--all lists every thread)"), err=True)  # fmt: skip


@cli.command(name="show")
@click.argument("thread")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="json: the canonical records as JSON Lines, the thread first, then its messages.")
@click.option("--full", is_flag=True, help="Unfold tool calls, results, reasoning and injected context.")
@click.option("--no-pager", is_flag=True, help="Never page (the default pages text on a terminal, like git log).")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found ([REDACTED rule]).")
@_tz_options
@_db_after
@click.pass_context
def show_cmd(ctx: click.Context, thread: str, fmt: str, full: bool, no_pager: bool, redact: bool) -> None:
    """Print one thread (THREAD: an id or an unambiguous prefix of one).

    On a terminal the text goes through a pager ($PAGER, else less -FRX), wrapped to the
    terminal's width; messages are read in pages, so a huge thread streams."""
    import shutil

    from .render import thread_markdown, thread_text
    from .thread_view import load_view

    tz = _tz(ctx)
    try:
        team = _team(ctx)
        if team is not None:
            from .pg import queries as team_queries

            if redact:
                raise click.UsageError("--redact masks the local archive's findings; push with --redact to mask the team's copy")
            view = team_queries.show(team, thread)
        else:
            db = _open_existing(ctx)
            view = load_view(db, thread)
            if redact:
                from .secrets import redact_view

                view = redact_view(db.conn, view)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    tty = sys.stdout.isatty()
    if fmt == "json":
        lines: Any = (orjson.dumps(r).decode() for r in _records(view))
    elif fmt == "markdown":
        lines = thread_markdown(view, full)
    else:
        width = shutil.get_terminal_size((100, 24)).columns if tty else (int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS") else None)
        lines = thread_text(view, full, tz=tz, width=width)
    if tty and not no_pager and fmt == "text":
        os.environ.setdefault("LESS", "FRX")  # as git does: quit if one screen, keep colours
        click.echo_via_pager(line + "\n" for line in lines)
    else:
        # one echo per few hundred lines: click.echo costs ~15 µs a call, a huge thread has millions
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) >= 500:
                click.echo("\n".join(chunk), color=None if fmt == "text" else False)
                chunk.clear()
        if chunk:
            click.echo("\n".join(chunk), color=None if fmt == "text" else False)
    click.echo(f"{_plural(view.summary['messages'], 'message')}, {_plural(len(view.children), 'child thread')}", err=True)


def _records(view: Any) -> Any:
    yield view.thread.to_dict()
    for m in view.messages:
        yield m.to_dict()


@cli.command(name="stats")
@click.option("--by", type=click.Choice(STATS_BY), default="day", show_default=True,
              help="Grouping. tool: tool calls and errors per neutral kind (shell, edit, ...); "
                   "vendor-tool: per vendor tool name; thread: tokens and cost per thread.")  # fmt: skip
@_time_option("since", False)
@_time_option("until", True)
@_tz_options
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor.")
@click.option("--thread", "thread_ref", help="Only this thread (id or prefix) and its child threads.")
@click.option("--prices", "prices_path", type=click.Path(dir_okay=False, path_type=Path), envvar=PRICES_ENV_VAR,
              help=f"Price table laid over the bundled one (same JSON shape; env {PRICES_ENV_VAR}).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the rows as CSV.")
@_db_after
@click.pass_context
def stats_cmd(ctx: click.Context, by: str, since: str | None, until: str | None, provider: str | None,
              thread_ref: str | None, prices_path: Path | None, as_json: bool, as_csv: bool) -> None:  # fmt: skip
    """Tokens (input, output, cache read, cache write) and estimated cost, or tool call errors.

    Days, weeks and months are local (--tz, --utc); prices from genai-prices with the
    bundled table (and --prices) laid over it."""
    import csv

    from .pricing import load_prices
    from .queries import stats
    from .render import table

    if as_json and as_csv:
        raise click.UsageError("--json and --csv are exclusive")
    tz = _tz(ctx)
    try:
        prices = load_prices(prices_path, env={})
        team = _team(ctx)
        if team is not None:  # the team database: UTC days, every machine
            from .pg import queries as team_queries

            report = team_queries.stats(team, by, prices, since=since, until=until, provider=provider)
        else:
            report = stats(_open_existing(ctx), by, prices, since=since, until=until, provider=provider, tz=tz,
                           thread=thread_ref)  # fmt: skip
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
    if by in ("tool", "vendor-tool"):
        cols = ("calls", "errors", "error_rate", "no_result")
        extra = "vendor_tools" if by == "tool" else "providers"
        # a name several vendors share (bash) once; --json keeps each vendor's
        body = [[r["key"], *(r[c] for c in cols), ", ".join(dict.fromkeys(x.split(":", 1)[-1] for x in r[extra]))]
                for r in rows]  # fmt: skip
        body.append(["TOTAL", *(total[c] for c in cols), ""])
        head = ("TOOL", "CALLS", "ERRORS", "ERROR RATE", "NO RESULT", "VENDOR NAMES" if by == "tool" else "PROVIDERS")
        for line in table(head, body):
            click.echo(line)
        return
    cols = ("responses", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
    key_head = by.upper() + (f" ({report['tz']})" if by in ("day", "week", "month") else "")
    def key(r: dict[str, Any]) -> str:
        if r["key"] is None:
            return "(unknown)"
        return f"{r['key'][:12]} {(r.get('label') or '')[:40]}".rstrip() if by == "thread" else str(r["key"])
    body = [[key(r), *(r[c] for c in cols), _usd(r)] for r in rows] + [["TOTAL", *(total[c] for c in cols), _usd(total)]]
    for line in table((key_head, "RESPONSES", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST USD"), body):
        click.echo(line)
    p = report["prices"]
    db_info = p.get("database")
    click.echo("prices: " + (f"{db_info['name']} {db_info['version']} (latest change {db_info['as_of']}), " if db_info else "")
               + f"bundled table as of {p['as_of']}" + (f", overridden by {p['overrides']}" if p["overrides"] else "")
               + "; input = input not read from or written to the cache", err=True)  # fmt: skip
    if report["unpriced_models"]:
        click.echo("  * partial: the row includes models without a price", err=True)
    for u in report["unpriced_models"]:
        click.echo(f"  no price for {u['provider']} model {u['model'] or '(none)'} ({_plural(u['responses'], 'response')}): "
                   "cost left out", err=True)  # fmt: skip


def _usd(row: dict[str, Any]) -> str:
    v = row["cost_usd"]
    return "" if v is None else f"${v:,.4f}" + ("*" if row["unpriced_models"] else "")


# ---------------------------------------------------------------- team archive


@cli.command(name="push")
@click.argument("url", required=False, envvar="SESH_ARCHIVE_PUSH_URL")
@click.option("--schema", default="sesh", show_default=True, envvar="SESH_ARCHIVE_SCHEMA", help="PostgreSQL schema to push into.")
@click.option("--machine", help="Name this archive's machine on the server (kept for later pushes; default: the host name).")
@click.option("--with-sources", is_flag=True, help="Also push the source layer: every stored line, byte for byte.")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found in every pushed row (not with --with-sources).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@_db_after
@click.pass_context
def push_cmd(ctx: click.Context, url: str | None, schema: str, machine: str | None, with_sources: bool,
             redact: bool, as_json: bool) -> None:  # fmt: skip
    """Push what is new in the archive to a team PostgreSQL database (URL or $SESH_ARCHIVE_PUSH_URL).

    Incremental and idempotent per machine; secrets in the archive are pushed as they are
    unless --redact masks them."""
    from .push import PushOptions, push

    if not url:
        raise click.UsageError("give the PostgreSQL URL (postgresql://user@host/db) or set SESH_ARCHIVE_PUSH_URL")
    if redact and with_sources:
        raise click.UsageError("--redact cannot send the source layer (its lines go byte for byte): leave out --with-sources")
    db = _open_read(ctx)
    try:
        summary = push(db, url, PushOptions(schema=schema, machine_name=machine, with_sources=with_sources,
                                                redact=redact))
    except ArchiveError as e:
        raise click.ClickException(str(e))
    click.echo(summary.line(), err=True)
    if as_json:
        _echo_json(summary.to_dict())


from . import cli_mcp, cli_secrets  # noqa: E402,F401  the mcp (issue 39), secrets and forget (issue 23) commands
from . import cli_side  # noqa: E402  the lost command, side-file lines of ingest and status (issue 38)
from . import cli_roots  # noqa: E402  the roots command, ingest --root and status (issue 36)
from . import cli_files  # noqa: E402,F401  files, tag, untag, star, note, marks (issue 42)
from . import cli_semantic  # noqa: E402  the semantic lines of ingest and status (issue 40)
from . import cli_export  # noqa: E402,F401  export and resume (issue 41)
