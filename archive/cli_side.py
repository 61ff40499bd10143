"""The ``lost`` command and the side-file lines of ``ingest`` and ``status`` (issue 38),
kept apart from cli.py; the library work is in archive/side_files.py."""

from __future__ import annotations

import os
from typing import Any

import click

from .cli_common import _db_after, _echo_json, _open_read, _plural, _team, cli
from .vendors import names as vendor_names


@cli.command(name="lost")
@click.option("--provider", type=click.Choice(vendor_names()), help="Only this vendor's sessions.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=0), help="At most this many sessions (0: all).")
@click.option("--redact", is_flag=True, help="Mask the secrets the scan found in the prompts ([REDACTED rule]).")
@click.option("--json", "as_json", is_flag=True, help="Print the lost sessions, with their prompts, as a JSON array.")
@_db_after
@click.pass_context
def lost_cmd(ctx: click.Context, provider: str | None, limit: int, redact: bool, as_json: bool) -> None:
    """Sessions a prompt history names whose transcript is not in the archive (the vendor
    deleted it before an ingest saw it), with the prompts typed in them."""
    from .projection import one_line
    from .side_files import lost_sessions, mask_prompts

    team = _team(ctx)
    if team is not None:  # the team database (push sends the prompt histories: archive/push_side.py)
        from .push_side import team_lost_sessions

        if redact:
            raise click.UsageError("--redact masks the local archive's findings; push with --redact to mask the team's copy")
        rows = team_lost_sessions(team, provider, limit or None)
    else:
        db = _open_read(ctx)
        rows = lost_sessions(db, provider, limit or None)
        rows = mask_prompts(db, rows) if redact else rows
    if as_json:
        _echo_json(rows)
    for r in rows if not as_json else ():
        who = r["session_id"] or "(no session id)"
        click.echo(f"{r['provider']}  {who}  {r['project'] or ''}  {r['first_ts'] or ''} .. {r['last_ts'] or ''}  "
                   f"{_plural(r['prompts'], 'prompt')}")
        for p in r["history"]:
            click.echo(f"    {p['ts'] or '':24}  {one_line(p['prompt'], 100)}")
    click.echo(_plural(len(rows), "lost session") + (" (limit reached)" if limit and len(rows) == limit else ""), err=True)


def ingest_warnings(db: Any, summary: Any) -> None:
    """After an ingest: a warning per vendor whose cleanup outruns the runs (in the summary)."""
    from .side_files import retention_warnings

    summary.warnings.extend(w["warning"] for w in retention_warnings(db, os.environ, during_ingest=True))


def status_info(db: Any, info: dict[str, Any]) -> None:
    """``status``: lost sessions per provider and project, and the retention warnings."""
    from .side_files import lost_counts, retention_warnings

    info["lost_sessions"] = lost_counts(db)
    info["retention_warnings"] = retention_warnings(db, os.environ)


def print_status(info: dict[str, Any]) -> None:
    lost = info["lost_sessions"]
    if lost:
        click.echo("lost sessions (prompts in a history, no transcript archived; `sesh-archive lost` lists them):")
        for r in lost[:20]:
            what = (_plural(r["prompts"], "prompt") + " without a session id" if r["prompts_without_session"]
                    else f"{_plural(r['sessions'], 'session')}, {_plural(r['prompts'], 'prompt')}")
            click.echo(f"  {r['provider']}  {r['project'] or '(no project)'}: {what}")
    for w in info["retention_warnings"]:
        click.echo(f"warning: {w['warning']}")
