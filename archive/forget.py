"""``forget``: the one operation that changes stored bytes, for a secret that must leave the disk.

Invariants:

* **Every copy goes.** The values of the chosen findings (a finding, or every finding of a
  thread) are replaced in every stored chunk of the source layer that holds them, raw or
  JSON-escaped, in every source and generation; the projection of the affected sources is
  then rebuilt from the rewritten lines (blocks, the full-text index, messages' raw JSON,
  thread facts, reports, findings), text blobs holding them are deleted (the rebuild
  stores the rewritten companion again), the FTS index is merged so no old segment keeps
  a term, the vectors of the rewritten blocks are zeroed (by the rebuild: ``semantic.settle``)
  and embedded again from the masked text, and the file is vacuumed with ``secure_delete``
  so no free page keeps a copy.
* **A new generation, recorded.** Each generation whose lines held a value becomes a new
  generation of its source (the next number) holding the rewritten lines; the old one is
  gone, since its bytes were the value. ``forget_generations`` says which generation
  replaced which, when, and how many lines changed; ``forgotten_secrets`` what was
  forgotten (rule, sha256 of the value, sources); ``restore`` names the files it gives
  back that are not the original bytes. The projection is derived again for those sources:
  its rows are keyed on (source, generation, offset).
* **Same length, same offsets.** A value is replaced by ``[REDACTED <rule>]`` padded with
  ``*`` to the value's length (``[<rule>]`` or ``*`` alone when the value is shorter). The
  offsets are those of the vendor's file, which may still exist and grow: they are the
  key ingest continues it by (end offset, the hash of the last line read, kept as the
  file's), and every line's ``(offset, length)`` stays. A shorter mask would move every
  later line of the generation off the file's offsets, and ingest could no longer tell
  the file continues the generation: it would read it again from 0, secret included.
* **It does not come back.** ``forgotten_values`` keeps the sha256 of each value per
  source; ingest masks those values (the same way) in every line it reads later from that
  source (``incoming_masker``: an append, a rewrite of the file), so a later ingest of the
  vendor file that still holds the value stores and indexes only the mask, in the same
  generation when the file just grew.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlite_utils import Database

from . import secrets, semantic
from .errors import ArchiveError
from .ingest import rebuild
from .lines import Codec
from .masking import _forms, _pattern


@dataclass
class Forgotten:
    values: int = 0
    chunks: int = 0
    sources: list[dict[str, Any]] = field(default_factory=list)
    blobs: int = 0
    rows_rewritten: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"values": self.values, "chunks_rewritten": self.chunks, "sources": self.sources,
                "blobs_deleted": self.blobs, "rows_rewritten": self.rows_rewritten}  # fmt: skip


def chosen_values(conn: sqlite3.Connection, finding: int | None = None, thread: str | None = None) -> dict[str, str]:
    if finding is not None:
        if not conn.execute("SELECT 1 FROM secret_findings WHERE id = ?", (finding,)).fetchone():
            raise ArchiveError(f"no finding {finding}")
        return secrets._values_of(conn, "f.id = ?", (finding,))
    if thread is not None:
        return secrets._values_of(conn, "f.thread_id = ? OR f.thread_id LIKE ?", (thread, thread + "%"))
    raise ArchiveError("forget needs a finding id or a thread")


def _renumber(conn: sqlite3.Connection, source_id: int, old: int) -> int:
    """Generation ``old`` of the source becomes the next generation: its lines, chunks,
    offsets record and paths move to the new number (the old one holds nothing after)."""
    new = conn.execute("SELECT max(generation) FROM generations WHERE source_id = ?", (source_id,)).fetchone()[0] + 1
    for table in ("source_chunks", "source_lines", "generations", "source_paths"):
        conn.execute(f"UPDATE {table} SET generation = ? WHERE source_id = ? AND generation = ?", (new, source_id, old))
    conn.execute("UPDATE sources SET current_generation = ? WHERE id = ? AND current_generation = ?", (new, source_id, old))
    return new


def forget(db: Database, finding: int | None = None, thread: str | None = None, vacuum: bool = True) -> Forgotten:
    """Replace the chosen findings' values everywhere in the archive (module docstring)."""

    conn = db.conn
    values = chosen_values(conn, finding, thread)
    out = Forgotten(values=len(values))
    if not values:
        return out
    forms = _forms(values)
    rx = _pattern(forms)
    codec = Codec()
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left holding the value
    conn.execute("BEGIN IMMEDIATE")
    try:
        touched: dict[tuple[int, int], int] = {}
        for cid, sid, gen, c, data in conn.execute(
            "SELECT id, source_id, generation, codec, data FROM source_chunks ORDER BY id"
        ).fetchall():
            raw = codec.unpack(c, data)
            if not rx.search(raw):
                continue
            new = rx.sub(lambda m: forms[m.group(0)], raw)
            assert len(new) == len(raw)
            nc, packed = codec.pack(new)
            conn.execute("UPDATE source_chunks SET codec = ?, data = ? WHERE id = ?", (nc, packed, cid))
            out.chunks += 1
            lines = conn.execute(
                "SELECT count(*) FROM source_lines WHERE chunk_id = ?", (cid,)
            ).fetchone()[0]
            touched[(sid, gen)] = touched.get((sid, gen), 0) + lines
        blobs = [r[0] for r in conn.execute(
            "SELECT sha256 FROM blobs WHERE " + " OR ".join("instr(data, ?) > 0" for _ in forms), list(forms)
        )]  # fmt: skip
        for sha in blobs:
            conn.execute("DELETE FROM blobs WHERE sha256 = ?", (sha,))
        out.blobs = len(blobs)
        uids = dict(conn.execute("SELECT id, uid FROM sources").fetchall())
        now = secrets._now()
        for (sid, g), n in sorted(touched.items()):
            new_g = _renumber(conn, sid, g)
            total = conn.execute(
                "SELECT count(*) FROM source_lines WHERE source_id = ? AND generation = ?", (sid, new_g)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO forget_generations (forgotten_at, source_id, generation, replaced_generation, lines, "
                "lines_rewritten) VALUES (?, ?, ?, ?, ?, ?)",
                (now, sid, new_g, g, total, n),
            )
            out.sources.append({"source": uids.get(sid), "source_id": sid, "generation": new_g,
                                "replaced_generation": g, "lines": n})  # fmt: skip
        for v, rule in values.items():
            conn.execute(
                "INSERT INTO forgotten_secrets (forgotten_at, rule, value_sha256, lines_rewritten, sources, rows_rewritten) "
                "VALUES (?, ?, ?, ?, ?, 0)",
                (now, rule, secrets.sha(v), sum(touched.values()), orjson.dumps(out.sources).decode()),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO forgotten_values (source_id, value_sha256, rule, forgotten_at) VALUES (?, ?, ?, ?)",
                [(sid, secrets.sha(v), rule, now) for sid in sorted({s for s, _g in touched})],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    # the projection of every rewritten source, derived again from its lines
    for sid in sorted({s for s, _g in touched}):
        summary = rebuild(db, source=uids[sid])
        out.rows_rewritten += summary.messages_added
    conn.execute("BEGIN IMMEDIATE")
    try:
        left = _left_in_projection(conn, values)
        if left:
            raise ArchiveError(f"forget: values still in {', '.join(left)} after the rebuild")
        # FTS5 keeps deleted terms in old segments until they merge: merge them all now
        conn.execute("INSERT INTO blocks_fts(blocks_fts) VALUES ('optimize')")
        conn.execute(
            "UPDATE forgotten_secrets SET rows_rewritten = ? WHERE forgotten_at = ? AND rows_rewritten = 0",
            (out.rows_rewritten, now),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if semantic.available():  # embedded again now, from the masked text: the next ingest finds nothing to do
        semantic.update(db)
    if vacuum:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return out


def _left_in_projection(conn: sqlite3.Connection, values: dict[str, str]) -> list[str]:
    """Tables whose text columns still hold a value (a source the chunks did not cover)."""
    left = []
    checks = {
        "blocks": ("text", "input", "output", "patch", "extra", "path", "uri"),
        "messages": ("extra", "provenance"),
        "thread_facts": ("fields",),
        "threads": ("title", "metadata", "extra"),
        "reports": ("detail",),
        "generations": ("parser_state",),
    }
    for table, cols in checks.items():
        for v in values:
            for form in {v, orjson.dumps(v).decode()[1:-1]}:
                cond = " OR ".join(f"instr({c}, ?) > 0" for c in cols)
                if conn.execute(f"SELECT 1 FROM {table} WHERE {cond} LIMIT 1", [form] * len(cols)).fetchone():
                    left.append(table)
    return sorted(set(left))
