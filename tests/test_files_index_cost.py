"""The file index's cost in a first ingest (issue 42): the shortcuts that make it cheap give
the answers the plain reading gives (archive/file_index.py, derived.py, vendors/tool_paths.py;
the numbers: docs/file-history.md, "Cost and speed")."""

from __future__ import annotations

import random
import shlex
import sqlite3
from pathlib import Path

import orjson
import pytest

from archive import derived, file_index
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.vendors import get as get_adapter
from archive.vendors.tool_paths import default_touched_paths, may_name_paths, shell_paths, shell_tokens

FIX = Path(__file__).parent / "fixtures"
VENDOR_FIXTURES = ("claude-code", "codex", "copilot", "opencode", "pi", "gemini", "qwen", "clm")


def _shlex(command: str) -> list[str]:
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    return list(lex)


@pytest.fixture(scope="module")
def fixtures_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cost") / "a.db"
    db = open_db(path)
    ingest_paths(db, [FIX / v for v in VENDOR_FIXTURES])
    db.conn.close()
    return path


@pytest.mark.parametrize("command", [
    "cat src/a.py", "head -n 20 a.log&&tail -5 b.log", "echo hi >out.txt 2>&1", "(cd x; rm y.txt)|wc -l",
    "a\tb\r\nc", "x\x0by", "cat ~/é.txt", "rm  -f  build/old.log ;", "cat a>>b<c", "", " ", "|&;",
    "sed -i 's/a/b/' x.txt", "cat 'docs/a b.md'", "cat a\\ b.txt", "ls # a comment", "cat \"open",
])  # fmt: skip
def test_shell_tokens_are_shlex_s(command: str) -> None:
    try:
        expected: list[str] | type[ValueError] = _shlex(command)
    except ValueError:
        expected = ValueError
    if expected is ValueError:
        with pytest.raises(ValueError):
            shell_tokens(command)
    else:
        assert shell_tokens(command) == expected


def test_shell_tokens_are_shlex_s_on_random_commands() -> None:
    rng = random.Random(42)
    alphabet = "ab /.-_~=*?;&|()<>\t\r\n\x0b\u00a0é$:,@%+2"
    for _ in range(20000):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert shell_tokens(command) == _shlex(command), repr(command)


def test_shell_paths_are_the_same_when_asked_again() -> None:
    # memoised: the second answer comes from the cache and is the same, as a fresh iterator
    for command in ("cat a.py b.py", "mv x.txt y.txt", "ls"):
        first = list(shell_paths(command))
        assert list(shell_paths(command)) == first


@pytest.mark.parametrize("kind,raw,may", [
    ("search", '{"query": "auth", "limit": 5}', False),
    ("search", '{"pattern": "x", "path": "src"}', True),
    ("edit", '{"file_path": "a.py", "old_string": "x"}', True),
    ("shell", '{"description": "a path"}', False),
    ("shell", '{"command": "cat a.py"}', True),
    ("shell", '{"cmd": ["bash", "-lc", "cat a.py"]}', True),
    ("read", '{"p\\u0061th": "a.py"}', True),  # a key with escaped letters: read it
    ("apply_patch", "*** Begin Patch\n*** Add File: a.py\n", True),  # not JSON: the patch itself
    ("apply_patch", '{"x": 1}\n*** Add File: a.py', True),  # a line of its own: a patch header
    ("apply_patch", '"*** Begin Patch\\n*** Add File: a.py\\n"', True),  # a JSON string
])  # fmt: skip
def test_a_call_is_parsed_only_when_it_may_name_a_path(kind: str, raw: str, may: bool) -> None:
    assert may_name_paths(kind, raw) is may
    if not may:
        assert list(default_touched_paths(kind, raw)) == []
    if kind == "read":
        assert list(default_touched_paths(kind, raw)) == [("a.py", "read")]


def test_the_reader_gives_what_each_call_names_in_every_vendor_fixture(fixtures_db: Path) -> None:
    conn = sqlite3.connect(fixtures_db)
    rows = conn.execute(
        "SELECT t.provider, coalesce(t.cwd, p.cwd), m.id, m.ts, b.position, b.type, b.tool_name, b.input, b.path "
        "FROM blocks b JOIN messages m ON m.id = b.message_id JOIN threads t ON t.id = m.thread_id "
        "LEFT JOIN threads p ON p.id = t.parent_thread_id WHERE b.type IN ('tool_call', 'file_change') ORDER BY m.id, b.position"
    ).fetchall()
    assert len(rows) > 100
    skipped = 0
    for provider, cwd, *block in rows:
        got = file_index.touches(provider, cwd, [tuple(block)])
        # the plain reading: every call parsed, every path normalised
        mid, ts, pos, btype, name, inp, bpath = block
        adapter = get_adapter(provider)
        if btype == "file_change":
            found = [(bpath, "changed")] if bpath else []
        else:
            found = list(file_index.call_touches(adapter, name, inp)) if inp else []
            kind = adapter.tool_kinds.get(name or "") if (name or "") in adapter.tool_kinds else file_index._any_kind(name)
            skipped += not may_name_paths(kind, inp) if inp else 0
        expected, seen = [], set()
        for written, action in found:
            path = file_index.normalise(written, cwd)
            if path and path != "." and (path, action) not in seen:
                seen.add((path, action))
                expected.append((mid, pos, len(seen) - 1, ts, path, path.rsplit("/", 1)[-1] or path, action, name))
        assert got == expected, (provider, name, inp)
    assert skipped > 0  # the fixtures have calls that name no path, and they are not parsed


def _index_sql(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'file_touches' ORDER BY name").fetchall()


def test_an_empty_index_is_filled_without_its_indexes_then_they_are_built(fixtures_db: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    db = open_db(tmp_path / "copy.db")
    db.conn.close()
    src = sqlite3.connect(fixtures_db)
    dst = sqlite3.connect(tmp_path / "copy.db")
    src.backup(dst)
    src.close()
    conn = dst
    conn.isolation_level = None
    tables = ("file_touches", "thread_signals")
    before = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    schema = _index_sql(conn)
    assert len(schema) >= 5 and before["file_touches"]
    threads = conn.execute("SELECT count(*) FROM threads").fetchone()[0]
    monkeypatch.setattr(derived, "BULK_THREADS", threads)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM file_touches")
    conn.execute("INSERT INTO _derived_dirty SELECT id FROM threads")
    assert derived.refresh(conn) == threads
    conn.execute("COMMIT")
    conn.set_trace_callback(None)
    assert {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables} == before
    assert _index_sql(conn) == schema
    # no per-thread delete (nothing to delete, and no index to find it by), each index built once
    assert not [s for s in statements if s.startswith("DELETE FROM file_touches WHERE")]
    assert sum(s.startswith("DROP INDEX") for s in statements) == len(schema) - 2  # the table, its key
    assert sum(s.startswith("CREATE INDEX") for s in statements) == len(schema) - 2
    # fewer threads than BULK_THREADS: row by row, the indexes kept
    statements.clear()
    conn.set_trace_callback(statements.append)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM file_touches")
    conn.execute("INSERT INTO _derived_dirty SELECT id FROM threads LIMIT 3")
    derived.refresh(conn)
    conn.execute("ROLLBACK")
    assert not [s for s in statements if s.startswith(("DROP INDEX", "CREATE INDEX"))]


def test_a_failure_while_filling_leaves_the_indexes_in_place(fixtures_db: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    conn = sqlite3.connect(tmp_path / "copy.db", isolation_level=None)
    src = sqlite3.connect(fixtures_db)
    src.backup(conn)
    schema = _index_sql(conn)
    monkeypatch.setattr(derived, "BULK_THREADS", 1)
    calls = []

    def failing(c: sqlite3.Connection, tid: str, *, fresh: bool = False) -> None:
        calls.append(fresh)
        if len(calls) == 3:
            raise RuntimeError("killed")

    monkeypatch.setattr(derived, "refresh_thread", failing)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM file_touches")
    conn.execute("INSERT INTO _derived_dirty SELECT id FROM threads")
    with pytest.raises(RuntimeError):
        derived.refresh(conn)
    assert calls == [True, True, True]
    assert _index_sql(conn) == schema  # inside the transaction, before any rollback
    conn.execute("ROLLBACK")
    assert _index_sql(conn) == schema


def test_signals_do_not_parse_extra_for_an_adapter_that_marks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from archive import signals

    parsed: list[str] = []

    class Counting:
        @staticmethod
        def loads(text: str) -> object:
            parsed.append(text)
            return orjson.loads(text)

    monkeypatch.setattr(signals, "orjson", Counting)

    messages = [("m1", "user", "2026-11-29T10:00:00Z", 0, "{not json", "hi"),
                ("m2", "assistant", "2026-11-29T10:00:05Z", 0, '{"subtype": "compact_boundary"}', "ok")]  # fmt: skip
    blocks = [("m1", "text", None, None, None, None, True), ("m2", "text", None, None, None, None, True)]
    seen: list[object] = []

    def signal_of(role: str, text: str | None, extra: dict[str, object]) -> str | None:
        seen.append(extra)
        return "compaction" if extra.get("subtype") == "compact_boundary" else None

    assert signals.compute(messages, blocks, [], signal_of)["compactions"] == 1
    assert seen == [{}, {"subtype": "compact_boundary"}]
    assert parsed == ["{not json", '{"subtype": "compact_boundary"}']
    parsed.clear()
    s = signals.compute(messages, blocks, [], None)
    assert s["compactions"] == 0 and s["ending"] == "completed" and s["duration_seconds"] == 5.0
    assert parsed == []
    assert orjson.loads(messages[1][4])  # the message is as it was


def _plain_signals(conn: sqlite3.Connection, thread_id: str, provider: str) -> dict[str, object]:
    """The signals by their definition (``signals.compute``) over lists read whole, as the
    derived pass read them before it became one pass."""
    from archive import signals
    from archive.vendors.base import Adapter

    rows = conn.execute(
        "SELECT m.id, m.role, m.ts, m.injected, m.extra, b.position, b.type, b.tool_name, b.input, b.call_id, "
        "b.is_error, CASE WHEN b.type = 'text' THEN substr(b.text, 1, ?) END FROM messages m LEFT JOIN blocks b "
        "ON b.message_id = m.id AND b.type IN ('text', 'tool_call', 'tool_result', 'file_change') "
        "WHERE m.thread_id = ? ORDER BY m.source_id, m.generation, m.offset, m.sub, b.position",
        (derived.TEXT_PREFIX, thread_id),
    ).fetchall()
    messages: dict[str, list[object]] = {}
    blocks = []
    for mid, role, ts, injected, extra, pos, btype, name, inp, call_id, is_error, text in rows:
        m = messages.setdefault(mid, [mid, role, ts, injected, extra, None])
        if pos is None:
            continue
        if btype == "text" and text and m[5] is None:
            m[5] = text
        inp = inp if btype in ("tool_call", "file_change") else None
        blocks.append((mid, btype, name, inp or None, call_id, is_error, bool(text and text.strip())))
    touches = [r[1:] for r in conn.execute(
        "SELECT thread_id, message_id, position, seq, ts, path, name, action, tool_name FROM file_touches "
        "WHERE thread_id = ?", (thread_id,))]  # fmt: skip
    adapter = get_adapter(provider)
    signal_of = adapter.message_signal if type(adapter).message_signal is not Adapter.message_signal else None
    return signals.compute([tuple(m) for m in messages.values()], blocks, touches, signal_of)


def test_the_one_pass_signals_are_the_signals_computed_from_whole_lists(fixtures_db: Path) -> None:
    conn = sqlite3.connect(fixtures_db)
    cols = [d[1] for d in conn.execute("PRAGMA table_info(thread_signals)")]
    threads = conn.execute("SELECT id, provider FROM threads ORDER BY id").fetchall()
    assert len(threads) > 20
    outcomes = set()
    for tid, provider in threads:
        row = dict(zip(cols, conn.execute("SELECT * FROM thread_signals WHERE thread_id = ?", (tid,)).fetchone()))
        expected = _plain_signals(conn, tid, provider)
        assert {k: row[k] for k in expected} == expected, (provider, tid)
        outcomes.add(row["ending"])
    assert outcomes >= {"completed", "open"}


def test_the_tally_gives_compute_s_signals_in_any_interleaving_of_messages_and_blocks() -> None:
    from archive import signals

    rng = random.Random(7)
    marks = {"compact": "compaction", "[Request interrupted by user": "interrupted"}

    def signal_of(role: str, text: str | None, extra: dict[str, object]) -> str | None:
        return next((v for k, v in marks.items() if text and text.startswith(k)), None) or extra.get("kind")  # type: ignore[return-value]

    for _ in range(300):
        messages, blocks = [], []
        for i in range(rng.randint(0, 12)):
            mid = f"m{i}"
            ts = rng.choice([None, "bad", f"2026-11-29T10:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"])
            texts = []
            for _b in range(rng.randint(0, 4)):
                btype = rng.choice(["text", "tool_call", "tool_result", "file_change"])
                text = rng.choice(["", "  ", "ok", "compact", "[Request interrupted by user"]) if btype == "text" else None
                texts += [text] if text else []
                blocks.append((mid, btype, rng.choice(["Edit", "Bash"]), rng.choice([None, '{"a": 1}', '{"a": 2}']),
                               rng.choice([None, "c1", "c2"]), rng.choice([0, 1, None]), bool(text and text.strip())))  # fmt: skip
            messages.append((mid, rng.choice(["user", "assistant", "system"]), ts, rng.choice([0, 1]),
                             rng.choice(["{}", '{"kind": "compaction"}', "{bad", None]), texts[0] if texts else None))  # fmt: skip
        touches = [(f"m{i}", 0, 0, None, rng.choice(["/a", "/b"]), "a", rng.choice(["changed", "read"]), "Edit")
                   for i in range(rng.randint(0, 5))]  # fmt: skip
        for of in (signal_of, None):
            expected = signals.compute(messages, blocks, touches, of)
            # messages given as derived.py gives them: each after its blocks, or before them
            tally = signals.Tally(of)
            with_text = {b[0] for b in blocks if b[1] == "text" and b[6]}
            for m in messages:
                early = rng.random() < 0.5
                if early:
                    tally.message(*m[1:], m[0] in with_text)
                for b in blocks:
                    if b[0] == m[0]:
                        tally.block(*b[1:])
                if not early:
                    tally.message(*m[1:], m[0] in with_text)
            assert tally.result(signals.changed_paths(touches)) == expected
