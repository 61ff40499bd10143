"""The semantic lines of ``ingest``, ``status`` and ``search`` (issue 40), kept apart from
cli.py; the library work is in archive/semantic.py."""

from __future__ import annotations

import sys
from typing import Any

import click

from .cli_common import _plural


def ingest_step(db: Any, quiet: bool) -> str | None:
    """After an ingest, under its lock: embed what it added (a step the run starts itself);
    returns the line that says what it did, printed after the run's summary line.

    Without the ``[semantic]`` extra nothing happens (``status`` shows the blocks waiting);
    a failure here is a warning, never a failed ingest: the archive itself is complete."""
    from . import semantic

    if not semantic.available():
        return None
    show = sys.stderr.isatty() and not quiet

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\rembedding: {done}/{total} blocks", err=True, nl=False)

    try:
        u = semantic.update(db, progress=progress)
    except semantic.ArchiveError as e:
        return f"  warning: semantic index not updated: {e}"
    if show and u.blocks:
        click.echo("", err=True)
    if not (u.blocks or u.dropped or u.rebuilt):
        return None
    return (f"semantic: {_plural(u.blocks, 'block')} embedded ({_plural(u.chunks, 'chunk')}) in {u.seconds:.1f}s"
            + (f", {_plural(u.dropped, 'stale chunk')} dropped" if u.dropped else "")
            + (f"; rebuilt for {u.model}" if u.rebuilt else ""))  # fmt: skip


def status_info(db: Any, info: dict[str, Any]) -> None:
    from .semantic import state

    info["semantic"] = state(db.conn)


def status_line(info: dict[str, Any]) -> str:
    s = info["semantic"]
    if not s["available"]:
        return (f"semantic: not installed ({_plural(s['vectors'], 'vector')} stored); "
                "pip install 'sesh-archive[semantic]' for search --semantic")  # fmt: skip
    line = f"semantic: {s['model'] or s['installed_model']}, {_plural(s['vectors'], 'vector')}, {s['pending']} blocks pending"
    if s["model_changed"]:
        line += f" (model now {s['installed_model']}: the next ingest rebuilds)"
    elif s["pending"]:
        line += " (the next ingest embeds them)"
    return line
