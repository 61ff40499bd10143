"""``forget`` (issue 23): the rewritten lines are a new generation, recorded; the old
generation's bytes leave the database file; the projection is derived again; restore
says which files are not the original bytes; and a later ingest of the vendor file that
still holds the value neither brings it back nor makes a new generation, including when
the file grows with more lines holding it. Rebuild equals ingest after all of it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import orjson
from test_secrets import canonical_session, planted, run

from archive import secrets
from archive.db import dump_tables, open_db
from archive.ingest import rebuild
from archive.lines import iter_stored_lines


def _db_bytes(db_path: Path) -> bytes:
    db = open_db(db_path)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    return b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))


def _stored(db) -> bytes:
    return b"".join(line for sid, g in db.execute("SELECT DISTINCT source_id, generation FROM source_lines").fetchall()
                    for _o, _l, _t, line in iter_stored_lines(db.conn, sid, g))  # fmt: skip


def _content(db) -> dict:
    """Every table but the stat of the file (touched on purpose below)."""
    return dump_tables(db, exclude=("ingest_runs", "_sqlite_migrations", "source_paths"))


def _generations(db) -> list[tuple[int, int]]:
    return db.execute("SELECT source_id, generation FROM generations ORDER BY 1, 2").fetchall()


def test_forget_writes_a_new_generation_that_a_later_ingest_continues_without_the_value(tmp_path: Path) -> None:
    plants = planted()
    (_r, aws, aws_line), (_r2, gh, gh_line) = plants[0], plants[1]
    home = tmp_path / "sessions"
    home.mkdir()
    f = home / "s.jsonl"
    f.write_bytes(canonical_session("t-forget", [aws_line, gh_line]))
    db_path = tmp_path / "a.db"
    run("--db", str(db_path), "ingest", "-q", str(home))
    db = open_db(db_path)
    [(sid, old_gen)] = _generations(db)
    target = next(x for x in secrets.list_findings(db.conn) if x["rule"] == "aws-access-key")
    db.conn.close()

    out, _err = run("--db", str(db_path), "forget", "--finding", str(target["id"]), "--yes", "--json")
    done = json.loads(out)
    [src] = done["sources"]
    assert src["replaced_generation"] == old_gen and src["generation"] > old_gen and src["lines"] >= 3
    db = open_db(db_path)
    new_gen = src["generation"]
    # a new generation, recorded; the old one is gone (its bytes were the value)
    assert _generations(db) == [(sid, new_gen)]
    assert db.execute("SELECT count(*) FROM source_lines WHERE generation = ?", (old_gen,)).fetchone()[0] == 0
    rec = db.execute("SELECT source_id, generation, replaced_generation, lines_rewritten FROM forget_generations").fetchall()
    assert rec == [(sid, new_gen, old_gen, src["lines"])]
    assert db.execute("SELECT current_generation FROM sources WHERE id = ?", (sid,)).fetchone()[0] == new_gen
    assert db.execute("SELECT count(*) FROM forgotten_values WHERE source_id = ? AND value_sha256 = ?",
                      (sid, hashlib.sha256(aws.encode()).hexdigest())).fetchone()[0] == 1  # fmt: skip
    # the projection was derived again from the new generation
    assert db.execute("SELECT count(*) FROM messages WHERE generation != ?", (new_gen,)).fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] >= 5
    stored = _stored(db)
    assert aws.encode() not in stored and b"[aws-access-key]" in stored and gh.encode() in stored
    db.conn.close()
    raw = _db_bytes(db_path)
    assert aws.encode() not in raw and gh.encode() in raw

    # the vendor file still holds the value: ingest changes nothing, makes no generation
    before = _content(open_db(db_path))
    os.utime(f, (f.stat().st_atime, f.stat().st_mtime + 5))  # touched: ingest opens it again
    run("--db", str(db_path), "ingest", "-q", str(home))
    db = open_db(db_path)
    assert _generations(db) == [(sid, new_gen)]
    assert _content(db) == before
    db.conn.close()
    assert aws.encode() not in _db_bytes(db_path)

    # the file grows, with the value again (raw in the text, JSON-escaped nowhere else)
    more = {"v": 1, "id": "t-forget-m7", "threadId": "t-forget", "role": "user", "ts": "2026-11-30T10:00:07.000Z",
            "content": [{"type": "text", "text": f"again: {aws_line} and {gh}"}]}  # fmt: skip
    with f.open("ab") as fh:
        fh.write(orjson.dumps(more) + b"\n")
    out, _err = run("--db", str(db_path), "ingest", "--json", str(home))
    # said, not silent: the line's stored bytes differ from the file's
    assert [w for w in json.loads(out)["warnings"] if "masked" in w] == [f"{f}: 1 line(s) held a value `forget` removed: stored masked, so they differ from the file"]
    db = open_db(db_path)
    assert _generations(db) == [(sid, new_gen)]  # continued, not read again from 0
    text = db.execute("SELECT b.text FROM blocks b WHERE b.message_id = "
                      "(SELECT id FROM messages WHERE id LIKE '%t-forget-m7%')").fetchone()  # fmt: skip
    assert text is not None and text[0].startswith("again: ") and "[aws-access-key]" in text[0] and gh in text[0]
    assert aws.encode() not in _stored(db)
    # the new line's findings: the other secret, not the forgotten one
    assert hashlib.sha256(aws.encode()).hexdigest() not in {x["value_sha256"] for x in secrets.list_findings(db.conn)}
    db.conn.close()
    assert aws.encode() not in _db_bytes(db_path)
    # a second run over the grown file: still nothing new
    before = _content(open_db(db_path))
    os.utime(f, (f.stat().st_atime, f.stat().st_mtime + 5))
    run("--db", str(db_path), "ingest", "-q", str(home))
    assert _content(open_db(db_path)) == before

    # restore names the rewritten file and gives the masked bytes, which parse
    _out, err = run("--db", str(db_path), "restore", str(tmp_path / "r"))
    assert "rewritten by `forget`" in err and f"generation {new_gen} replaced generation {old_gen}" in err
    restored = [p for p in (tmp_path / "r").rglob("s.jsonl")]
    assert restored and str(restored[0]) in err
    data = restored[0].read_bytes()
    assert aws.encode() not in data and len(data) == f.stat().st_size
    for line in data.splitlines():
        orjson.loads(line)

    # rebuild equals ingest
    db = open_db(db_path)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before
