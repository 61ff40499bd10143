"""Third-party modules imported with some of their optional companions out of sight.

``sqlite_utils`` imports, when they are installed, ``pysqlite3`` (then its ``except
OperationalError`` clauses are that module's, and miss the errors of the standard library's
connections the archive opens), ``numpy`` and ``pandas`` (to map their types on insert,
which the archive never asks of it). With the ``[semantic]`` extra's numpy installed, a 1 GB
synthetic first ingest peaked at 148-161 MB RSS, 142-145 MB without it (an empty run 60
against 48 MB; docs/benchmarks.md, stop 56), and it cost about 50 ms of every command's
start. ``archive/__init__.py`` imports it first, through ``sqlite_utils_alone``; the modules
hidden come back at once for whoever imports them later (the semantic extra imports numpy
when it embeds).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

_ABSENT = object()
SQLITE_UTILS_OPTIONAL = ("pysqlite3", "numpy", "pandas")


@contextmanager
def hidden(*names: str) -> Iterator[None]:
    """``import NAME`` raises ImportError inside the block (the import machinery's own
    meaning of a ``None`` entry in ``sys.modules``); each entry is as before afterwards."""
    saved = {name: sys.modules.get(name, _ABSENT) for name in names}
    for name in names:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is _ABSENT:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module  # type: ignore[assignment]


def sqlite_utils_alone() -> None:
    """Import ``sqlite_utils`` without ``SQLITE_UTILS_OPTIONAL``, unless it is imported
    already (a process that imported it before the archive keeps its choice)."""
    if "sqlite_utils" in sys.modules:
        return
    with hidden(*SQLITE_UTILS_OPTIONAL):
        import sqlite_utils.db  # noqa: F401
