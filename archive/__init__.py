"""sesh-archive: a local, lossless SQLite archive of AI coding agent sessions.

Data flows files -> vendor parser (``archive.vendors``) -> ingest (``archive.ingest``)
-> tables (``archive.db``) -> Datasette (``archive.serve``), MessageStore
(``archive.store``) and emit (``archive.emit``).
"""

__version__ = "0.1.0"
