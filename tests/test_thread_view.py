"""One thread view (issue 34): ``thread_view.load_view`` is the loader ``show``, ``emit``, the
conversation page, the MCP server and the MessageStore read a thread through.

* A fork's view is its parent's messages up to the fork point, then its own: the same list
  the MessageStore gives, whatever the page size, read whole or a range at a time.
* Ranges cross the boundary between inherited and own messages.
* A child thread's session is its parent's; a fork is a session of its own.
* Every surface builds its view here (counted on ``MessagePages``), and the walk of a thread
  from ``emit`` through the archive's modules stays within ten modules' turns.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.model import Message, Text, Thread
from archive.store import SqliteMessageStore
from archive.thread_view import MessagePages, load_view

FORK = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.197" / "fork"
PARENT, CHILD = "5193def9-0e19-4731-8fdf-55d4aa2ea904", "46667dc4-0d14-4c98-b67d-7ed952dd5690"


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fork") / "a.db"
    db = open_db(path)
    assert ingest_paths(db, [FORK / "projects"], IngestOptions(idle_seconds=10**9)).failed == 0
    db.conn.close()
    return path


def _fork_and_parent(db) -> tuple[str, str]:
    row = db.execute(
        "SELECT id, parent_thread_id FROM threads WHERE json_extract(metadata, '$.forkedFrom') = parent_thread_id"
    ).fetchone()
    assert row is not None, "the recording holds a fork"
    return row[0], row[1]


def test_a_forks_view_is_its_parents_history_then_its_own(forked: Path) -> None:
    db = open_db(forked)
    fork, parent = _fork_and_parent(db)
    assert {fork, parent} == {PARENT, CHILD}
    view = load_view(db, fork)
    ids = [m.id for m in view.messages]
    own = [r[0] for r in db.execute(
        "SELECT id FROM messages WHERE thread_id = ? ORDER BY source_id, generation, offset, sub", (fork,))]  # fmt: skip
    inherited = view.messages.inherited
    assert inherited and ids == inherited + own
    assert all(db.execute("SELECT thread_id FROM messages WHERE id = ?", (i,)).fetchone()[0] == parent for i in inherited)
    assert ids == [m.id for m in SqliteMessageStore(forked).get_messages(fork)]
    assert view.ancestors == [parent] and view.session == fork
    assert view.summary["inherited_messages"] == len(inherited)


@pytest.mark.parametrize("page", [1, 2, 3, 7, 500])
def test_ranges_and_pages_give_the_same_order(forked: Path, page: int) -> None:
    db = open_db(forked)
    fork, _ = _fork_and_parent(db)
    whole = [m.id for m in MessagePages(db, fork)]
    pages = MessagePages(db, fork, page)
    assert len(pages) == len(whole) and [m.id for m in pages] == whole
    for start in range(len(whole) + 1):
        for stop in range(start, len(whole) + 2):
            assert pages.ids(start, stop) == whole[start:stop]
    split = len(pages.inherited)  # a range across the fork point
    assert [m.id for m in pages.between(split - 1, split + 2)] == whole[split - 1 : split + 2]


def test_children_their_session_and_a_cap_on_summaries(tmp_path: Path) -> None:
    store = SqliteMessageStore(tmp_path / "a.db")
    store.put_thread(Thread(id="top", created_at="2026-01-01T00:00:00Z"))
    store.append_message(Message(id="t1", thread_id="top", role="user", ts="2026-01-01T00:00:01Z", content=[Text(text="go")]))
    for i in range(4):
        store.put_thread(Thread(id=f"agent-{i}", parent_thread_id="top", created_at=f"2026-01-0{i + 2}T00:00:00Z"))
        store.append_message(Message(id=f"a{i}", thread_id=f"agent-{i}", role="user", ts=f"2026-01-0{i + 2}T00:00:01Z", content=[Text(text=str(i))]))
    store.put_thread(Thread(id="agent-0/inner", parent_thread_id="agent-0", created_at="2026-01-09T00:00:00Z"))
    db = open_db(tmp_path / "a.db")
    view = load_view(db, "top")
    assert [c["id"] for c in view.children] == [f"agent-{i}" for i in range(4)] and view.children_total == 4
    assert view.descendants == ["agent-0", "agent-1", "agent-2", "agent-3", "agent-0/inner"]
    capped = load_view(db, "top", children=2)
    assert [c["id"] for c in capped.children] == ["agent-0", "agent-1"] and capped.children_total == 4
    assert load_view(db, "agent-0/inner").session == "top" and load_view(db, "agent-2").session == "top"
    bare = load_view(db, "top", summaries=False)
    assert bare.summary == {} and bare.children == [] and len(bare.messages) == 1


def test_every_surface_reads_the_thread_through_the_view(forked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """show, emit, the conversation page, the MCP tools and the MessageStore build MessagePages
    for the thread they read (a second loader would not)."""
    from click.testing import CliRunner

    from archive import agent_tools
    from archive.cli import cli as main
    from archive.emit import emit_thread
    from archive.serve import make_datasette

    made: list[str] = []
    real = MessagePages.__init__

    def counting(self, db, thread_id, *a, **k):  # type: ignore[no-untyped-def]
        made.append(thread_id)
        real(self, db, thread_id, *a, **k)

    monkeypatch.setattr(MessagePages, "__init__", counting)
    db = open_db(forked)
    fork, _ = _fork_and_parent(db)

    def surface(read) -> list[str]:  # type: ignore[no-untyped-def]
        made.clear()
        read()
        return list(made)

    assert fork in surface(lambda: CliRunner().invoke(main, ["--db", str(forked), "show", fork, "--no-pager"]))
    assert fork in surface(lambda: emit_thread(db, fork, "canonical"))
    assert fork in surface(lambda: emit_thread(db, fork, "markdown"))
    assert fork in surface(lambda: agent_tools.session_messages(db, fork))
    assert fork in surface(lambda: agent_tools.session_overview(db, fork))
    assert fork in surface(lambda: SqliteMessageStore(forked).get_messages(fork))

    async def page() -> int:
        ds = make_datasette(forked)
        return (await ds.client.get(f"/-/sesh/thread/{fork}")).status_code

    assert fork in surface(lambda: asyncio.run(page()) == 200)


def test_the_walk_of_a_thread_from_emit_stays_in_few_modules(forked: Path) -> None:
    """Issue 34: following the database handle from ``emit_thread`` through the archive's
    modules makes at most 10 stays (21 before the thread view): a stay is a run of calls that
    are handed the database in one module, and going back to a module already left starts a
    new one."""
    from archive.emit import emit_thread

    db = open_db(forked)
    fork, _ = _fork_and_parent(db)
    emit_thread(db, fork, "codex", exact=False)  # warm imports: only the walk is traced
    stays: list[str] = []

    def holds_the_database(frame) -> bool:  # type: ignore[no-untyped-def]
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            value = frame.f_locals.get(name)
            if isinstance(value, (Database, sqlite3.Connection, sqlite3.Cursor)):
                return True
            if name == "self" and isinstance(getattr(value, "conn", None), sqlite3.Connection):
                return True
        return False

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        mod = frame.f_globals.get("__name__", "")
        if event == "call" and mod.startswith("archive.") and holds_the_database(frame):
            if not stays or stays[-1] != mod:
                stays.append(mod)

    sys.setprofile(profile)
    try:
        emit_thread(db, fork, "codex", exact=False)
    finally:
        sys.setprofile(None)
    assert stays[0] == "archive.emit"
    assert len(stays) <= 10, stays
