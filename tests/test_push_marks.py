"""``push`` carries the user's tags, stars and notes to the team database (issue 42,
archive/push_marks.py): replaced per machine when they change, nothing sent when not.
Marker ``postgres``."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import ingest_paths
from archive.marks import note, star, tag, untag
from archive.pg import connect
from archive.push import PushOptions, push
from tests.ingest_helpers import canonical_lines, write_lines

pytestmark = pytest.mark.postgres


def test_marks_reach_the_server_and_follow_an_untag(tmp_path: Path, pg_url: str) -> None:
    write_lines(tmp_path / "t.jsonl", canonical_lines("marked", 6))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [tmp_path / "t.jsonl"])
    tag(db.conn, "marked", ["flaky", "review"])
    star(db.conn, "marked")
    note(db.conn, "marked", "look again")
    s = push(db, pg_url, PushOptions(machine_name="alice"))
    assert s.rows.get("marks") == 3
    pg = connect(pg_url)
    assert sorted(pg.execute("SELECT thread_id, tag FROM thread_tags").fetchall()) == [("marked", "flaky"), ("marked", "review")]
    assert pg.execute("SELECT starred, note FROM thread_notes").fetchall() == [(1, "look again")]
    assert push(db, pg_url, PushOptions(machine_name="alice")).rows.get("marks") is None  # unchanged: nothing sent
    untag(db.conn, "marked", ["review"])
    push(db, pg_url, PushOptions(machine_name="alice"))
    pg = connect(pg_url)
    assert pg.execute("SELECT thread_id, tag FROM thread_tags").fetchall() == [("marked", "flaky")]
