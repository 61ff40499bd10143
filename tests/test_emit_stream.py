"""Emit streams: every emitter reads its messages once (a generator will do) and writes its
files as it goes, so a long thread is never held whole (the README's emit benchmark)."""

from __future__ import annotations

import shutil
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from ingest_helpers import NEVER_IDLE

from archive.db import open_db
from archive.ingest import ingest_paths
from archive.model import Message, Provenance, Text, Thread, ToolCall, ToolResult, Usage
from archive.thread_view import descendants
from archive.thread_view import own_messages as load_thread
from archive.vendors import VENDORS
from archive.vendors.base import EmitOptions, EmittedFiles, file_chunks

FIXTURES = Path(__file__).parent / "fixtures"
EMITTERS = [a for a in VENDORS if a.emits]
OPTIONS = EmitOptions(cwd="/home/dev/project")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("fixtures")
    db = open_db(folder / "a.db")
    for adapter in VENDORS:
        for i, path in enumerate(sorted((FIXTURES / adapter.name).rglob("*.jsonl"))):
            copy = folder / adapter.name / str(i) / path.name
            copy.parent.mkdir(parents=True)
            shutil.copyfile(path, copy)
            ingest_paths(db, [copy], NEVER_IDLE)
    return db


def _roots(db) -> list[str]:
    return [r[0] for r in db.execute(
        "SELECT t.id FROM threads t WHERE (t.parent_thread_id IS NULL OR NOT EXISTS "
        "(SELECT 1 FROM threads p WHERE p.id = t.parent_thread_id)) "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.id) ORDER BY t.id")]  # fmt: skip


def _files(files) -> dict[str, bytes]:
    return {rel: b"".join(file_chunks(files, rel)) for rel in files}


@pytest.mark.parametrize("adapter", EMITTERS, ids=lambda a: a.name)
def test_emit_from_a_generator_equals_emit_from_a_list(adapter, archive) -> None:
    threads = _roots(archive)
    assert len(threads) > 10
    for tid in threads:
        thread, messages = load_thread(archive, tid)
        children = [load_thread(archive, c) for c in descendants(archive, tid)]
        from_list = adapter.emit(thread, messages, children, OPTIONS)
        once = adapter.emit(thread, (m for m in messages), [(c, (m for m in ms)) for c, ms in children], OPTIONS)
        assert isinstance(once.files, EmittedFiles)
        assert _files(once.files) == _files(from_list.files), tid
        assert once.counts == from_list.counts and once.notes == from_list.notes, tid
        assert (once.thread_id, once.resume_hint) == (from_list.thread_id, from_list.resume_hint)


class SyntheticThread:
    """``rounds`` user/assistant/tool-result exchanges, built afresh on each iteration (like
    the archive's pages): nothing holds the thread whole unless the emitter does."""

    def __init__(self, thread_id: str, rounds: int, text_bytes: int) -> None:
        self.thread_id, self.rounds, self.text = thread_id, rounds, text_bytes

    def __iter__(self) -> Iterator[Message]:
        pad = "x" * self.text
        for i in range(self.rounds):
            ts = f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
            call = f"call_{i}"
            prov = Provenance(provider="synthetic", extra={"messageId": f"msg_{i}"})
            yield Message(f"u{i}", self.thread_id, "user", ts, (Text(f"question {i} {pad}"),))
            # the model is named only from the second exchange on: a look-ahead must find it
            yield Message(f"a{i}", self.thread_id, "assistant", ts,
                          (Text(f"answer {i} {pad}"), ToolCall(call, "Bash", {"command": f"echo {i}"})),
                          usage=Usage(input_tokens=100 + i, output_tokens=10), provenance=prov,
                          extra={"model": "synthetic-model"} if i else None)  # fmt: skip
            yield Message(f"r{i}", self.thread_id, "user", ts, (ToolResult(call, f"{i} {pad}"),))


@pytest.mark.parametrize("adapter", EMITTERS, ids=lambda a: a.name)
def test_a_long_thread_is_not_held_in_memory(adapter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmittedFiles, "SPOOL_BYTES", 256 << 10)
    # no created_at: the first timestamp is looked ahead for
    thread = Thread(id="synthetic-long", created_at="", metadata={"cwd": "/home/dev/project"})
    messages = SyntheticThread(thread.id, rounds=1500, text_bytes=1500)
    tracemalloc.start()
    try:
        result = adapter.emit(thread, messages, [], OPTIONS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = sum(len(c) for rel in result.files for c in file_chunks(result.files, rel))
    assert size > 6_000_000  # 4,500 messages of ~1.5 KB of text each, whatever the format
    # held at once: a spool buffer, a page of lines and small per-call maps, not the file
    assert peak < size / 5, (peak, size)
    # OpenCode and Hermes: one import document; Cline: its transcript; Aider: its Markdown history
    session = next(r for r in result.files if r.endswith((".jsonl", ".json", ".aider.chat.history.md")))
    data = b"".join(file_chunks(result.files, session))
    assert b"answer 1499 " in data and data.endswith(b"\n")
    if session.endswith(".json"):
        doc = orjson.loads(data)
        # the session's id: in OpenCode's ``info``, at the top of Hermes's export
        assert len(doc["messages"]) >= 1500 and (doc["sessionId"] if adapter.name == "cline" else doc.get("info", doc)["id"])


def test_many_files_are_neither_held_in_memory_nor_kept_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session with thousands of subagent files (the 1 GB corpus's largest thread emits as 2,459 Claude Code files)."""
    monkeypatch.setattr(EmittedFiles, "SPOOL_BYTES", 256 << 10)
    files = EmittedFiles()
    handles = {}
    tracemalloc.start()
    try:
        for i in range(3000):
            out = files.open(f"sub/agent-{i}.jsonl")
            out.write(f"{i:06d}".encode() * 2000)  # 12 KB a file, 36 MB in all
            if i == 100:
                handles[i] = out
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    assert len(files) == 3000
    for i in (0, 1, 1500, 2999):
        assert files[f"sub/agent-{i}.jsonl"] == f"{i:06d}".encode() * 2000
    with pytest.raises(ValueError):  # finished and moved: a late write fails, it is not lost silently
        handles[100].write(b"x")


def test_map_lines_transforms_each_line_as_it_is_copied_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transform on the way out (redaction) sees whole lines, even across read chunks and
    a spooled file, and the file's bytes are otherwise unchanged."""
    monkeypatch.setattr(EmittedFiles, "SPOOL_BYTES", 64)
    monkeypatch.setattr(EmittedFiles, "CHUNK", 7)
    files = EmittedFiles()
    lines = [f'{{"n": {i}, "text": "token SECRET-{i} end"}}\n'.encode() for i in range(50)] + [b"last SECRET-x"]
    out = files.open("a.jsonl")
    for line in lines:
        out.write(line)
    files["b.txt"] = b"no secret here\n"
    seen: list[bytes] = []

    def mask(line: bytes) -> bytes:
        seen.append(line)
        return line.replace(b"SECRET-", b"[REDACTED x]-")

    files.map_lines("a.jsonl", mask)
    got = b"".join(file_chunks(files, "a.jsonl"))
    assert got == b"".join(lines).replace(b"SECRET-", b"[REDACTED x]-")
    assert seen == lines  # one call a line, newline included
    assert b"".join(file_chunks(files, "b.txt")) == b"no secret here\n"
