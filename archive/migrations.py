"""Schema migrations, applied in order on every open (``db.open_db``).

Invariants: migrations are append-only (a new one goes at the end of ``migrations_2.py``) and never edited once released; each runs in one
transaction with the record of it having been applied; ``schema.sql`` is what they produce
on a blank database (``tests/test_schema.py`` checks, ``scripts/dump_schema.py`` rewrites it).

Layers (DESIGN.md): 1. source layer (``sources``, ``source_fingerprints``, ``source_paths``,
``generations``, ``source_lines``); 2. canonical projection (``threads``, ``thread_facts``,
``messages``, ``message_occurrences``, ``blocks``, ``usage``, ``blobs``, ``reports``);
3. indexes and views (FTS5 over block text, conversation views). ``ingest_runs`` is a log.
"""

from __future__ import annotations

from .migration_set import migrations
from .migrations_1 import *  # noqa: F403  registers m001... in order, and names them here
from .migrations_2 import *  # noqa: F403  registers the later ones after them

__all__ = ["migrations"]
