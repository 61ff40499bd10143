"""Datasette imported on Python's own ``sqlite3`` module, the one the archive is written with.

Datasette takes ``pysqlite3`` instead when it can import it (people install it for a newer
SQLite), and its connections then give that module's cursors and errors, which the pages
(``sqlite3.Row``, ``except sqlite3.OperationalError``) do not take: every conversation page
failed with a 500. ``archive.serve`` and ``archive.datasette_plugin`` import Datasette through
``standard_sqlite``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def standard_sqlite() -> Iterator[None]:
    """Hide ``pysqlite3`` while the caller first imports Datasette, then give it back
    (``sqlite_utils`` may hold it already, and keeps it). A process that imported Datasette
    earlier (Datasette's own command, loading the plugin by its entry point) keeps its
    choice; the plugin warns at startup."""
    if "datasette.utils.sqlite" in sys.modules:
        yield
        return
    saved = sys.modules.get("pysqlite3", _ABSENT)
    sys.modules["pysqlite3"] = None  # type: ignore[assignment]  # ``import pysqlite3`` raises ImportError
    try:
        yield  # the caller imports Datasette here
    finally:
        if saved is _ABSENT:
            sys.modules.pop("pysqlite3", None)
        else:
            sys.modules["pysqlite3"] = saved  # type: ignore[assignment]


_ABSENT = object()
