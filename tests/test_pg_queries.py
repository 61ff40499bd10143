"""One query layer for both backends (issue 34): the same queries (archive/query_core.py) on a
local archive and on the team database pushed from it give the same answers. Marker
``postgres`` (tests/pg_server.py starts the server).

The archive holds every vendor fixture (tests/vendor_home.py), the recorded forks of Claude
Code and Codex (tests/fixtures/recorded/*/fork) and a thread shared by two files; one push
carries it. Search is compared as the set of blocks found: the two full-text engines rank
and cut snippets their own way (README, docs/team.md).
"""

from __future__ import annotations

import pytest

from archive import queries
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.marks import note, star, tag
from archive.pg import connect
from archive.pg import queries as team
from archive.pricing import load_prices
from archive.thread_view import MessagePages, load_view
from archive.push import PushOptions, push
from archive.sql_dialect import POSTGRES, _format_style
from tests.test_forks import FORKS, session_files
from tests.test_push import machine_a

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, pg_server):
    """(local archive, team connection), the team database pushed from the archive."""
    tmp = tmp_path_factory.mktemp("both")
    with pytest.MonkeyPatch.context() as mp:
        path = machine_a(tmp, mp)
    db = open_db(path)
    for folder in FORKS:
        assert not ingest_paths(db, session_files(folder), IngestOptions(idle_seconds=10**9)).failed
    some = [r[0] for r in db.execute("SELECT id FROM threads ORDER BY id LIMIT 3")]
    tag(db.conn, some[0], ["flaky", "review"])
    star(db.conn, some[1])
    note(db.conn, some[2], "look again")
    url = pg_server.new_database()
    push(db, url, PushOptions(machine_name="alice"))
    conn = connect(url)
    yield db, conn
    conn.close()


def _filters(db) -> dict[str, queries.Filters]:
    F = queries.Filters
    rows = queries.threads(db, limit=None)
    ids = [r["id"] for r in rows]
    days = sorted({r["last_ts"][:10] for r in rows if r["last_ts"]})
    mid = days[len(days) // 2]
    projects = sorted({r["project"] for r in rows if r["project"]})
    return {
        "all": F(), "provider": F(provider=rows[0]["provider"]), "thread": F(thread=ids[0][:3]),
        "project dir": F(project=projects[0]), "project text": F(project=projects[-1][-4:]),
        "since day": F(since=mid), "until day": F(until=mid), "since instant": F(since=mid + "T12:00:00Z"),
        "window": F(since=days[0], until=mid + "T06:30:00"),
    }  # fmt: skip


def test_threads_are_the_same_on_both(both) -> None:
    db, conn = both
    prices = load_prices(None, env={})
    for name, f in _filters(db).items():
        for top_level in (False, True):
            for include_empty in (False, True):
                kw = dict(limit=None, top_level=top_level, include_empty=include_empty, prices=prices)
                assert team.threads(conn, f, **kw) == queries.threads(db, f, **kw), (name, top_level, include_empty)
        assert team.threads(conn, f, limit=3, offset=2) == queries.threads(db, f, limit=3, offset=2), name
    forks = [r for r in queries.threads(db, limit=None) if r["forked_from"]]
    assert forks and all(r["inherited_messages"] for r in forks)  # the lineage columns are compared too


def test_stats_by_each_key_are_the_same_on_both(both) -> None:
    db, conn = both
    prices = load_prices(None, env={})
    fs = _filters(db)
    bounds = [{}, {"since": fs["since day"].since}, {"until": fs["until day"].until},
              {"since": fs["since instant"].since}, {"since": fs["window"].since, "until": fs["window"].until},
              {"provider": fs["provider"].provider}]  # fmt: skip
    for by in queries.STATS_BY:
        for kw in bounds:
            mine = queries.stats(db, by, prices, **kw)
            assert mine["rows"] or kw, by
            assert team.stats(conn, by, prices, **kw) == mine, (by, kw)


def test_search_finds_the_same_blocks_on_both(both) -> None:
    db, conn = both

    def found(hits: list[dict]) -> list[tuple]:
        keys = ("thread_id", "thread_title", "provider", "project", "message_id", "role", "ts", "block_type",
                "tool_name", "also_in")  # fmt: skip
        return sorted(tuple(str(h[k]) for k in keys) for h in hits)

    fs = _filters(db)
    # words both tokenizers cut out the same way: the same blocks, filters applied alike
    for words in ("quokka", "python", "shared", "echo", "the"):
        for name, f in fs.items():
            mine = queries.search(db, words, f, limit=None, literal=True)
            theirs = team.search(conn, words, f, limit=None, literal=True)
            assert found(theirs) == found(mine), (words, name)
            assert all(h["snippet"][s:e].lower() == words for h in theirs for s, e in h["matches"])
    # FTS5's unicode61 also splits ``hello-app`` and ``hello.py``, PostgreSQL's simple parser keeps
    # them whole: the team finds a subset, each hit with the same columns
    for words in ("hello", "error", "test"):
        theirs = found(team.search(conn, words, limit=None, literal=True))
        assert theirs and set(theirs) <= set(found(queries.search(db, words, limit=None, literal=True))), words
    assert found(team.search(conn, "the", limit=None, kinds=["text"])) == found(
        queries.search(db, "the", limit=None, kinds=["text"]))
    assert len(team.search(conn, "the", limit=5, offset=3)) == 5
    assert any(h["also_in"] for h in team.search(conn, "the", limit=None))  # a fork's inherited message


def test_show_and_resolve_are_the_same_on_both(both) -> None:
    db, conn = both
    ids = [r["id"] for r in queries.threads(db, limit=None)]
    for tid in ids:
        mine, theirs = load_view(db, tid), team.show(conn, tid)
        assert (theirs.thread, theirs.summary, theirs.children) == (mine.thread, mine.summary, mine.children), tid
        # the same conversation; a tool output the vendor kept in a companion file is read in full
        # by the local archive only (the companions are not pushed)
        assert [m.id for m in theirs.messages] == [m.id for m in mine.messages], tid
        assert list(theirs.messages) == list(MessagePages(db, tid, full_outputs=False)), tid
    for ref in sorted({i[:n] for i in ids for n in (1, 3, 8)} | {"", "  ", "no-such-thread"}):
        answers = []
        for resolve in (lambda: queries.resolve_thread(db, ref), lambda: team.resolve_thread(conn, ref)):
            try:
                answers.append(resolve())
            except queries.ThreadNotFound as e:
                answers.append(("not found", str(e)))
            except queries.AmbiguousThread as e:
                answers.append(("ambiguous", str(e), e.candidates))
        assert answers[0] == answers[1], ref


def test_the_postgres_dialect_keeps_literals_and_percent_signs(both) -> None:
    _db, conn = both
    assert _format_style("SELECT '?', \"?\", x LIKE 'a%' AND y = ?") == "SELECT '?', \"?\", x LIKE 'a%%' AND y = %s"
    rows = POSTGRES.rows(conn, "SELECT '?' AS q, 'a%' LIKE ? AS hit, ? AS n", ("a\\%", 3))
    assert rows == [{"q": "?", "hit": True, "n": 3}]
