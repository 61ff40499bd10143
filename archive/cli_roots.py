"""The ``roots`` command, ``ingest --root`` and the project-roots lines of ``status``
(issue 36), kept apart from cli.py; the library work is in archive/project_roots.py."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from . import project_roots
from .cli_common import _db_after, _echo_json, _open_read, _plural, cli


def add_roots(db: Any, roots: Iterable[Path]) -> None:
    for r in roots:
        project_roots.add_root(db, r)


def status_info(db: Any) -> dict[str, Any]:
    return project_roots.status(db, os.environ)


def print_status(info: dict[str, Any]) -> None:
    click.echo(f"project folders searched for project-local logs: {_plural(info['project_folders'], 'known folder')} "
               f"(the cwd of archived sessions), {_plural(len(info['roots']), 'named root')}")
    for r in info["roots"]:
        click.echo(f"  root {r['path']}" + ("" if r["exists"] else "  (not found)"))


@cli.command(name="roots")
@click.option("--add", "add", multiple=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Name a folder that every ingest searches for project-local logs (as `ingest --root`).")
@click.option("--remove", "remove", multiple=True, help="Stop searching this named folder (what was archived stays).")
@click.option("--json", "as_json", is_flag=True, help="Print the named roots as a JSON array.")
@_db_after
@click.pass_context
def roots_cmd(ctx: click.Context, add: tuple[Path, ...], remove: tuple[str, ...], as_json: bool) -> None:
    """The folders named with `ingest --root`, searched by every plain ingest for the logs
    vendors write inside projects (besides every folder an archived session ran in)."""
    db = _open_read(ctx)
    if add or remove:
        add_roots(db, add)
        unknown = [r for r in remove if not project_roots.remove_root(db, r)]
        if unknown:
            raise click.ClickException("not a named root: " + ", ".join(unknown))
    rows = project_roots.list_roots(db)
    if as_json:
        _echo_json(rows)
        return
    for r in rows:
        click.echo(r["path"] + ("" if r["exists"] else "  (not found)"))
    click.echo(_plural(len(rows), "named root"), err=True)
