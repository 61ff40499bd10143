"""sesh-archive: a local, lossless SQLite archive of AI coding agent sessions.

Data flows files -> vendor parser (``archive.vendors``) -> ingest (``archive.ingest``)
-> tables (``archive.db``) -> Datasette (``archive.serve``), MessageStore
(``archive.store``) and emit (``archive.emit``).
"""

__version__ = "0.1.0"

from .hidden_imports import sqlite_utils_alone as _sqlite_utils_alone

_sqlite_utils_alone()  # before any module of the archive imports it (hidden_imports.py says why)
