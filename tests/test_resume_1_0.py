"""Claude Code 1.0.x ``--resume`` (issue 33), recorded with the real 1.0.3 and 1.0.56: the
resume writes a new file repeating the resumed turns under new uuids. It is a continuation
of the session it repeats (lineage, as for a fork): the repeated messages are stored once,
in the original, every response is counted once, and the archive is the same whatever
order the files arrive in (every permutation, and the copy read while it grows)."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild
from archive.store import SqliteMessageStore
from tests.test_forks import order_free_dump

RESUME = Path(__file__).parent / "fixtures" / "claude-code" / "resume-1.0"
RELEASES = ["1.0.3", "1.0.56"]


def _files(release: str) -> tuple[Path, Path]:
    sid = orjson.loads((RESUME / release / "scenario.json").read_bytes())["session_id"]
    files = sorted((RESUME / release / "projects").rglob("*.jsonl"))
    original = next(f for f in files if f.stem == sid)
    (copy,) = [f for f in files if f != original]
    return original, copy


def _ingest(db_path: Path, steps: list[tuple[Path, bytes]], home: Path):
    db = open_db(db_path)
    for path, data in steps:  # one run per step: a nightly archive sees them arrive one by one
        target = home / path.relative_to(RESUME)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        s = ingest_paths(db, [target], IngestOptions(idle_seconds=10**9))
        assert s.failed == 0 and s.reports["adapter_error"] == 0
    return db


def _orders(original: Path, copy: Path) -> dict[str, list[tuple[Path, bytes]]]:
    whole = {f: f.read_bytes() for f in (original, copy)}
    lines = whole[copy].splitlines(keepends=True)
    out = {" then ".join(f.name[:8] for f in order): [(f, whole[f]) for f in order]
           for order in itertools.permutations((original, copy))}  # fmt: skip
    # the copy read after its repeated turns only, then again once the new turn is there
    out["copy growing, first"] = [(copy, b"".join(lines[:3])), (copy, b"".join(lines[:5])), (original, whole[original]),
                                  (copy, whole[copy])]  # fmt: skip
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_a_1_0_resume_is_a_continuation_counted_once_in_every_order(release: str, tmp_path: Path) -> None:
    original, copy = _files(release)
    first, resumed = original.stem, copy.stem
    dumps = {}
    for n, (name, steps) in enumerate(_orders(original, copy).items()):
        db_path = tmp_path / f"{n}.db"
        db = _ingest(db_path, steps, tmp_path / f"home{n}")
        dumps[name] = order_free_dump(db)
        store = SqliteMessageStore(db_path)
        t = store.get_thread(resumed)
        assert t is not None and t.parent_thread_id == first, name
        assert (t.metadata or {}).get("forkedFrom") == first, name
        trunk = store.get_messages(first)
        assert [m.role for m in trunk] == ["user", "assistant", "user", "assistant"], name
        assert t.origin_message_id == trunk[-1].id, name
        # the resumed thread reads as its client sent it: the inherited turns, then its own
        view = store.get_messages(resumed)
        assert [m.id for m in view[:4]] == [m.id for m in trunk], name
        assert [m.role for m in view[4:]] == ["user", "assistant"], name
        conn = store.conn
        # the repeated lines are occurrences of the original's messages, not messages of their own
        assert conn.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (resumed,)).fetchone()[0] == 2, name
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 6, name
        # each response once: the two repeated ones credited to the original, whatever came first
        usage = dict(conn.execute("SELECT thread_id, count(*) FROM usage GROUP BY 1").fetchall())
        assert usage == {first: 2, resumed: 1}, name
        before = order_free_dump(db)
        rebuild(db)
        assert order_free_dump(db) == before, name
        db.conn.close()
    names = list(dumps)
    for table in dumps[names[0]]:
        for name in names[1:]:
            assert dumps[name][table] == dumps[names[0]][table], (table, name)
