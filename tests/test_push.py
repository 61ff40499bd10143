"""The team archive: ``push`` into a real PostgreSQL server (tests/pg_server.py), and the
read commands over it. Marker ``postgres`` (run by .ci/run, which installs the server).

Two machines are two local archives: A holds every vendor fixture (ingested from a laid-out
home), B synthetic canonical threads. Both also hold one shared file, whose messages the
server must store once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive import queries
from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild
from archive.pg import connect
from archive.pg import queries as team
from archive.thread_view import load_view
from archive.pricing import load_prices
from archive.push import PushOptions, push
from tests.ingest_helpers import canonical_lines, write_lines
from tests.vendor_home import build_home

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parent.parent
SHARED = canonical_lines("shared-thread", 40, seed=7)


def _vendor_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))


def machine_a(tmp: Path, monkeypatch: pytest.MonkeyPatch, db_path: Path | None = None, shared: bool = True) -> Path:
    """Every vendor fixture, ingested from their default places, plus the shared file."""
    home = tmp / "home-a"
    build_home(home)
    _vendor_env(monkeypatch, home)
    db_path = db_path or tmp / "a.db"
    db = open_db(db_path)
    assert not ingest_paths(db, None, IngestOptions()).failed
    if shared:
        write_lines(home / "shared" / "shared.jsonl", SHARED)
        ingest_paths(db, [home / "shared" / "shared.jsonl"], IngestOptions())
    return db_path


def machine_b(tmp: Path, db_path: Path | None = None, threads: int = 6, n: int = 30, big: int = 0,
              shared: bool = True) -> Path:  # fmt: skip
    home = tmp / "home-b"
    paths = []
    for i in range(threads):
        p = home / f"t{i}.jsonl"
        write_lines(p, canonical_lines(f"b-thread-{i}", n, seed=i, big=big))
        paths.append(p)
    if shared:
        write_lines(home / "copy-of-shared.jsonl", SHARED)
        paths.append(home / "copy-of-shared.jsonl")
    db_path = db_path or tmp / "b.db"
    ingest_paths(open_db(db_path), paths, IngestOptions())
    return db_path


TOKENS = ("input_tokens", "total_tokens", "cost_usd", "unpriced_models")


def neutral(db) -> bool:
    """Whether the local views take usage.input_tokens as stored (input not from the cache,
    for every provider), as the team views do. Until every adapter stores it so, a local
    view may still adjust one provider's figure; then only the raw sums can be compared."""
    return db.execute(
        "SELECT count(*) FROM usage u JOIN usage_responses r ON r.key = u.key "
        "WHERE r.input_tokens != coalesce(u.input_tokens, 0)"
    ).fetchone()[0] == 0


def comparable(value, db):
    """``value`` (a stats report or threads list), without the input-derived figures when
    the local archive is not neutral yet."""
    if neutral(db):
        return value
    if isinstance(value, list):  # (token totals also decide the order of some listings)
        return sorted((comparable(v, db) for v in value), key=repr)
    if isinstance(value, dict):
        return {k: comparable(v, db) for k, v in value.items() if k not in TOKENS}
    return value


def assert_raw_sums(conn, db, machine_id=None) -> None:
    """The server's usage columns sum to the local usage table's, as stored."""
    cols = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    sums = ", ".join(f"coalesce(sum({c}), 0)" for c in cols)
    where, params = ("WHERE machine_id = %s", (machine_id,)) if machine_id else ("", ())
    assert tuple(conn.execute(f"SELECT {sums} FROM usage {where}", params).fetchone()) == tuple(
        db.execute(f"SELECT {sums} FROM usage").fetchone())  # fmt: skip


def pg_dump(url: str) -> dict[str, list[tuple]]:
    """Every row of every table of the team schema (push times and the derived tsvector left out)."""
    conn = connect(url)
    out = {}
    tables = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'sesh' AND table_type = 'BASE TABLE'")]  # fmt: skip
    for t in sorted(tables):
        named = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'sesh' AND table_name = %s "
            "ORDER BY ordinal_position",
            (t,),
        )
        cols = [r[0] for r in named if r[0] not in ("tsv", "first_push_at", "last_push_at", "applied_at")]
        rows = conn.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {t}").fetchall()
        out[t] = sorted((tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows), key=repr)
    conn.close()
    return out


def local_count(db_path: Path, table: str) -> int:
    return open_db(db_path).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def pg_count(url: str, sql: str, *params) -> int:
    import psycopg

    with psycopg.connect(url) as conn:  # no migration: the tests look, they do not create
        conn.execute("SET search_path TO sesh")
        return conn.execute(sql, params).fetchone()[0]


def test_two_machines_counts_stats_and_reads_per_machine(tmp_path, monkeypatch, pg_url):
    """Each machine's rows, threads and stats on the server equal its local archive's."""
    a, b = machine_a(tmp_path, monkeypatch, shared=False), machine_b(tmp_path, shared=False)
    sa = push(open_db(a), pg_url, PushOptions(machine_name="alice"))
    sb = push(open_db(b), pg_url, PushOptions(machine_name="bob"))
    assert sa.full and sb.full and sa.machine_id != sb.machine_id
    conn = connect(pg_url)
    prices = load_prices(None, env={})
    for db_path, s in ((a, sa), (b, sb)):
        mid, db = s.machine_id, open_db(db_path)
        assert pg_count(pg_url, "SELECT count(*) FROM machine_threads WHERE machine_id = %s", mid) == local_count(db_path, "threads")
        for table in ("message_occurrences", "thread_facts", "reports", "sources"):
            assert pg_count(pg_url, f"SELECT count(*) FROM {table} WHERE machine_id = %s", mid) == local_count(db_path, table), table
        for table in ("messages", "usage", "threads"):
            assert pg_count(pg_url, f"SELECT count(*) FROM {table} WHERE machine_id = %s", mid) == local_count(db_path, table), table
        assert comparable(team.threads(conn, limit=None, machine=s.machine_name), db) == comparable(
            queries.threads(db, limit=None), db)  # fmt: skip
        for by in ("day", "week", "model", "provider", "project", "tool"):
            got = team.stats(conn, by, prices, machine=s.machine_name)
            assert comparable(got, db) == comparable(queries.stats(db, by, prices), db), (db_path.name, by)
        assert_raw_sums(conn, db, mid)
    conn.close()


def test_messages_of_several_machines_are_stored_once(tmp_path, monkeypatch, pg_url):
    a, b = machine_a(tmp_path, monkeypatch), machine_b(tmp_path)
    push(open_db(a), pg_url)
    push(open_db(b), pg_url)
    dbs = (open_db(a), open_db(b))
    ids = set().union(*({r[0] for r in db.execute("SELECT id FROM messages")} for db in dbs))
    assert pg_count(pg_url, "SELECT count(*) FROM messages") == len(ids) < sum(local_count(p, "messages") for p in (a, b))
    assert pg_count(pg_url, "SELECT count(DISTINCT machine_id) FROM message_occurrences WHERE message_id = 'shared-thread-m1'") == 2
    shared_blocks = dbs[1].execute("SELECT count(*) FROM blocks WHERE message_id LIKE 'shared-thread-%'").fetchone()[0]
    assert pg_count(pg_url, "SELECT count(*) FROM blocks") == sum(local_count(p, "blocks") for p in (a, b)) - shared_blocks
    keys = set().union(*({r[0] for r in db.execute("SELECT key FROM usage")} for db in dbs))
    assert pg_count(pg_url, "SELECT count(*) FROM usage") == len(keys)
    assert pg_count(pg_url, "SELECT count(*) FROM machine_threads WHERE thread_id = 'shared-thread'") == 2


def test_team_totals_equal_one_archive_of_both_machines(tmp_path, monkeypatch, pg_url):
    """The server's totals equal those of one local archive that ingested both machines' files."""
    a, b = machine_a(tmp_path, monkeypatch), machine_b(tmp_path)
    push(open_db(a), pg_url)
    push(open_db(b), pg_url)
    both = tmp_path / "both.db"
    machine_a(tmp_path / "again", monkeypatch, both)
    machine_b(tmp_path / "again", both)
    db, conn = open_db(both), connect(pg_url)
    prices = load_prices(None, env={})
    for by in ("day", "week", "month", "model", "provider", "project", "tool"):
        assert comparable(team.stats(conn, by, prices), db) == comparable(queries.stats(db, by, prices), db), by
    window = {"since": "2026-01-01", "until": "2026-01-01T00:00:30Z"}
    assert comparable(team.stats(conn, "day", prices, **window), db) == comparable(
        queries.stats(db, "day", prices, **window), db)  # fmt: skip
    assert_raw_sums(conn, db)
    assert comparable(team.threads(conn, limit=None), db) == comparable(queries.threads(db, limit=None), db)
    f = queries.Filters(project="/work", since="2026-01-01")
    assert team.threads(conn, f, limit=5) == queries.threads(db, f, limit=5)
    for tid in ("shared-thread", "b-thread-3"):
        mine, theirs = load_view(db, tid), team.show(conn, tid)
        # the local view reads its messages a page at a time (MessagePages): compare the lists
        assert (theirs.thread, list(theirs.messages), theirs.children) == (mine.thread, list(mine.messages), mine.children)
        assert theirs.summary == mine.summary
    for (pg_view, n) in conn.execute("SELECT 'thread_summary', count(*) FROM thread_summary UNION ALL "
                                     "SELECT 'tool_calls', count(*) FROM tool_calls").fetchall():  # fmt: skip
        assert n == db.execute(f"SELECT count(*) FROM {pg_view}").fetchone()[0], pg_view
    # the views' token sums agree with the stats
    total = conn.execute("SELECT sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) "
                         "FROM usage_daily").fetchone()[0]  # fmt: skip
    assert total == team.stats(conn, "day", prices)["total"]["total_tokens"]
    conn.close()


def test_repush_sends_nothing_and_an_append_sends_only_the_new_rows(tmp_path, monkeypatch, pg_url, pg_server):
    a = machine_a(tmp_path, monkeypatch)
    first = push(open_db(a), pg_url, PushOptions(with_sources=True))
    assert first.sent > 0
    again = push(open_db(a), pg_url, PushOptions(with_sources=True))
    assert again.sent == 0 and again.batches == 0, again.rows
    # the shared file grows by 5 lines
    path = tmp_path / "home-a" / "shared" / "shared.jsonl"
    grown = canonical_lines("shared-thread", 45, seed=7)
    assert grown[:41] == SHARED
    write_lines(path, grown)
    ingest_paths(open_db(a), [path], IngestOptions())
    more = push(open_db(a), pg_url, PushOptions(with_sources=True))
    assert more.rows["messages"] == 5 and more.rows["message_occurrences"] == 5
    assert more.rows["source_lines"] == 5 + 1  # the last line already sent goes again (a late newline)
    # incremental = whole, on the server too
    whole = pg_server.new_database()
    push(open_db(a), whole, PushOptions(with_sources=True))
    assert pg_dump(pg_url) == pg_dump(whole)


def test_source_lines_are_the_exact_bytes(tmp_path, monkeypatch, pg_url):
    from archive.lines import iter_stored_lines

    a = machine_a(tmp_path, monkeypatch)
    db = open_db(a)
    mid = push(db, pg_url).machine_id
    assert pg_count(pg_url, "SELECT count(*) FROM source_lines") == 0
    s = push(db, pg_url, PushOptions(with_sources=True))
    assert "messages" not in s.rows and s.rows["source_lines"] == local_count(a, "source_lines")
    conn = connect(pg_url)
    for sid, uid, g in db.execute("SELECT s.id, s.uid, g.generation FROM sources s JOIN generations g ON g.source_id = s.id"):
        got = conn.execute('SELECT "offset", length, terminated, data FROM source_lines WHERE machine_id = %s '
                           'AND source_uid = %s AND generation = %s ORDER BY "offset"', (mid, uid, g)).fetchall()  # fmt: skip
        assert [(o, n, t, bytes(d)) for o, n, t, d in got] == list(iter_stored_lines(db.conn, sid, g))
    conn.close()


def test_rebuild_then_push_gives_the_tables_of_a_clean_push(tmp_path, monkeypatch, pg_url, pg_server):
    a = machine_a(tmp_path, monkeypatch)
    push(open_db(a), pg_url)
    rebuild(open_db(a))
    s = push(open_db(a), pg_url)
    assert s.full and s.rows["messages"] == local_count(a, "messages")
    clean = pg_server.new_database()
    push(open_db(a), clean)
    assert pg_dump(pg_url) == pg_dump(clean)


def test_machine_id_is_made_once_and_can_be_named(tmp_path, monkeypatch, pg_url):
    a = machine_a(tmp_path, monkeypatch)
    first = push(open_db(a), pg_url, PushOptions(machine_name="laptop"))
    second = push(open_db(a), pg_url)
    third = push(open_db(a), pg_url, PushOptions(machine_name="desk"))
    assert first.machine_id == second.machine_id == third.machine_id
    assert (second.machine_name, third.machine_name) == ("laptop", "desk")
    conn = connect(pg_url)
    assert conn.execute("SELECT id, name FROM machines").fetchall() == [(first.machine_id, "desk")]
    assert conn.execute("SELECT name, sources FROM machine_summary").fetchall() == [
        ("desk", local_count(a, "sources"))]  # fmt: skip
    conn.close()


_CHILD = """
import sys
import archive.push as p
from archive.db import open_db
p.BATCH_BYTES = 40_000
p.push(open_db(sys.argv[1]), sys.argv[2])
"""


def test_push_killed_by_sigkill_and_rerun_equals_a_clean_push(tmp_path, pg_url, pg_server):
    b = machine_b(tmp_path, threads=30, n=120, big=3000)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kills, partial = 0, []
    total = local_count(b, "generations")
    delay = 0.4
    while kills < 40:  # killed ever later, until a push gets to its end by itself
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(b), pg_url], env=env, stderr=subprocess.PIPE)
        time.sleep(delay)
        if child.poll() is not None:
            break
        child.send_signal(signal.SIGKILL)
        kills += 1
        child.wait()
        if pg_count(pg_url, "SELECT to_regclass('sesh.generations') IS NOT NULL"):
            partial.append(pg_count(pg_url, "SELECT count(*) FROM sesh.generations"))
        delay += 0.15
    # killed mid-way: some batches had landed and others not
    assert kills >= 2 and any(0 < n < total for n in partial), (kills, partial, total)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(b), pg_url], env=env, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    clean = pg_server.new_database()
    push(open_db(b), clean)
    assert pg_dump(pg_url) == pg_dump(clean)
    assert push(open_db(b), pg_url).sent == 0


def test_concurrent_pushes_of_two_machines(tmp_path, monkeypatch, pg_url, pg_server):
    import archive.push as push_module

    a, b = machine_a(tmp_path, monkeypatch), machine_b(tmp_path, threads=12, n=60)
    monkeypatch.setattr(push_module, "BATCH_BYTES", 20_000)  # many small transactions, interleaved
    errors: list[BaseException] = []

    def run(path: Path) -> None:
        try:
            push(open_db(path), pg_url)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=run, args=(p,)) for p in (a, b)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    one_by_one = pg_server.new_database()
    push(open_db(b), one_by_one)
    push(open_db(a), one_by_one)
    assert pg_dump(pg_url) == pg_dump(one_by_one)
    # and both hold the forks' lineage of A (B has none), whichever batch landed first
    local = sorted(open_db(a).execute("SELECT thread_id, parent_thread_id, origin_message_id FROM thread_lineage"))
    assert local and sorted(pg_dump(pg_url)["thread_lineage"]) == local


def test_cli_push_then_threads_show_stats_search_on_the_team_database(tmp_path, monkeypatch, pg_url):
    a = machine_b(tmp_path)
    runner = CliRunner()
    local = ["--db", str(a)]
    for args in (["tag", "b-thread-1", "flaky", "review"], ["star", "b-thread-2"], ["note", "b-thread-1", "look again"]):
        assert runner.invoke(cli, [*local, *args], catch_exceptions=False).exit_code == 0
    r = runner.invoke(cli, [*local, "push", pg_url, "--machine", "ci", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["machine_name"] == "ci"
    monkeypatch.setenv("SESH_ARCHIVE_PUSH_URL", pg_url)
    r = runner.invoke(cli, [*local, "push", "--json"], catch_exceptions=False)
    assert json.loads(r.stdout)["rows"] == {}
    team_db = ["--db", pg_url]
    for args in (["threads", "--json", "--limit", "0"], ["stats", "--json"], ["stats", "--by", "tool", "--json"],
                 ["show", "shared-thread", "--format", "json"], ["show", "shared"],
                 ["threads", "--project", "/work", "--json"]):  # fmt: skip
        mine = runner.invoke(cli, [*local, *args], catch_exceptions=False)
        theirs = runner.invoke(cli, [*team_db, *args], catch_exceptions=False)
        assert theirs.exit_code == 0, theirs.output
        if args[0] == "threads":
            # every key, the archive's own additions of issue 42 too (signals, the user's marks)
            mine_rows = json.loads(mine.stdout)
            assert mine_rows and all({"signals", "tags", "starred", "note"} <= set(row) for row in mine_rows)
            assert json.loads(theirs.stdout) == mine_rows, args
            continue
        assert theirs.stdout == mine.stdout, args
    r = runner.invoke(cli, [*team_db, "search", "quokka", "--json"], catch_exceptions=False)
    hits = json.loads(r.stdout)
    assert hits and all("quokka" in h["snippet"].lower() for h in hits)
    assert all(h["snippet"][s:e].lower() == "quokka" for h in hits for s, e in h["matches"])
    # commands that need the local archive say so
    r = runner.invoke(cli, [*team_db, "status"])
    assert r.exit_code == 2 and "local archive" in r.output
    r = runner.invoke(cli, ["--db", pg_url.rsplit("/", 1)[0] + "/postgres", "threads"])
    assert r.exit_code == 1 and "run `sesh-archive push` first" in r.output


def test_push_needs_a_postgres_url(tmp_path, monkeypatch):
    a = machine_b(tmp_path, threads=1, n=3)
    monkeypatch.delenv("SESH_ARCHIVE_PUSH_URL", raising=False)
    r = CliRunner().invoke(cli, ["--db", str(a), "push"])
    assert r.exit_code == 2 and "SESH_ARCHIVE_PUSH_URL" in r.output
    r = CliRunner().invoke(cli, ["--db", str(a), "push", "mysql://x/y"])
    assert r.exit_code == 1 and "not a PostgreSQL URL" in r.output


def test_nul_characters_arrive_as_replacement_characters(tmp_path, pg_url):
    """PostgreSQL text cannot hold NUL: the batch is sent again with U+FFFD in the text columns
    and the exact value in the block's extra."""
    import orjson

    lines = canonical_lines("nul-thread", 4)
    msg = orjson.loads(lines[1])
    msg["content"][0]["text"] = "before\x00after"
    lines[1] = orjson.dumps(msg)
    p = tmp_path / "nul.jsonl"
    write_lines(p, lines)
    db = open_db(tmp_path / "n.db")
    ingest_paths(db, [p], IngestOptions())
    assert db.execute("SELECT count(*) FROM blocks WHERE instr(text, char(0)) > 0").fetchone()[0] == 1
    s = push(db, pg_url, PushOptions(with_sources=True))
    assert s.rows["messages"] == 4
    conn = connect(pg_url)
    assert conn.execute("SELECT text FROM blocks WHERE message_id = 'nul-thread-m0' AND position = 0").fetchone()[0] == "before\ufffdafter"
    raw = conn.execute("SELECT data FROM source_lines ORDER BY \"offset\" LIMIT 1 OFFSET 1").fetchone()[0]
    assert bytes(raw) == lines[1]  # the source layer keeps the exact bytes
    # and the block keeps its exact text in extra: the message reads back as it was
    assert list(team.show(conn, "nul-thread").messages) == list(load_view(db, "nul-thread").messages)
    conn.close()


def _view_rows(rows, ndigits: int = 3) -> list[tuple]:
    out = []
    for r in rows:
        out.append(tuple(round(float(v), ndigits) if isinstance(v, float) or type(v).__name__ == "Decimal" else v
                         for v in r))  # fmt: skip
    return sorted(out, key=repr)


def test_team_views_mean_what_the_local_views_mean(tmp_path, monkeypatch, pg_url):
    """Row for row, on one machine's archive: the views both schemas share."""
    a = machine_a(tmp_path, monkeypatch)
    push(open_db(a), pg_url)
    db, conn = open_db(a), connect(pg_url)
    same = {
        "tool_stats": "tool_name, calls, errors, error_rate, without_result, avg_seconds, threads",
        "files_changed": "project, path, changes, threads, first_ts, last_ts",
        "superseded_messages": "message_id, thread_id",
        "conversation": "thread_id, message_id, role, ts, position, block_type, text, tool_name, call_id, is_error",
        "tool_calls": "thread_id, message_id, call_id, tool_name, call_ts, result_ts, duration_seconds, is_error",
        "thread_summary": "id, title, provider, cwd, model, parent_thread_id, created_at, first_ts, last_ts, "
                          "messages, user_turns, tool_calls, children, forked_from, forks",
        "projects": "project, threads, child_threads, first_created_at, last_created_at",
    }  # fmt: skip
    for view, cols in same.items():
        local = _view_rows(db.execute(f"SELECT {cols} FROM {view}").fetchall())
        if view == "files_changed":  # the team view has the file_change blocks only
            local = _view_rows(db.execute(
                "SELECT project, path, count(*), count(DISTINCT thread_id), min(ts), max(ts) FROM file_changes "
                "WHERE tool_name IS NULL GROUP BY project, path").fetchall())  # fmt: skip
        assert _view_rows(conn.execute(f"SELECT {cols} FROM {view}").fetchall()) == local, view
    # usage views: equal where the local one takes input_tokens as stored
    if neutral(db):
        for view in ("usage_daily", "usage_by_model", "usage_by_project", "thread_usage"):
            cols = "responses, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens"
            assert _view_rows(conn.execute(f"SELECT {cols} FROM {view}").fetchall()) == _view_rows(
                db.execute(f"SELECT {cols} FROM {view}").fetchall()), view  # fmt: skip
    conn.close()


def test_threads_and_messages_of_the_local_store_are_pushed(tmp_path, pg_url):
    """Rows appended through SqliteMessageStore (a pseudo-source with no generations) go too,
    and a thread it renames is renamed on the server."""
    from archive.model import Message, Text, Thread
    from archive.store import SqliteMessageStore

    path = tmp_path / "s.db"
    store = SqliteMessageStore(path)
    store.put_thread(Thread(id="notes", created_at="2026-01-01T00:00:00Z", title="first"))
    store.append_message(Message(id="n1", thread_id="notes", role="user", ts="2026-01-01T00:00:01Z", content=(Text("hi"),)))
    push(open_db(path), pg_url)
    conn = connect(pg_url)
    assert list(team.show(conn, "notes").messages) == list(load_view(open_db(path), "notes").messages)
    store.put_thread(Thread(id="notes", created_at="2026-01-01T00:00:00Z", title="renamed"))
    store.append_message(Message(id="n2", thread_id="notes", role="user", ts="2026-01-01T00:00:02Z", content=(Text("again"),)))
    s = push(open_db(path), pg_url)
    assert s.rows["messages"] == 2 and s.rows["threads"] == 1  # a store is sent whole when it grew
    assert team.load_threads(conn, "id = %s", ("notes",))[0].title == "renamed"
    assert [m.id for m in team.show(conn, "notes").messages] == ["n1", "n2"]
    assert conn.execute("SELECT count(*) FROM thread_facts").fetchone()[0] == open_db(path).execute(
        "SELECT count(*) FROM thread_facts").fetchone()[0]  # fmt: skip
    assert push(open_db(path), pg_url).sent == 0
    conn.close()


def test_files_larger_than_a_batch_go_in_parts(tmp_path, monkeypatch, pg_url, pg_server):
    """A generation larger than a batch is sent in parts, in order: the same tables, the
    source lines included, and a later append goes on from the last part."""
    import archive.push as push_module

    b = machine_b(tmp_path, threads=3, n=200, big=2000)
    monkeypatch.setattr(push_module, "BATCH_BYTES", 30_000)
    s = push(open_db(b), pg_url, PushOptions(with_sources=True))
    assert all((tmp_path / "home-b" / f"t{i}.jsonl").stat().st_size > 2 * 30_000 for i in range(3))
    assert s.batches >= 3 * 3  # each file is several parts
    whole = pg_server.new_database()
    monkeypatch.setattr(push_module, "BATCH_BYTES", 10**9)
    push(open_db(b), whole, PushOptions(with_sources=True))
    assert pg_dump(pg_url) == pg_dump(whole)
    path = tmp_path / "home-b" / "t1.jsonl"
    write_lines(path, canonical_lines("b-thread-1", 230, seed=1, big=2000))
    ingest_paths(open_db(b), [path], IngestOptions())
    monkeypatch.setattr(push_module, "BATCH_BYTES", 30_000)
    assert push(open_db(b), pg_url, PushOptions(with_sources=True)).rows["messages"] == 30
    push(open_db(b), whole, PushOptions(with_sources=True))
    assert pg_dump(pg_url) == pg_dump(whole)
    assert push(open_db(b), pg_url, PushOptions(with_sources=True)).sent == 0
