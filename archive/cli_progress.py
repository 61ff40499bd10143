"""The ingest progress bar (files and bytes done out of a pre-scanned total) and that
pre-scan; on stderr, only on a terminal. Kept apart from cli.py, which only calls it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from .errors import ArchiveError


class _Progress:
    """Files and bytes done out of a pre-scanned total, with rate and estimate (click's
    progress bar), on stderr and only when stderr is a terminal: cron and ``--quiet`` see
    nothing of it."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.files = 0
        self.total_files = 0
        self.started = 0.0
        self.bar: Any = None

    def start(self, total_files: int, total_bytes: int) -> None:
        import time

        self.total_files, self.started = total_files, time.monotonic()
        self.bar = click.progressbar(length=max(total_bytes, 1), file=sys.stderr, show_eta=True, show_percent=True,
                                     item_show_func=lambda item: item, width=24)  # fmt: skip
        self.bar.__enter__()

    def __call__(self, path: str, bytes_read: int) -> None:
        if not self.enabled or self.bar is None:
            return
        import time

        self.files += 1
        rate = bytes_read / max(time.monotonic() - self.started, 1e-3) / 1e6
        info = f"{min(self.files, self.total_files)}/{self.total_files} files, {bytes_read / 1e6:,.1f} MB, {rate:,.1f} MB/s"
        self.bar.update(max(bytes_read - self.bar.pos, 0), info)

    def complete(self) -> None:
        """The run finished: the bar ends at 100%, all files done. The byte total is what the
        files held before the run; unchanged files are skipped (never read) and a database's
        sessions are read as documents, so the bytes read alone rarely add up to it."""
        if not self.enabled or self.bar is None:
            return
        self.bar.update(max(self.bar.length - self.bar.pos, 0), f"{self.total_files}/{self.total_files} files")

    def done(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _prescan(paths: list[Path], providers: tuple[str, ...]) -> tuple[int, int]:
    """How many candidate files and bytes a run will look at (for the progress bar's total)."""
    from .ingest.discovery import chosen_adapters, discover

    files = size = 0
    try:
        for cand in discover(paths or None, chosen_adapters(providers), os.environ, []):
            files += 1
            try:
                size += cand.path.stat().st_size
            except OSError:
                pass
    except ArchiveError:
        pass
    return files, size
