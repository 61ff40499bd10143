"""``usage_totals`` kept once per projection flush (issue 37, migration m136): the same
totals as the per-row triggers, written once per group instead of once per usage row; the
triggers still keep them for every other writer."""

from __future__ import annotations

from archive.db import open_db
from archive.model import Message, Text, Usage
from archive.projection import Projector
from archive.vendors.base import UsageRow

RECOMPUTED = (
    "SELECT coalesce(substr(ts, 1, 10), ''), coalesce(provider, ''), coalesce(model, ''), thread_id, count(*), "
    "sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)), sum(coalesce(cache_read_tokens, 0)), "
    "sum(coalesce(cache_write_tokens, 0)), sum(coalesce(reasoning_tokens, 0)) FROM usage GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"
)
TOTALS = "SELECT * FROM usage_totals ORDER BY 1, 2, 3, 4"


def _db(tmp_path):
    db = open_db(tmp_path / "x.db")
    conn = db.conn
    conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (1, 'u', 'canonical', 'lines')")
    # counts the writes to usage_totals (a temp trigger: this connection only)
    conn.executescript(
        "CREATE TEMP TABLE writes (n); "
        "CREATE TEMP TRIGGER count_ins AFTER INSERT ON main.usage_totals BEGIN INSERT INTO writes VALUES (1); END; "
        "CREATE TEMP TRIGGER count_upd AFTER UPDATE ON main.usage_totals BEGIN INSERT INTO writes VALUES (1); END;"
    )
    return db, conn


def _writes(conn) -> int:
    n = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    conn.execute("DELETE FROM writes")
    return n


def _usage(key: str, thread: str, message: str | None, out: int, model: str = "m1", ts: str = "2026-12-01T10:00:00Z") -> UsageRow:
    return UsageRow(key, thread, Usage(input_tokens=10, output_tokens=out, cache_read_tokens=3), message, model, ts)


def test_a_flush_writes_each_group_of_totals_once(tmp_path):
    db, conn = _db(tmp_path)
    p = Projector(conn)
    conn.execute("BEGIN")
    for i in range(40):  # forty responses of one thread, day and model: one group
        p.apply("canonical", (1, 1, 100 + i), [_usage(f"k{i}", "t1", None, i)])
    p.flush()
    assert _writes(conn) == 1  # the per-row triggers wrote it forty times
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall() == [
        ("2026-12-01", "canonical", "m1", "t1", 40, 400, sum(range(40)), 120, 0, 0)
    ]
    assert conn.execute("SELECT deferred FROM usage_totals_state").fetchone() == (0,)
    conn.execute("COMMIT")


def test_totals_follow_updates_and_moves_between_threads(tmp_path):
    """A response reported again (a later line wins: new model, new day), a message whose
    ownership moves to another thread (its responses follow it), and no usage at all."""
    db, conn = _db(tmp_path)
    p = Projector(conn)
    conn.execute("BEGIN")
    m2 = Message(id="m2", thread_id="t2", role="assistant", ts=None, content=[Text("hi")])
    p.apply("canonical", (1, 1, 50), [_usage("a", "t1", None, 1), _usage("b", "t1", None, 2)])
    p.put_message(m2, (1, 1, 60, 0))
    p.apply("canonical", (1, 1, 61), [_usage("c", "t2", "m2", 5)])
    p.flush()
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    assert len(conn.execute(TOTALS).fetchall()) == 2
    # "a" reported again by a later line under another model and day; "b" again unchanged
    p.apply("canonical", (1, 1, 70), [_usage("a", "t1", None, 7, model="m9", ts="2026-12-02T00:00:00Z"), _usage("b", "t1", None, 2)])
    p.flush()
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    assert ("2026-12-02", "canonical", "m9", "t1", 1, 10, 7, 3, 0, 0) in conn.execute(TOTALS).fetchall()
    # a copy of m2 in thread t1 (ranking first: same creation time, smaller thread id) takes
    # m2 over; its response moves to t1, and t2's group goes
    p.put_message(Message(id="m2", thread_id="t1", role="assistant", ts=None, content=[Text("hi")]), (1, 1, 80, 0))
    p.flush()
    assert conn.execute("SELECT thread_id FROM usage WHERE key = 'c'").fetchone() == ("t1",)
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    assert {r[3] for r in conn.execute(TOTALS)} == {"t1"}
    _writes(conn)
    p.put_message(Message(id="m3", thread_id="t3", role="user", ts=None, content=[Text("no usage")]), (1, 1, 90, 0))
    p.flush()
    assert _writes(conn) == 0
    conn.execute("COMMIT")


def test_the_triggers_keep_the_totals_for_every_other_writer(tmp_path):
    """Outside the projection's flush the flag is 0 and the triggers count each row; set, they
    are held (the projection adds the difference itself)."""
    db, conn = _db(tmp_path)
    row = "INSERT INTO usage (key, thread_id, provider, ts, output_tokens, source_id, generation, offset) VALUES (?, 't', 'p', '2026-12-01', 4, 1, 1, ?)"
    conn.execute(row, ("x", 1))
    assert conn.execute(TOTALS).fetchall() == [("2026-12-01", "p", "", "t", 1, 0, 4, 0, 0, 0)]
    conn.execute("UPDATE usage_totals_state SET deferred = 1")
    conn.execute(row, ("y", 2))
    conn.execute("DELETE FROM usage WHERE key = 'x'")
    assert conn.execute(TOTALS).fetchall() == [("2026-12-01", "p", "", "t", 1, 0, 4, 0, 0, 0)]
    conn.execute("UPDATE usage_totals_state SET deferred = 0")
    conn.execute("DELETE FROM usage WHERE key = 'y'")
    assert conn.execute(TOTALS).fetchall() == []


def test_a_response_streamed_over_lines_is_written_once_per_flush(tmp_path):
    """Rows of one response key from one source, each line carrying its own message of the
    same thread: the last wins the upsert anyway, so it is the one row written. A row of that
    key from a message another thread owns is still ranked by the upsert."""
    db, conn = _db(tmp_path)
    conn.executescript(
        "CREATE TEMP TABLE usage_writes (n); "
        "CREATE TEMP TRIGGER count_u AFTER INSERT ON main.usage BEGIN INSERT INTO usage_writes VALUES (1); END; "
        "CREATE TEMP TRIGGER count_uu AFTER UPDATE ON main.usage BEGIN INSERT INTO usage_writes VALUES (1); END;"
    )
    p = Projector(conn)
    conn.execute("BEGIN")
    for i in range(5):
        p.put_message(Message(id=f"s{i}", thread_id="t1", role="assistant", ts=None, content=[Text(str(i))]), (1, 1, 10 + i, 0))
        p.apply("canonical", (1, 1, 10 + i), [_usage("r", "t1", f"s{i}", i)])
    p.flush()
    assert conn.execute("SELECT count(*) FROM usage_writes").fetchone() == (1,)
    assert conn.execute("SELECT message_id, output_tokens, offset FROM usage").fetchall() == [("s4", 4, 14)]
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    # the same key again, from a line whose message t1 does not own (t0 does): ranked lower
    # by the upsert than the stored row whatever its offset, it changes nothing
    p.put_message(Message(id="x", thread_id="t0", role="assistant", ts=None, content=[Text("x")]), (1, 1, 30, 0))
    p.apply("canonical", (1, 1, 31), [_usage("r", "t1", "x", 99)])
    p.apply("canonical", (1, 1, 32), [_usage("r", "t1", "s4", 5)])
    p.flush()
    assert conn.execute("SELECT message_id, output_tokens, offset FROM usage").fetchall() == [("s4", 5, 32)]
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    conn.execute("COMMIT")
