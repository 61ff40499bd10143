"""Companion files: a tool's full output that a vendor keeps in a file beside the
transcript, where the transcript itself holds only a preview (Claude Code 2.1.x writes
``<session>/tool-results/<id>.txt`` for outputs over its limit).

Invariants:

* The file is archived as a source of its own, byte for byte (so ``restore`` and a
  byte-exact ``emit`` give it back); the tool result names it by path fragment in
  ``ToolResult.extra["companion"]`` (``vendors.base.COMPANION``), whatever order the two
  files arrive in.
* Readers that show or hand off a conversation (``show``, cross-vendor ``emit``) get the
  full output through ``with_full_outputs``; the stored projection keeps the preview as
  the vendor wrote it, so rebuild equals ingest.
* A companion that was never archived (deleted before the first ingest) leaves the preview
  in place; nothing fails.
"""

from __future__ import annotations

from dataclasses import replace

from sqlite_utils import Database

from .ingest import stored_file_bytes
from .model import Message, ToolResult
from .vendors.base import COMPANION


def companion_bytes(db: Database, fragment: str) -> bytes | None:
    """The current bytes of the archived source whose path ends with ``/fragment``."""
    row = db.execute(
        "SELECT id, current_generation FROM sources WHERE substr(last_path, -?) = ? ORDER BY id DESC LIMIT 1",
        (len(fragment) + 1, "/" + fragment),
    ).fetchone()
    return stored_file_bytes(db, row[0], row[1]) if row else None


def with_full_outputs(db: Database, messages: list[Message]) -> tuple[list[Message], int]:
    """``messages`` with each tool result that names an archived companion carrying the
    companion's text as its output; and how many were replaced."""
    out, replaced = [], 0
    for m in messages:
        blocks = list(m.content)
        for i, b in enumerate(blocks):
            fragment = (b.extra or {}).get(COMPANION) if isinstance(b, ToolResult) else None
            data = companion_bytes(db, fragment) if isinstance(fragment, str) else None
            if data is not None:
                blocks[i] = replace(b, output=data.decode("utf-8", "replace"))
                replaced += 1
        out.append(replace(m, content=tuple(blocks)) if replaced and blocks != list(m.content) else m)
    return out, replaced
