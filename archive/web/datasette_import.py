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

from ..hidden_imports import hidden


@contextmanager
def standard_sqlite() -> Iterator[None]:
    """Hide ``pysqlite3`` while the caller first imports Datasette, then give it back. A
    process that imported Datasette earlier (Datasette's own command, loading the plugin by
    its entry point) keeps its choice; the plugin warns at startup."""
    if "datasette.utils.sqlite" in sys.modules:
        yield
        return
    with hidden("pysqlite3"):
        yield  # the caller imports Datasette here
