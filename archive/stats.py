"""Read-only queries behind ``status`` (``stats`` and the other read commands are in queries.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlite_utils import Database


def archive_status(db: Database, db_path: Path) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())
    providers: dict[str, dict[str, Any]] = {}

    def slot(name: str) -> dict[str, Any]:
        return providers.setdefault(
            name, {"provider": name, "sources": 0, "threads": 0, "messages": 0, "missing_files": 0}
        )

    for prov, n in db.execute("SELECT provider, count(*) FROM sources WHERE kind != 'store' GROUP BY provider"):
        slot(prov)["sources"] = n
    for prov, n in db.execute("SELECT coalesce(provider, '?'), count(*) FROM threads GROUP BY 1"):
        slot(prov)["threads"] = n
    for prov, n in db.execute(
        "SELECT coalesce(t.provider, '?'), count(*) FROM messages m LEFT JOIN threads t ON t.id = m.thread_id GROUP BY 1"
    ):
        slot(prov)["messages"] = n
    missing = []
    for prov, path in db.execute(
        "SELECT s.provider, p.path FROM source_paths p JOIN sources s ON s.id = p.source_id "
        "WHERE p.missing = 1 AND NOT EXISTS (SELECT 1 FROM source_paths q WHERE q.source_id = p.source_id "
        "AND q.missing = 0) ORDER BY p.path"
    ):
        slot(prov)["missing_files"] += 1
        missing.append({"provider": prov, "path": path})
    run = db.execute(
        "SELECT command, started_at, finished_at, status, files_seen, files_changed, bytes_read, lines, "
        "messages_added FROM ingest_runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    keys = ("command", "started_at", "finished_at", "status", "files_seen", "files_changed", "bytes_read",
            "lines", "messages_added")  # fmt: skip
    return {
        "database": str(db_path),
        "size_bytes": size,
        "providers": sorted(providers.values(), key=lambda p: p["provider"]),
        "last_run": dict(zip(keys, run)) if run else None,
        "missing_sources": missing,
    }
