"""One MessageStore contract, run against the memory, JSONL, SQLite and PostgreSQL implementations
(PostgreSQL: marker ``postgres``, a throwaway server from tests/pg_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.model import Attachment, Message, Provenance, Text, Thread, ToolCall, ToolResult, Usage
from archive.store import (
    JsonlMessageStore,
    MemoryMessageStore,
    MessageStore,
    PostgresMessageStore,
    SqliteMessageStore,
)


@pytest.fixture(params=["memory", "jsonl", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def make_store(request, tmp_path):
    def make():
        if request.param == "memory":
            return MemoryMessageStore()
        if request.param == "jsonl":
            return JsonlMessageStore(tmp_path / "store.jsonl")
        if request.param == "postgres":
            return PostgresMessageStore(request.getfixturevalue("pg_url"))
        return SqliteMessageStore(tmp_path / "archive.db")

    make.kind = request.param
    return make


def msg(i: int, thread: str = "t1", **kw) -> Message:
    return Message(
        id=f"{thread}-m{i}", thread_id=thread, role="user" if i % 2 == 0 else "assistant",
        ts=f"2026-01-01T00:00:{i:02d}Z", content=(Text(f"message {i}"),), **kw,
    )  # fmt: skip


def test_is_a_message_store(make_store):
    assert isinstance(make_store(), MessageStore)


def test_order_paging_and_limits(make_store):
    s = make_store()
    s.put_thread(Thread(id="t1", created_at="2026-01-01T00:00:00Z"))
    for i in (0, 1, 2, 3, 4):
        s.append_message(msg(i))
    ids = [m.id for m in s.get_messages("t1")]
    assert ids == [f"t1-m{i}" for i in range(5)]
    assert [m.id for m in s.get_messages("t1", after_id="t1-m1")] == ["t1-m2", "t1-m3", "t1-m4"]
    assert [m.id for m in s.get_messages("t1", after_id="t1-m1", limit=2)] == ["t1-m2", "t1-m3"]
    assert [m.id for m in s.get_messages("t1", limit=1)] == ["t1-m0"]
    assert s.get_messages("t1", limit=0) == []
    assert s.get_messages("t1", after_id="t1-m4") == []
    assert s.get_messages("t1", after_id="nope") == []


def test_append_order_not_timestamp_order(make_store):
    s = make_store()
    s.append_message(Message(id="b", thread_id="t", role="user", ts="2026-01-02T00:00:00Z"))
    s.append_message(Message(id="a", thread_id="t", role="user", ts="2026-01-01T00:00:00Z"))
    assert [m.id for m in s.get_messages("t")] == ["b", "a"]


def test_unknown_ids(make_store):
    s = make_store()
    assert s.get_thread("missing") is None
    assert s.get_messages("missing") == []
    assert s.list_threads() == []


def test_idempotent_reappend(make_store, tmp_path):
    s = make_store()
    s.append_message(msg(0))
    s.append_message(msg(1))
    s.append_message(msg(0))
    s.append_message(Message(id="t1-m0", thread_id="t1", role="user", ts=None, content=(Text("changed"),)))
    got = s.get_messages("t1")
    assert [m.id for m in got] == ["t1-m0", "t1-m1"]
    assert got[0] == msg(0)
    if make_store.kind == "jsonl":
        assert len((tmp_path / "store.jsonl").read_bytes().splitlines()) == 2


def test_filters_and_thread_round_trip(make_store):
    s = make_store()
    parent = Thread(id="p", created_at="2026-01-01T00:00:00Z", title="parent", metadata={"cwd": "/w"})
    child = Thread(id="c", created_at="2026-01-02T00:00:00Z", parent_thread_id="p", origin_message_id="p-m1",
                   agent_id="agent-1")  # fmt: skip
    other = Thread(id="o", created_at="2025-12-31T00:00:00Z", agent_id="agent-2")
    for t in (parent, child, other):
        s.put_thread(t)
    assert s.get_thread("p") == parent
    assert s.get_thread("c") == child
    assert [t.id for t in s.list_threads()] == ["o", "p", "c"]
    assert [t.id for t in s.list_threads(parent_thread_id="p")] == ["c"]
    assert [t.id for t in s.list_threads(agent_id="agent-2")] == ["o"]
    assert s.list_threads(agent_id="agent-1", parent_thread_id="x") == []
    renamed = Thread(id="p", created_at="2026-01-01T00:00:00Z", title="renamed")
    s.put_thread(renamed)
    assert s.get_thread("p") == renamed


def test_rich_messages_survive(make_store):
    s = make_store()
    m = Message(
        id="rich", thread_id="t", role="assistant", ts="2026-01-01T00:00:00Z", turn_id="u1", parent_id="u1",
        content=(
            Text("hi"),
            ToolCall("c1", "Bash", {"command": "ls", "n": [1, 2]}),
            ToolResult("c1", {"stdout": "x"}, True),
            ToolResult("c2", "plain", None),
            ToolResult("c3", None, False),
            Attachment(media_type="image/png", data="iVBORw0KGgo="),
        ),
        usage=Usage(input_tokens=3, output_tokens=4),
        provenance=Provenance("codex", session_id="s", source_id="item1"),
        raw={"x": 1},
        extra={"model": "gpt"},
    )  # fmt: skip
    s.append_message(m)
    assert s.get_messages("t") == [m]


def test_sqlite_store_reopens(tmp_path):
    path = tmp_path / "a.db"
    s = SqliteMessageStore(path)
    s.put_thread(Thread(id="t1", created_at="2026-01-01T00:00:00Z"))
    s.append_message(msg(0))
    s2 = SqliteMessageStore(path)
    assert [m.id for m in s2.get_messages("t1")] == ["t1-m0"]
    s2.append_message(msg(1))
    assert [m.id for m in SqliteMessageStore(path).get_messages("t1")] == ["t1-m0", "t1-m1"]


def test_jsonl_store_reopens(tmp_path):
    path = tmp_path / "s.jsonl"
    s = JsonlMessageStore(path)
    s.put_thread(Thread(id="t1", created_at="2026-01-01T00:00:00Z"))
    s.append_message(msg(0))
    again = JsonlMessageStore(path)
    assert again.get_messages("t1") == [msg(0)]
    assert again.get_thread("t1") == Thread(id="t1", created_at="2026-01-01T00:00:00Z")


from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.test_model import messages as message_strategy  # noqa: E402


_ROUND_TRIP_STORE: list[SqliteMessageStore] = []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message_strategy)
def test_property_sqlite_round_trip_is_lossless(tmp_path_factory, m):
    """Any message appended to the archive comes back equal (blocks, extras, blobs)."""
    import uuid

    from archive.model import replace

    if not _ROUND_TRIP_STORE:  # one database for every example: migrations are the slow part
        _ROUND_TRIP_STORE.append(SqliteMessageStore(tmp_path_factory.mktemp("rt") / "a.db"))
    store = _ROUND_TRIP_STORE[0]
    m = replace(m, id=uuid.uuid4().hex, thread_id=uuid.uuid4().hex)
    store.append_message(m)
    assert store.get_messages(m.thread_id) == [m]


def test_ingested_messages_carry_their_response_usage_through_every_store(tmp_path):
    """Each model response's usage is on the message that carries it, once: the archive's
    messages give back exactly the usage table, and copying them into the JSONL and memory
    stores keeps it."""
    import shutil

    from archive.ingest import IngestOptions, ingest_paths

    fixtures = Path(__file__).parent / "fixtures"
    for f in ("claude-code/recorded/cc-2.1.197-bash-resume.jsonl", "codex/recorded/codex-0.171.0-exec-resume.jsonl",
              "codex/lanegrid__agtrace__codex_session.jsonl"):  # fmt: skip
        shutil.copyfile(fixtures / f, tmp_path / Path(f).name)
    sqlite = SqliteMessageStore(tmp_path / "a.db")
    ingest_paths(sqlite.db, sorted(tmp_path.glob("*.jsonl")), IngestOptions(idle_seconds=10**9))
    expected = sorted(tuple(r) for r in sqlite.db.execute(
        "SELECT message_id, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens FROM usage"))  # fmt: skip
    assert len(expected) >= 10 and all(r[0] for r in expected)
    others = [JsonlMessageStore(tmp_path / "copy.jsonl"), MemoryMessageStore()]
    for store in [sqlite, *others]:
        if store is not sqlite:
            for t in sqlite.list_threads():
                store.put_thread(t)
                for m in sqlite.get_messages(t.id):
                    store.append_message(m)
        got = sorted(
            (m.id, m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens)
            for t in store.list_threads() for m in store.get_messages(t.id) if m.usage is not None
        )  # fmt: skip
        assert got == expected, type(store).__name__
    # Codex's cached input is not part of the neutral input; its own figure is kept beside it
    codex = [m.usage for t in sqlite.list_threads() for m in sqlite.get_messages(t.id)
             if m.usage is not None and (m.usage.extra or {}).get("vendor")]  # fmt: skip
    assert codex and all(u.input_tokens == u.extra["vendor"]["input_tokens"] - (u.cache_read_tokens or 0) for u in codex)


_PG_ROUND_TRIP: list[PostgresMessageStore] = []


@pytest.mark.postgres
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message_strategy)
def test_property_postgres_round_trip_is_lossless(pg_server, m):
    """Any message appended to the team database comes back equal (blocks, extras, blobs)."""
    import uuid

    from archive.model import replace

    if not _PG_ROUND_TRIP:
        _PG_ROUND_TRIP.append(PostgresMessageStore(pg_server.new_database()))
    store = _PG_ROUND_TRIP[0]
    m = replace(m, id=uuid.uuid4().hex, thread_id=uuid.uuid4().hex)
    store.append_message(m)
    assert store.get_messages(m.thread_id) == [m]
