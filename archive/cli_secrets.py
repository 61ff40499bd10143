"""The ``secrets`` and ``forget`` commands (issue 23), kept apart from cli.py's read and
ingest commands; the library work is in archive/secrets.py and archive/forget.py."""

from __future__ import annotations

import click

from .cli_common import (
    _db_after,
    _db_path,
    _echo_json,
    _lock,
    _open_read,
    _plural,
    _time_option,
    _tz,
    _tz_options,
    cli,
)
from .errors import ArchiveError
from .ingest import open_archive


@cli.command(name="secrets")
@click.option("--json", "as_json", is_flag=True, help="Print every finding as a JSON array (never the values).")
@click.option("--thread", "thread_ref", help="Only this thread (id or prefix).")
@_time_option("since", False)
@_tz_options
@click.option("--rescan", is_flag=True, help="Derive every finding again with the current rules.")
@_db_after
@click.pass_context
def secrets_cmd(ctx: click.Context, as_json: bool, thread_ref: str | None, since: str | None, rescan: bool) -> None:
    """Secrets the scan found in the archive: counts per rule, or the findings with --json.

    Findings hold where (thread, message, block, span) and a sha256 of the value, never
    the value; `show --redact`, `emit --redact` and `serve` mask them."""
    from . import secrets
    from .queries import parse_time

    # first seen at or after: the same words and days as every other --since (parse_time)
    since = parse_time(since, tz=_tz(ctx)) if since else None
    if rescan:
        db_path = _db_path(ctx)
        try:
            with _lock(db_path, 600, False):
                db = open_archive(db_path)
                n = secrets.rescan(db.conn)
        except ArchiveError as e:
            raise click.ClickException(str(e))
        click.echo(f"rescanned with rules version {secrets.RULES_VERSION}: {_plural(n, 'finding')}", err=True)
    db = _open_read(ctx)
    if as_json:
        _echo_json(secrets.list_findings(db.conn, thread_ref, since))
        return
    s = secrets.summary(db.conn, thread_ref, since)
    for rule, n in s["by_rule"].items():
        click.echo(f"{n:7d}  {rule}")
    click.echo(f"{_plural(s['findings'], 'finding')}, {_plural(s['distinct_values'], 'distinct value')}", err=True)
    if s["findings_rules_version"] != s["rules_version"]:
        click.echo(f"the findings come from rules version {s['findings_rules_version']}; these rules are version "
                   f"{s['rules_version']}: run `sesh-archive secrets --rescan`", err=True)  # fmt: skip


@cli.command(name="forget")
@click.option("--finding", type=int, help="The finding (an id from `secrets --json`) whose value must go.")
@click.option("--thread", "thread_ref", help="Every value found in this thread (id or prefix).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON on stdout.")
@_db_after
@click.pass_context
def forget_cmd(ctx: click.Context, finding: int | None, thread_ref: str | None, yes: bool, as_json: bool) -> None:
    """Remove found secrets from the archive itself: the stored lines are rewritten.

    The values are replaced in every stored line and table, wherever they occur: each
    generation that held one is written again as a new generation, the projection is
    derived again, and the database is vacuumed. `restore` then gives back the rewritten
    bytes, not the originals, and says so; ingest masks the values in lines it reads later
    from those files."""
    from .forget import forget

    if (finding is None) == (thread_ref is None):
        raise click.UsageError("give --finding ID or --thread ID")
    if not yes:
        click.confirm("forget rewrites archived lines; the original bytes cannot be restored afterwards. Go on?",
                      abort=True, err=True)  # fmt: skip
    db_path = _db_path(ctx)
    try:
        with _lock(db_path, 600, False):
            done = forget(open_archive(db_path), finding=finding, thread=thread_ref)
    except ArchiveError as e:
        raise click.ClickException(str(e))
    lines = sum(s["lines"] for s in done.sources)
    click.echo(f"forgot {_plural(done.values, 'value')}: {_plural(lines, 'stored line')} in "
               f"{_plural(len(done.sources), 'generation')} written again as new ones, {_plural(done.blobs, 'blob')} dropped, "
               "projection rebuilt, database vacuumed", err=True)  # fmt: skip
    if as_json:
        _echo_json(done.to_dict())
