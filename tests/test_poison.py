"""Bad values never stop the archive (issue 16): a line holding a value the database cannot
hold, or a lone surrogate escape, costs at most that line's projection. The line is kept
byte for byte and reported; its neighbours, the rest of its file and every other file are
archived in the same run; the rerun is a no-op."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore
from tests.ingest_helpers import canonical_lines, portable_dump, write_lines
from tests.poison import CLAUDE, CLAUDE_EMOJI, CODEX, KINDS, fresh_ids, poison_line
from tests.vendor_home import build_home, vendor_env


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


LIMIT = 1 << 20  # lines longer than this are refused (the default is 64 MiB)


def _ingest(db_path: Path, home: Path, order: list[str] | None = None):
    db = open_db(db_path)
    progress = (lambda path, _n: order.append(path)) if order is not None else None
    options = IngestOptions(env=vendor_env(home), idle_seconds=10**9, progress=progress, max_line_bytes=LIMIT)
    return db, ingest_paths(db, None, options)


def _messages(db) -> set[str]:
    return {r[0] for r in db.execute("SELECT id FROM messages")}


@pytest.mark.parametrize("kind", KINDS)
def test_poison_line_in_the_first_file_costs_only_that_line(tmp_path, kind):
    clean_lines = fresh_ids(CLAUDE.read_bytes(), "poison").splitlines()
    lines, bad = poison_line(clean_lines, kind)
    # the clean copy alone: what the poisoned file's neighbours must give
    alone = tmp_path / "alone" / "s.jsonl"
    alone.parent.mkdir()
    alone.write_bytes(b"\n".join(clean_lines) + b"\n")
    clean_db = open_db(tmp_path / "clean.db")
    ingest_paths(clean_db, [alone], IngestOptions(idle_seconds=10**9))
    clean_ids = _messages(clean_db)
    offset = sum(len(line) + 1 for line in lines[:bad])
    if kind == "long line":  # refused: its message is not projected, its neighbours are
        (lost,) = clean_db.execute("SELECT message_id FROM message_occurrences WHERE offset = ?", (offset,)).fetchone()
        clean_ids.remove(lost)

    ref_home = tmp_path / "ref"
    build_home(ref_home)
    ref, rs = _ingest(tmp_path / "ref.db", ref_home)
    assert rs.failed == 0

    home = tmp_path / "home"
    build_home(home)
    data = b"\n".join(lines) + b"\n"
    sid = orjson.loads(lines[1])["sessionId"]
    poisoned = home / ".claude" / "projects" / "-0-poison" / f"{sid}.jsonl"
    poisoned.parent.mkdir(parents=True)
    poisoned.write_bytes(data)
    order: list[str] = []
    db, s = _ingest(tmp_path / "x.db", home, order)
    # read before every other Claude Code file, and before most files of the run (vendors are
    # walked in registry order; files share transactions, so a fatal line would lose them)
    assert next(p for p in order if "/.claude/" in p) == str(poisoned), "the poisoned file must be read first"
    assert order.index(str(poisoned)) < len(order) // 2
    assert s.failed == 0 and not s.problems, s.problems
    assert len(order) == rs.files_changed + 1

    # every other file archived in the same run, and the poisoned file's lines too
    assert _messages(db) == _messages(ref) | clean_ids
    assert {r[0] for r in db.execute("SELECT uid FROM sources")} >= {r[0] for r in ref.execute("SELECT uid FROM sources")}
    reports = db.execute(
        "SELECT r.kind, r.reason, r.detail FROM reports r JOIN sources s ON s.id = r.source_id "
        "WHERE s.last_path = ? AND r.offset = ? AND r.kind IN ('invalid', 'warning', 'parse_error', 'adapter_error', 'refused')",
        (str(poisoned), offset),
    ).fetchall()
    expected = {"usage 2**63": ("invalid", "integer out of range"), "deep 320": ("invalid", "nested too deep"),
                "lone surrogate": ("warning", "lone surrogate"), "long line": ("refused", "line too long")}[kind]  # fmt: skip
    assert [r[:2] for r in reports] == [expected], reports

    if kind == "usage 2**63":
        (tokens,) = db.execute("SELECT output_tokens FROM usage WHERE output_tokens > 1e18").fetchone()
        assert tokens == 9223372036854775808  # as close as SQLite's REAL holds it
        result = CliRunner().invoke(cli, ["--db", str(tmp_path / "x.db"), "stats"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    if kind == "deep 320":
        (text,) = db.execute("SELECT input FROM blocks WHERE input LIKE '%poisoned%'").fetchone()
        value = orjson.loads(text)
        assert value["command"] == "poisoned" and isinstance(value["deep"]["a"], dict)
        assert '\\"leaf\\"' in text and text.count('{\\"a\\":') > 100  # the deep part, kept as JSON text
    if kind == "long line":
        assert reports[0][2].startswith(f"{len(lines[bad]):,} bytes")
        assert db.execute("SELECT count(*) FROM source_chunks WHERE first_offset >= ? AND end_offset <= ?",
                          (offset, offset + len(lines[bad]) + 1)).fetchone()[0] >= 2  # fmt: skip
    if kind == "lone surrogate":
        (text,) = db.execute("SELECT b.text FROM blocks b WHERE b.text LIKE '% \ufffd'").fetchone()
        assert text.startswith("mix phx.server")

    # lossless and idempotent
    (out,) = restore(db, tmp_path / "out", source=str(poisoned))
    assert out.sha256 == sha(data)
    before = dump_tables(db)
    db, s2 = _ingest(tmp_path / "x.db", home)
    assert s2.files_changed == 0 and s2.lines == 0
    assert dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before


def _cut_emoji(line: bytes, text: bytes) -> bytes:
    """``text`` in the line cut after the first half of an emoji, as Node writes it."""
    assert text in line
    return line.replace(text, text + b" \\ud83d", 1)


@pytest.mark.parametrize("vendor", ["claude-code", "codex"])
def test_lone_surrogate_is_parsed_with_a_warning(tmp_path, vendor):
    if vendor == "claude-code":
        lines = CLAUDE_EMOJI.read_bytes().splitlines()
        i = 3
        # the real line holds "# 🚨 SESSION CLOSE PROTOCOL 🚨"; the client cut the first emoji
        lines[i] = lines[i].replace("🚨".encode(), b"\\ud83d", 1)
        needle = "\ufffd SESSION CLOSE PROTOCOL"
        path = tmp_path / "in" / "agent-acompact-e1f845.jsonl"
    else:
        lines = CODEX.read_bytes().splitlines()
        i = next(n for n, line in enumerate(lines) if b'"text":"say hi and run echo"' in line)
        lines[i] = _cut_emoji(lines[i], b"say hi and run echo")
        needle = "say hi and run echo \ufffd"
        path = tmp_path / "in" / "rollout-2026-11-30T00-31-20-01a229dd-03c9-7373-8563-568dd22f194d.jsonl"
    assert b"\\ud83d" in lines[i]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(lines[i])
    path.parent.mkdir()
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    db = open_db(tmp_path / "x.db")
    s = ingest_paths(db, [path], IngestOptions(idle_seconds=10**9))
    assert s.reports["parse_error"] == 0 and s.reports["warning"] >= 1
    offset = sum(len(line) + 1 for line in lines[:i])
    assert db.execute("SELECT kind, reason FROM reports WHERE offset = ? AND kind = 'warning'", (offset,)).fetchall() == [
        ("warning", "lone surrogate")
    ]
    # the message is there: in search, show and a rebuilt emit
    (mid,) = db.execute("SELECT DISTINCT message_id FROM blocks WHERE text LIKE ?", (f"%{needle}%",)).fetchone()
    (tid,) = db.execute("SELECT thread_id FROM messages WHERE id = ?", (mid,)).fetchone()
    run = CliRunner()
    found = run.invoke(cli, ["--db", str(tmp_path / "x.db"), "search", "--json", "SESSION" if vendor == "claude-code" else "echo"],
                       catch_exceptions=False)  # fmt: skip
    assert found.exit_code == 0 and mid in found.output
    shown = run.invoke(cli, ["--db", str(tmp_path / "x.db"), "show", tid], catch_exceptions=False)
    assert shown.exit_code == 0 and "\ufffd" in shown.output
    other = "codex" if vendor == "claude-code" else "claude-code"
    emitted = run.invoke(cli, ["--db", str(tmp_path / "x.db"), "emit", tid, "--to", other, "-o", str(tmp_path / "emit")],
                         catch_exceptions=False)  # fmt: skip
    assert emitted.exit_code == 0, emitted.output
    assert any(needle.encode() in f.read_bytes() or b"\\ufffd" in f.read_bytes()
               for f in (tmp_path / "emit").rglob("*.jsonl"))  # fmt: skip
    (out,) = restore(db, tmp_path / "out")
    assert out.sha256 == sha(data)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


def test_escaped_backslash_before_u_is_text_not_a_surrogate():
    from archive.vendors.base import loads_line

    assert loads_line(b'{"t":"C:\\\\ud83d"}') == ({"t": "C:\\ud83d"}, None)
    value, warning = loads_line(b'{"t":"\\\\\\ud83d \\ud83d\\ude00"}')
    assert value == {"t": "\\\ufffd \U0001f600"} and warning is not None and warning.detail.startswith("1 ")
    with pytest.raises(orjson.JSONDecodeError):
        loads_line(b'{"t":"\\ud83d')  # torn: still not JSON


# ---------------------------------------------------------------- long lines (item 6)


def _long_corpus(n_long: int = 3 << 20) -> list[bytes]:
    lines = canonical_lines("t", 9)
    lines.insert(5, orjson.dumps({"v": 1, "id": "huge", "threadId": "t", "role": "user", "ts": None,
                                  "content": [{"type": "text", "text": "q" * n_long}]}))  # fmt: skip
    return lines


def test_long_line_is_refused_in_pieces_and_everything_else_holds(tmp_path):
    a = tmp_path / "in" / "a.jsonl"
    lines = _long_corpus()
    data = write_lines(a, lines)
    options = IngestOptions(idle_seconds=10**9, env={"SESH_ARCHIVE_MAX_LINE": "1M"})
    db = open_db(tmp_path / "x.db")
    s = ingest_paths(db, [a], options)
    assert s.reports["refused"] == 1 and s.messages_added == 9
    offset = sum(len(line) + 1 for line in lines[:5])
    assert db.execute("SELECT kind, detail FROM reports WHERE offset = ?", (offset,)).fetchall() == [
        ("refused", f"{len(lines[5]):,} bytes; kept raw in the source layer, not parsed")
    ]
    (out,) = restore(db, tmp_path / "out")
    assert out.sha256 == sha(data) and out.path.read_bytes() == data
    before = dump_tables(db)
    s2 = ingest_paths(db, [a], options)
    assert s2.bytes_read == 0 and dump_tables(db) == before
    os.utime(a, None)  # touched: the last line is checked, nothing is read again
    s3 = ingest_paths(db, [a], options)
    assert s3.lines == 0 and s3.reports["refused"] == 0
    after = dump_tables(db)
    assert {k: v for k, v in after.items() if k != "source_paths"} == {k: v for k, v in before.items() if k != "source_paths"}
    before = after
    rebuild(db)  # rebuild refuses the same line, whatever the limit now
    assert dump_tables(db) == before


def test_long_line_written_in_pieces_equals_whole(tmp_path):
    lines = _long_corpus()
    data = b"".join(line + b"\n" for line in lines)
    options = IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20, batch_lines=2)
    whole = tmp_path / "whole" / "s.jsonl"
    write_lines(whole, lines)
    db_whole = open_db(tmp_path / "whole.db")
    ingest_paths(db_whole, [whole], options)
    grow = tmp_path / "grow" / "s.jsonl"
    grow.parent.mkdir()
    start = sum(len(line) + 1 for line in lines[:5])
    db = open_db(tmp_path / "grow.db")
    written = 0
    for cut in (start - 7, start + 100, start + (2 << 20), start + len(lines[5]), len(data)):
        with open(grow, "ab") as f:
            f.write(data[written:cut])
        written = cut
        s = ingest_paths(db, [grow], options)
        if cut in (start + (2 << 20), start + len(lines[5])):
            assert s.reports["refused"] == 0  # a long line still being written waits, unstored
    assert portable_dump(db) == portable_dump(db_whole)


def test_compressed_file_inflating_to_one_long_line_costs_one_read(tmp_path):
    import zstandard

    raw = b'{"v":1,"id":"t","createdAt":"2026-01-01T00:00:00Z","title":"t"}\n' + b"y" * (5 << 20)  # no newline
    z = tmp_path / "in" / "s.jsonl.zst"
    z.parent.mkdir()
    z.write_bytes(zstandard.ZstdCompressor(level=19).compress(raw))
    assert z.stat().st_size < 2000
    db = open_db(tmp_path / "x.db")
    busy = IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20)
    s = ingest_paths(db, [z], busy)
    assert s.reports["refused"] == 0  # not idle: the unterminated line waits
    idle = IngestOptions(idle_seconds=0, max_line_bytes=1 << 20)
    s = ingest_paths(db, [z], idle)
    assert s.reports["refused"] == 1
    (out,) = restore(db, tmp_path / "out")
    assert out.path.name == "s.jsonl" and out.path.read_bytes() == raw
    before = dump_tables(db)
    s = ingest_paths(db, [z], idle)
    assert s.bytes_read == 0 and dump_tables(db) == before  # the rerun does not pay it again
    os.utime(z, None)  # touched: the long last line is hashed a chunk at a time, not stored again
    s = ingest_paths(db, [z], idle)
    assert s.lines == 0 and s.files_changed == 0
    assert dump_tables(db)["source_lines"] == before["source_lines"]


def test_line_past_the_spill_size_but_within_the_limit_is_parsed(tmp_path, monkeypatch):
    import archive.ingest.reader
    import archive.ingest.writer

    a = tmp_path / "a.jsonl"
    lines = _long_corpus(500_000)
    write_lines(a, lines)
    ref = open_db(tmp_path / "ref.db")
    ingest_paths(ref, [a], IngestOptions(idle_seconds=10**9))
    monkeypatch.setattr(archive.ingest.reader, "SPILL", 64 << 10)  # scanned, then read again whole
    db = open_db(tmp_path / "x.db")
    s = ingest_paths(db, [a], IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20))
    assert s.reports["refused"] == 0 and s.messages_added == 10
    assert portable_dump(db) == portable_dump(ref)


def test_line_limit_settings():
    from archive.db import ArchiveError
    from archive.ingest import DEFAULT_MAX_LINE, max_line_bytes, parse_size

    assert parse_size("64M") == parse_size("64MB") == 64 << 20 and parse_size("1g") == 1 << 30
    assert parse_size("4096") == 4096
    assert max_line_bytes(IngestOptions(), {}) == DEFAULT_MAX_LINE == 64 << 20
    assert max_line_bytes(IngestOptions(), {"SESH_ARCHIVE_MAX_LINE": "2M"}) == 2 << 20
    assert max_line_bytes(IngestOptions(max_line_bytes=5000), {"SESH_ARCHIVE_MAX_LINE": "2M"}) == 5000
    with pytest.raises(ArchiveError):
        max_line_bytes(IngestOptions(), {"SESH_ARCHIVE_MAX_LINE": "lots"})
    with pytest.raises(ArchiveError):
        max_line_bytes(IngestOptions(max_line_bytes=10), {})


@pytest.mark.parametrize("size", [5_000, 1_500_000])  # inside one read chunk; across two
def test_line_over_the_limit_is_refused_however_it_was_read(tmp_path, size):
    a = tmp_path / "a.jsonl"
    lines = _long_corpus(size)
    data = write_lines(a, lines)
    db = open_db(tmp_path / "x.db")
    s = ingest_paths(db, [a], IngestOptions(idle_seconds=10**9, max_line_bytes=min(size // 2, 1 << 20)))
    assert s.reports["refused"] == 1 and s.messages_added == 9
    (out,) = restore(db, tmp_path / "out")
    assert out.path.read_bytes() == data
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


def test_projection_writes_any_json_value_exactly():
    """The fallback encoder behind ``dumps``: any depth, integers of any size, exact JSON."""
    import json

    from archive.model import Message, Text, Usage
    from archive.projection import dumps, json_text, tame_rows
    from archive.vendors.base import MessageRow, UsageRow

    deep: object = [1, {"k": "v\u00e9\\"}]
    for _ in range(600):
        deep = {"a": deep, "n": 2**70}
    text = dumps(deep)  # orjson refuses both; no exception
    assert text == json_text(deep) == json.dumps(deep, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(text) == deep
    rows = tame_rows([
        UsageRow("k", "t", Usage(input_tokens=2**63, output_tokens=5)),
        MessageRow(Message(id="m", thread_id="t", role="user", ts=None, content=(Text("x"),), raw={"d": deep})),
    ])  # fmt: skip
    assert rows[0].usage.input_tokens == str(2**63) and rows[0].usage.output_tokens == 5
    assert isinstance(rows[1].message.raw["d"]["a"], dict)  # kept as values down to the limit
    reasons = [(r.kind, r.reason) for r in rows[2:]]
    assert reasons == [("invalid", "integer out of range"), ("invalid", "nested too deep")]


@pytest.mark.parametrize("decoded_up_to", ["default", 0], ids=["decoded", "as-bytes"])
def test_taming_checks_depth_not_bracket_count(monkeypatch, decoded_up_to):
    """A whole JSON document read as one line (Cline's ``messages.json``) holds thousands of
    brackets at a depth of ten: its rows are not walked by the tamer (issue 35: the walk cost
    Cline a third of its ingest). A line nested ``TAME_DEPTH`` deep still is, wherever the
    depth hides (after strings holding brackets and escaped quotes, inside a document).
    Both ways of measuring a line: decoded (up to ``_DECODED_UP_TO`` bytes) and as bytes."""
    import orjson

    from archive import rows as rows_module

    if decoded_up_to != "default":
        monkeypatch.setattr(rows_module, "_DECODED_UP_TO", decoded_up_to)
    from archive.model import Message, Text
    from archive.rows import TAME_DEPTH, may_nest_deep, needs_taming
    from archive.vendors.base import MessageRow

    rows = [MessageRow(Message(id="m", thread_id="t", role="user", ts=None, content=(Text("x"),)))]
    messages = [{"role": "user", "content": [{"type": "text", "text": 'a "[[[{{" \\'}], "n": [1, [2, {"k": []}]]}
                for _ in range(400)]  # fmt: skip
    shallow = orjson.dumps({"messages": messages}, option=orjson.OPT_INDENT_2)
    assert shallow.count(b"[") > TAME_DEPTH and not may_nest_deep(shallow) and not needs_taming(shallow, rows)
    deep: object = "leaf"
    for i in range(TAME_DEPTH):
        deep = {"a": deep} if i % 2 else [deep]
    assert may_nest_deep(orjson.dumps(deep)) and needs_taming(orjson.dumps(deep), rows)
    hidden = orjson.dumps({"messages": messages[:200] + [{"content": deep}] + messages[200:]})
    assert may_nest_deep(hidden) and needs_taming(hidden, rows)
    shallower: object = "leaf"
    for _ in range(TAME_DEPTH - 10):
        shallower = [shallower, "]]]"]
    assert not may_nest_deep(orjson.dumps(shallower))
    assert may_nest_deep(b'{"a": [' * 150 + b'"not JSON')  # brackets that do not pair count as deep
    # not a JSON document: its quotes need not delimit strings, so its brackets all count
    assert may_nest_deep(b'said "' + orjson.dumps(deep) + b'" then ' + b"[]" * TAME_DEPTH)
    assert may_nest_deep(b'{"a": "' + b"[]" * TAME_DEPTH + b"}")  # a quote left open


def test_interrupted_while_storing_a_long_line_then_rerun_equals_whole(tmp_path, monkeypatch):
    import archive.ingest.reader
    import archive.ingest.writer
    from archive.lines import Codec

    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    write_lines(files[0], canonical_lines("a", 20))
    write_lines(files[1], _long_corpus())
    options = IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20, batch_lines=3)
    whole = open_db(tmp_path / "whole.db")
    ingest_paths(whole, files, options)
    monkeypatch.setattr(archive.ingest.writer, "PIECE", 256 << 10)  # many pieces
    real_pack = Codec.pack
    pieces = []

    def pack(self, data):
        if data.startswith(b"q" * 1000):
            pieces.append(len(data))
            if len(pieces) == 5:
                raise KeyboardInterrupt  # as a kill between two pieces would
        return real_pack(self, data)

    db = open_db(tmp_path / "x.db")
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):  # undoes this patch only
        m.setattr(Codec, "pack", pack)
        ingest_paths(db, files, options)
    assert len(pieces) == 5 and not db.conn.in_transaction
    ingest_paths(db, files, options)
    assert portable_dump(db) == portable_dump(whole)


def test_long_last_line_taken_when_idle_then_terminated_equals_whole(tmp_path):
    lines = _long_corpus()[:6]  # the long line last
    data = b"".join(line + b"\n" for line in lines) + b'{"v":1,"id":"after","threadId":"t","role":"user","ts":null,"content":[]}\n'
    whole = tmp_path / "whole" / "s.jsonl"
    whole.parent.mkdir()
    whole.write_bytes(data)
    db_whole = open_db(tmp_path / "whole.db")
    ingest_paths(db_whole, [whole], IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20))
    grow = tmp_path / "grow" / "s.jsonl"
    grow.parent.mkdir()
    cut = sum(len(line) + 1 for line in lines) - 1  # the long line without its newline
    grow.write_bytes(data[:cut])
    db = open_db(tmp_path / "grow.db")
    s = ingest_paths(db, [grow], IngestOptions(idle_seconds=0, max_line_bytes=1 << 20))
    assert s.reports["refused"] == 1  # idle: taken unterminated
    grow.write_bytes(data)
    s = ingest_paths(db, [grow], IngestOptions(idle_seconds=10**9, max_line_bytes=1 << 20))
    assert s.reports["refused"] == 0 and s.messages_added == 1
    assert portable_dump(db) == portable_dump(db_whole)
    (out,) = restore(db, tmp_path / "out")
    assert out.path.read_bytes() == data
