"""The lost-sessions page and the file checkpoints of a conversation page (issue 38).

Invariants: read-only, through archive/side_files.py (the views of migration
m080_38_side_files); a lost session is shown as a session with only its prompts, the
way the vendor's prompt history kept them, with the secrets the ingest scan found in them
(``archive/secrets.py``) masked unless ``serve --show-secrets``; a checkpoint is offered only when
its backup is archived, as the stored bytes (never a file read from disk).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..side_files import checkpoints, lost_sessions, mask_prompts


def lost_page(conn: sqlite3.Connection, provider: str = "", thread: str = "", mask: bool = True) -> list[dict[str, Any]]:
    rows = lost_sessions(conn, provider or None)  # type: ignore[arg-type]
    rows = [r for r in rows if r["thread_id"] == thread] if thread else rows
    return mask_prompts(conn, rows) if mask else rows


def is_lost(conn: sqlite3.Connection, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM lost_sessions WHERE thread_id = ? LIMIT 1", (thread_id,)).fetchone() is not None


def thread_checkpoints(conn: sqlite3.Connection, thread_id: str) -> dict[str, list[dict[str, Any]]]:
    """Message id -> the archived files as they were before it changed them."""
    return checkpoints(conn, thread_id)  # type: ignore[arg-type]


def source_bytes(conn: sqlite3.Connection, source_id: int) -> tuple[str, bytes] | None:
    """The last path and current bytes of a snapshot side file (a file backup)."""
    from ..lines import iter_stored_lines

    row = conn.execute("SELECT last_path, current_generation, kind FROM sources WHERE id = ?", (source_id,)).fetchone()
    if row is None or row[2] != "snapshot" or conn.execute(
            "SELECT 1 FROM file_checkpoints WHERE backup_source_id = ? LIMIT 1", (source_id,)).fetchone() is None:
        return None  # only the backups a checkpoint names
    data = b"".join(line + (b"\n" if term else b"") for _o, _l, term, line in iter_stored_lines(conn, source_id, row[1]))
    return row[0], data
