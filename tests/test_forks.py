"""Forks (issue 17), with the real clients' recordings: Claude Code ``--fork-session`` (a new
file repeating the original's messages with the same uuids) and ``codex fork`` (a new
rollout naming ``forked_from_id``, history not copied), each followed by the original
resumed.

* Ingest order changes nothing: every permutation of the files, one file per run, gives
  the same tables (local source ids replaced by the sources' uids).
* Each thread's view (``get_messages``) is the conversation its client sent to the mock at
  its last turn: inherited history first, then its own.
* Shared messages are stored once, and the fork knows its parent and fork point.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from clients import conversation as conv

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.store import SqliteMessageStore

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
FORKS = [RECORDED / "claude-code-2.1.197" / "fork", RECORDED / "codex-0.171.0" / "fork"]


def scenario(folder: Path) -> dict:
    return orjson.loads((folder / "scenario.json").read_bytes())


def session_files(folder: Path) -> list[Path]:
    return [folder / f for f in scenario(folder)["files"]]


def ingest_in_order(db_path: Path, files: list[Path]):
    db = open_db(db_path)
    for f in files:  # one run per file: a nightly archive sees them arrive one by one
        s = ingest_paths(db, [f], IngestOptions(idle_seconds=10**9))
        assert s.failed == 0
    return db


def order_free_dump(db) -> dict:
    """Every table, with each local source id (numbered in the order sources were first
    read) replaced by the source's uid, and paths left out."""
    uid = dict(db.execute("SELECT id, uid FROM sources").fetchall())
    out = {}
    for table, rows in dump_tables(db).items():
        if table in ("source_paths",):
            continue
        cols = [c.name for c in db[table].columns] if table in db.table_names() else []
        if table == "blocks":
            cols = [c for c in cols if c != "id"]
        if table == "sources":
            rows = [(r[1], *r[2:5]) for r in rows]  # uid, provider, kind, generation
        elif table == "source_lines":
            rows = [(uid[r[0]], *r[1:]) for r in rows]
        elif "source_id" in cols:
            i = cols.index("source_id")
            rows = [(*r[:i], uid.get(r[i], r[i]), *r[i + 1 :]) for r in rows]
        out[table] = sorted(rows, key=repr)
    return out


@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
def test_ingest_order_changes_no_table(folder: Path, tmp_path: Path) -> None:
    files = session_files(folder)
    dumps = []
    for i, order in enumerate(itertools.permutations(files)):
        db = ingest_in_order(tmp_path / f"{i}.db", list(order))
        dumps.append(order_free_dump(db))
        db.conn.close()
    assert len(dumps) == 2
    for table in dumps[0]:
        for d in dumps[1:]:
            assert d[table] == dumps[0][table], table


@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
@pytest.mark.parametrize("reverse", [False, True], ids=["files-in-order", "files-reversed"])
def test_each_thread_reads_as_its_client_sent_it(folder: Path, reverse: bool, tmp_path: Path) -> None:
    sc = scenario(folder)
    files = session_files(folder)
    db = ingest_in_order(tmp_path / "a.db", files[::-1] if reverse else files)
    db.conn.close()
    store = SqliteMessageStore(tmp_path / "a.db")
    original, fork = sc["sessions"]
    by_prompt = {k: conv.from_json(v) for k, v in sc["conversations_by_prompt"].items()}
    # the original continued with [fork-c], the fork with [fork-b]: each thread's view is
    # what its client sent with its last prompt, and the model's answer to it
    for tid, prompt in ((original, "[fork-c]"), (fork, "[fork-b]")):
        conv.assert_same(by_prompt[prompt], conv.from_canonical(store.get_messages(tid)))
    t = store.get_thread(fork)
    assert t is not None and t.parent_thread_id == original and (t.metadata or {}).get("forkedFrom") == original
    trunk = store.get_messages(original)
    assert t.origin_message_id in [m.id for m in trunk]
    # paging works on the view too
    view = store.get_messages(fork)
    assert store.get_messages(fork, after_id=view[1].id, limit=2) == view[2:4]
    # shared history stored once, in the original
    conn = store.conn
    assert conn.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (fork,)).fetchone()[0] == 2
    # every response counted once, attributed to the thread it was first written in
    assert conn.execute("SELECT count(*) FROM usage WHERE thread_id = ?", (fork,)).fetchone()[0] == 1


@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
def test_a_byte_exact_copy_of_a_fork_brings_what_its_client_reads(folder: Path, tmp_path: Path) -> None:
    """A Codex fork reads its parent's rollout: the copy holds both, byte for byte. A Claude
    Code fork file repeats the history: it stands alone, and the original's copy does not
    take the fork's file along as a child."""
    from archive.emit import emit_thread

    sc = scenario(folder)
    db = ingest_in_order(tmp_path / "a.db", session_files(folder))
    original, fork = sc["sessions"]
    by_name = {f.name: f.read_bytes() for f in session_files(folder)}
    out = emit_thread(db, fork, sc["vendor"])
    assert out.exact and out.target_id == fork
    names = {Path(rel).name for rel in out.files}
    wanted = set(by_name) if sc["vendor"] == "codex" else {f"{fork}.jsonl"}
    assert names == wanted
    for rel, data in out.files.items():
        assert data == by_name[Path(rel).name]
    out = emit_thread(db, original, sc["vendor"])
    assert out.exact and {Path(rel).name for rel in out.files} == {n for n in by_name if original in n}


def test_threads_and_show_give_the_lineage_and_count_inherited_tokens_apart(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from archive.cli import cli

    sc = scenario(FORKS[0])
    original, fork = sc["sessions"]
    db = ingest_in_order(tmp_path / "a.db", session_files(FORKS[0]))
    total = db.execute("SELECT sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) FROM usage").fetchone()[0]
    summary = {r[0]: r[1:] for r in db.execute("SELECT id, forked_from, forks, children, messages, tokens FROM thread_summary")}
    assert summary[fork][:4] == (original, 0, 0, 2) and summary[original][:3] == (None, 1, 0)
    assert summary[fork][4] + summary[original][4] == total  # Datasette's view counts each response once too
    db.conn.close()
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "threads", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert set(rows) == {original, fork}  # a fork is listed as a session of its own
    assert rows[fork]["forked_from"] == original and rows[original]["forked_from"] is None
    assert rows[fork]["inherited_messages"] == 4 and rows[fork]["messages"] == 2 and rows[original]["children"] == 0
    # each response counted once, in the thread it was first written in; the fork's
    # inherited responses shown apart
    assert rows[fork]["total_tokens"] + rows[original]["total_tokens"] == total
    assert 0 < rows[fork]["inherited_tokens"] < rows[original]["total_tokens"]
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "stats", "--by", "thread", "--json"])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    by_thread = {r["key"]: r for r in stats["rows"]}
    assert stats["total"]["total_tokens"] == total == sum(r["total_tokens"] for r in stats["rows"])
    assert by_thread[fork]["forked_from"] == original and by_thread[fork]["inherited_tokens"] == rows[fork]["inherited_tokens"]
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "stats", "--thread", original, "--json"])
    assert json.loads(res.stdout)["total"]["total_tokens"] == rows[original]["total_tokens"]  # its forks are not its subagents
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "search", "--json", "trunk"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)  # stored once, in the original; the fork's conversation has it too
    assert hits and all(h["thread_id"] == original and h["also_in"] == [fork] for h in hits)
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "search", "--json", "forked path"])
    assert [(h["thread_id"], h["also_in"]) for h in json.loads(res.stdout)] == [(fork, [])]
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "show", fork])
    assert res.exit_code == 0, res.output
    assert f"forked from: {original}" in res.stdout and "[fork-a] Run a command." in res.stdout
    body = res.stdout.split("\n\n", 1)[1]  # after the header (its label is the fork's prompt)
    assert body.index("[fork-a]") < body.index("[fork-b]")


def test_the_conversation_page_of_a_fork_starts_with_its_inherited_history(tmp_path: Path) -> None:
    from archive.pricing import load_prices
    from archive.web.conversation import load_page, locate, prompts

    sc = scenario(FORKS[0])
    original, fork = sc["sessions"]
    db = ingest_in_order(tmp_path / "a.db", session_files(FORKS[0]))
    page = load_page(db.conn, fork, 1, load_prices(), {})
    assert page is not None and page["count"] == 6
    texts = [b["text"] for m in page["messages"] for b in m["blocks"] if b["type"] == "text"]
    assert texts[0] == "[fork-a] Run a command." and "[fork-b] Take another path." in texts
    assert [m.get("inherited_from") for m in page["messages"]] == [original] * 4 + [None] * 2
    small = load_page(db.conn, fork, 2, load_prices(), {}, page_size=3)  # a page across the fork point
    assert small is not None and [m.get("inherited_from") for m in small["messages"]] == [original, None, None]
    assert locate(db.conn, fork, message=page["messages"][0]["id"], page_size=3) == 1
    assert locate(db.conn, fork, message=page["messages"][-1]["id"], page_size=3) == 2
    assert [p["text"] for p in prompts(db.conn, fork)] == ["[fork-a] Run a command.", "[fork-b] Take another path."]


@pytest.mark.postgres
@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
def test_the_team_store_gives_each_fork_its_whole_conversation(folder: Path, tmp_path: Path, pg_url: str) -> None:
    from archive.push import push
    from archive.store import PostgresMessageStore

    sc = scenario(folder)
    db = ingest_in_order(tmp_path / "a.db", session_files(folder)[::-1])
    push(db, pg_url)
    local, team = SqliteMessageStore(tmp_path / "a.db"), PostgresMessageStore(pg_url)
    for tid in sc["sessions"]:
        assert [m.id for m in team.get_messages(tid)] == [m.id for m in local.get_messages(tid)], tid
    from archive import queries
    from archive.pg import connect
    from archive.pg import queries as team_queries

    with connect(pg_url) as conn:  # the team's thread list gives the same lineage and counts
        assert team_queries.threads(conn, limit=None, top_level=True) == queries.threads(db, limit=None, top_level=True)
    fork = sc["sessions"][1]
    view = local.get_messages(fork)
    assert [m.id for m in team.get_messages(fork, after_id=view[0].id, limit=3)] == [m.id for m in view[1:4]]


# A message shared by two threads is owned by the thread created first (projection._before),
# ranked when a copy arrives. That rank is order-free only if a thread's createdAt is known
# by the time its first message is: the parser yields it no later than the line of the
# thread's first message (a later createdAt would not re-rank messages already owned).
from test_contract import CASES as _CASES  # noqa: E402
from test_contract import parse as _parse  # noqa: E402

from archive.vendors.base import MessageRow, ThreadFact  # noqa: E402


@pytest.mark.parametrize("adapter,path", _CASES)
def test_created_at_comes_no_later_than_a_threads_first_message(adapter, path: Path) -> None:
    first_message: dict[str, int] = {}
    created: dict[str, int] = {}
    for offset, row in _parse(adapter, path):
        if isinstance(row, MessageRow):
            first_message.setdefault(row.message.thread_id, offset)
        elif isinstance(row, ThreadFact) and row.fields.get("createdAt"):
            created.setdefault(row.thread_id, offset)
    late = {t: (created[t], first_message[t]) for t in first_message if t in created and created[t] > first_message[t]}
    assert late == {}, late


def _named_machine(db_path: Path, machine_id: str) -> None:
    """Give the archive its push identity now, to choose which machine id sorts first."""
    db = open_db(db_path)
    db.execute("INSERT INTO push_machine (id, name, created_at) VALUES (?, ?, '2026-11-30T00:00:00+00:00')",
               (machine_id, machine_id))  # fmt: skip
    db.conn.commit()
    db.conn.close()


def _team_forks(url: str) -> dict:
    """What ownership and lineage decide on the team database, machine ids left out."""
    from archive.pg import connect

    with connect(url) as conn:
        q = lambda sql: sorted(tuple(r) for r in conn.execute(sql).fetchall())  # noqa: E731
        return {
            "owners": q('SELECT id, thread_id, source_uid, generation, "offset", sub FROM messages'),
            "occurrences": q('SELECT DISTINCT source_uid, generation, "offset", sub, message_id, thread_id '
                             "FROM message_occurrences"),  # fmt: skip
            "lineage": q("SELECT * FROM thread_lineage"),
            "threads": q("SELECT id, parent_thread_id, origin_message_id, metadata::text FROM threads"),
            "usage": q("SELECT key, thread_id FROM usage"),
        }


def _local_forks(db) -> dict:
    uid = dict(db.execute("SELECT id, uid FROM sources").fetchall())
    q = lambda sql: sorted(tuple(r) for r in db.execute(sql).fetchall())  # noqa: E731
    return {
        "owners": sorted((i, t, uid[s], g, o, sub) for i, t, s, g, o, sub in db.execute(
            "SELECT id, thread_id, source_id, generation, offset, sub FROM messages").fetchall()),  # fmt: skip
        "occurrences": sorted((uid[s], g, o, sub, m, t) for s, g, o, sub, m, t in db.execute(
            "SELECT source_id, generation, offset, sub, message_id, thread_id FROM message_occurrences").fetchall()),  # fmt: skip
        # the server keeps no kind (fork or hand-off): its store reads it from the thread's metadata
        "lineage": q("SELECT thread_id, parent_thread_id, origin_message_id FROM thread_lineage"),
        "threads": q("SELECT id, parent_thread_id, origin_message_id, metadata FROM threads"),
        "usage": q("SELECT key, thread_id FROM usage"),
    }


@pytest.mark.postgres
@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
def test_the_team_copy_of_a_shared_message_is_the_originals_whatever_the_push_order(
    folder: Path, tmp_path: Path, pg_server
) -> None:
    """Issue 17's rule on the team database: a message copied into a fork belongs to the
    thread created first, as in one archive holding both files. Machine F has only the
    fork's file, machine B both; they push in both orders, and F's id sorts first or last
    (the thread row comes from the smallest machine id); then one machine that ingests and
    pushes the fork before its original. Every time the team database ends with the owners,
    lineage, thread rows and usage threads of the archive that holds both."""
    import shutil

    from archive.push import push
    from archive.store import PostgresMessageStore
    from tests.test_push import pg_dump

    sc = scenario(folder)
    original, fork = sc["sessions"]
    files = session_files(folder)
    fork_file = [f for f in files if fork in f.name]
    assert len(fork_file) == 1
    reference = ingest_in_order(tmp_path / "both.db", files)
    expected = _local_forks(reference)
    if folder.parent.name.startswith("claude"):  # the history is copied: shared messages
        assert any(t != original for _i, t, *_k in expected["owners"]) and expected["lineage"]
    ingest_in_order(tmp_path / "fork.db", fork_file).conn.close()
    local = SqliteMessageStore(tmp_path / "both.db")

    dumps = {}
    for fork_id, both_id in (("0" * 32, "f" * 32), ("f" * 32, "0" * 32)):
        for order in ("fork-first", "both-first"):
            paths = {}
            for name, mid in (("fork", fork_id), ("both", both_id)):
                paths[name] = tmp_path / f"{name}-{fork_id[0]}-{order}.db"
                shutil.copy(tmp_path / f"{name}.db", paths[name])
                _named_machine(paths[name], mid)
            url = pg_server.new_database()
            for name in (("fork", "both") if order == "fork-first" else ("both", "fork")):
                push(open_db(paths[name]), url)
            got = _team_forks(url)
            assert got == expected, (fork_id[0], order)
            team = PostgresMessageStore(url)
            for tid in sc["sessions"]:
                assert [m.id for m in team.get_messages(tid)] == [m.id for m in local.get_messages(tid)], (tid, order)
            team.close()
            dumps[(fork_id, order)] = pg_dump(url)
        # the same machines give the same tables whatever order they pushed in
        assert dumps[(fork_id, "fork-first")] == dumps[(fork_id, "both-first")]

    # one machine: the fork ingested and pushed, then its original
    one = tmp_path / "one.db"
    url = pg_server.new_database()
    db = ingest_in_order(one, fork_file)
    push(db, url)
    db = ingest_in_order(one, files)
    push(db, url)
    assert _team_forks(url) == expected
    clean = pg_server.new_database()  # as one clean push of that archive
    push(open_db(one), clean)
    assert pg_dump(url) == pg_dump(clean)


@pytest.mark.postgres
@pytest.mark.parametrize("folder", FORKS, ids=lambda f: f.parent.name)
def test_a_fork_and_its_original_in_batches_written_at_once(folder: Path, tmp_path: Path, pg_server, monkeypatch) -> None:
    """One push, a batch per file, the batches written at once by several connections: the
    copies of a message may commit before the message or beside it, so no batch sees both.
    The team database still ends with the owners, lineage and usage threads of the archive,
    and so does a push killed once every batch had committed, then run again."""
    import archive.push as push_module
    from archive.push import push
    from tests.test_push import pg_dump

    db = ingest_in_order(tmp_path / "both.db", session_files(folder))
    expected = _local_forks(db)
    one_batch = pg_server.new_database()
    push(db, one_batch)
    monkeypatch.setattr(push_module, "BATCH_BYTES", 4000)  # a batch per 4 kB of a file
    for _ in range(3):  # which batch commits first varies from run to run
        url = pg_server.new_database()
        push(db, url)
        assert _team_forks(url) == expected
        assert pg_dump(url) == pg_dump(one_batch)

    def killed(self) -> None:
        raise KeyboardInterrupt  # as a SIGKILL after the last batch committed

    url = pg_server.new_database()
    with monkeypatch.context() as m:
        m.setattr(push_module._Pusher, "_send_threads", killed)
        with pytest.raises(KeyboardInterrupt):
            push(db, url)
    again = push(db, url)  # every batch had landed: the rerun sends the thread rows and settles
    # (and the threads' signals, which the killed push, stopped before them, had not sent)
    assert again.generations == 0 and set(again.rows) == {"threads", "signals"}
    assert _team_forks(url) == expected
    assert pg_dump(url) == pg_dump(one_batch)
