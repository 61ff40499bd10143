"""Helpers for the ingest invariant tests: synthetic canonical corpora and table dumps."""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths

# Generous idle period: a torn last line is never taken unless a test says so.
NEVER_IDLE = IngestOptions(idle_seconds=10**9)


def canonical_lines(thread: str, n: int, seed: int = 0, big: int = 0) -> list[bytes]:
    rnd = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "quokka", "zanzibar", "the", "a", "e"]
    lines = [orjson.dumps({"v": 1, "id": thread, "createdAt": "2026-01-01T00:00:00Z", "title": f"thread {thread}",
                           "metadata": {"cwd": f"/work/{thread}"}})]  # fmt: skip
    for i in range(n):
        role = ["user", "assistant", "tool"][i % 3]
        text = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 30)))
        if big and i % 7 == 3:
            text += " " + "x" * big
        content: list[dict] = [{"type": "text", "text": text}]
        if role == "assistant":
            content.append({"type": "tool_call", "callId": f"{thread}-c{i}", "name": "Bash", "input": {"command": text[:20]}})
        if role == "tool":
            content = [{"type": "tool_result", "callId": f"{thread}-c{i - 1}", "output": text, "isError": i % 2 == 0}]
        msg = {"v": 1, "id": f"{thread}-m{i}", "threadId": thread, "role": role,
               "ts": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "content": content}  # fmt: skip
        if role == "assistant":
            msg["usage"] = {"inputTokens": 10 + i, "outputTokens": i}
        lines.append(orjson.dumps(msg))
    return lines


def write_lines(path: Path, lines: list[bytes]) -> bytes:
    data = b"".join(line + b"\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def ingest(db_path: Path, paths: list[Path], options: IngestOptions = NEVER_IDLE):
    db = open_db(db_path)
    summary = ingest_paths(db, paths, options)
    return db, summary


def portable_dump(db) -> dict:
    """The dump without what depends on where and when files were read (paths, stat data)."""
    d = dump_tables(db)
    d.pop("source_paths", None)
    d["sources"] = [row[:5] for row in d["sources"]]  # id, uid, provider, kind, current_generation
    return d
