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


def test_signals_reach_the_server_row_by_row_and_the_team_threads_carry_every_mark(tmp_path: Path, pg_url: str) -> None:
    """The signals each machine derived (issue 42) are pushed: unchanged, nothing is sent; a
    thread that grew sends its row alone. The team's threads carry them with the marks of
    every machine: tags of any, a star of any, the note written last."""
    from archive import queries
    from archive.marks import annotate
    from archive.pg import queries as team

    def machine(name: str, threads: dict[str, int]) -> object:
        db = open_db(tmp_path / f"{name}.db")
        for tid, n in threads.items():
            write_lines(tmp_path / name / f"{tid}.jsonl", canonical_lines(tid, n, seed=len(tid)))
        ingest_paths(db, sorted((tmp_path / name).glob("*.jsonl")))
        return db

    a = machine("a", {"one": 6, "two": 9})
    tag(a.conn, "one", ["flaky"])
    note(a.conn, "one", "first words")
    s = push(a, pg_url, PushOptions(machine_name="alice"))
    assert s.rows.get("signals") == 2
    assert push(a, pg_url, PushOptions(machine_name="alice")).rows.get("signals") is None  # unchanged: nothing sent
    write_lines(tmp_path / "a" / "two.jsonl", canonical_lines("two", 12, seed=3))  # the thread grows
    ingest_paths(a, [tmp_path / "a" / "two.jsonl"])
    assert push(a, pg_url, PushOptions(machine_name="alice")).rows.get("signals") == 1
    conn = connect(pg_url)
    local = annotate(a.conn, queries.threads(a, limit=None))
    assert team.annotate(conn, team.threads(conn, limit=None)) == local
    assert {r["id"]: r["signals"]["tool_calls"] for r in local} == {"one": 2, "two": 4}
    # a second machine: its tag and star join, its later note wins
    b = machine("b", {"one": 6})
    tag(b.conn, "one", ["review"])
    star(b.conn, "one")
    note(b.conn, "one", "second words")
    b.conn.execute("UPDATE thread_notes SET updated_at = '2999-01-01T00:00:00Z'")  # written last, whatever the clock
    b.conn.commit()
    push(b, pg_url, PushOptions(machine_name="bob"))
    one = {r["id"]: r for r in team.annotate(conn, team.threads(conn, limit=None))}["one"]
    assert (one["tags"], one["starred"], one["note"]) == (["flaky", "review"], True, "second words")
    assert one["signals"] == {r["id"]: r for r in local}["one"]["signals"]
