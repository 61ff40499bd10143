"""Write a Crush database (``<project>/.crush/crush.db``) for tests, from Crush's documented
schema: Crush cannot be installed here (its npm package downloads the binary from GitHub at
install time), so no recording exists.

Sources (charmbracelet/crush): the tables of ``internal/db/migrations/20250424200609_initial.sql``
(sessions, files, messages; times in Unix seconds) plus the columns later migrations add that
the reader uses (``messages.provider``, ``messages.is_summary_message``,
``sessions.summary_message_id``); the parts as ``internal/message/message.go`` marshals them
(``[{"type": T, "data": {...}}]``, field names from ``content.go``: ``BinaryContent`` has no
JSON tags, so ``Path``/``MIMEType``/``Data`` with the bytes in base64), a ``finish`` part
appended to every message that is not the assistant's (``Service.Create``); and the zstd
frame of ``parts_codec.go`` (newer releases compress ``parts``).
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import zstandard

SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    parent_session_id TEXT,
    title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    prompt_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens>= 0),
    cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0),
    updated_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    summary_message_id TEXT
);
CREATE TABLE files (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    content TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,
    UNIQUE(path, session_id, version)
);
CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    parts BLOB NOT NULL default '[]',
    model TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER,
    provider TEXT,
    is_summary_message INTEGER DEFAULT 0 NOT NULL,
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE
);
"""

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
T0 = 1767225600  # 2026-01-01T00:00:00Z
PARENT = "5b2c7e0a-3f1d-4c55-9a41-0d6f3c2b1a01"
CHILD = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c02"


def part(kind: str, **data: object) -> dict:
    return {"type": kind, "data": data}


def messages() -> list[tuple[str, str, str, list[dict], str | None, int, bool]]:
    """(id, session, role, parts, model, created, zstd) in creation order."""
    call = "call_0f3a9c2b"
    return [
        ("11111111-0000-4000-8000-000000000001", PARENT, "user",
         [part("text", text="Run echo, then look at this image."),
          part("binary", Path="dot.png", MIMEType="image/png", Data=base64.b64encode(PNG).decode()),
          part("finish", reason="stop", time=0)], None, T0, False),
        ("11111111-0000-4000-8000-000000000002", PARENT, "assistant",
         [part("reasoning", thinking="The user wants a command run first.", signature="", thought_signature="",
               tool_id="", responses_data=None, started_at=T0 + 1, finished_at=T0 + 2),
          part("text", text="Running echo."),
          part("tool_call", id=call, name="bash", input='{"command":"echo hello-from-bash"}',
               provider_executed=False, finished=True),
          part("finish", reason="tool_use", time=T0 + 3)], "m", T0 + 1, False),
        ("11111111-0000-4000-8000-000000000003", PARENT, "tool",
         [part("tool_result", tool_call_id=call, name="bash", content="hello-from-bash\n", data="", mime_type="",
               metadata='{"start_time":1767225603,"end_time":1767225603}', is_error=False),
          part("finish", reason="stop", time=0)], None, T0 + 4, False),
        ("11111111-0000-4000-8000-000000000004", PARENT, "assistant",
         [part("tool_call", id="call_agent01", name="agent", input='{"prompt":"Describe dot.png"}',
               provider_executed=False, finished=True),
          part("finish", reason="tool_use", time=T0 + 6)], "m", T0 + 5, True),
        ("22222222-0000-4000-8000-000000000001", CHILD, "user",
         [part("text", text="Describe dot.png"), part("finish", reason="stop", time=0)], None, T0 + 6, False),
        ("22222222-0000-4000-8000-000000000002", CHILD, "assistant",
         [part("text", text="A single red pixel."), part("finish", reason="end_turn", time=T0 + 8)], "m", T0 + 7, False),
        ("11111111-0000-4000-8000-000000000005", PARENT, "tool",
         [part("tool_result", tool_call_id="call_agent01", name="agent", content="A single red pixel.", data="",
               mime_type="", metadata="", is_error=False),
          part("finish", reason="stop", time=0)], None, T0 + 9, False),
        ("11111111-0000-4000-8000-000000000006", PARENT, "assistant",
         [part("text", text="Echo printed hello-from-bash; the image is one red pixel."),
          part("finish", reason="end_turn", time=T0 + 11)], "m", T0 + 10, False),
    ]


def write(project: Path) -> Path:
    """``project/.crush/crush.db`` with one session, its sub-agent's child session and a
    file version; WAL mode, as Crush opens it."""
    db = project / ".crush" / "crush.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    con.execute("INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?)",
                (PARENT, None, "Run echo and look at an image", 6, 1830, 41, 0.00612, T0 + 11, T0, None))
    con.execute("INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?)",
                (CHILD, PARENT, "Describe dot.png", 2, 640, 12, 0.00102, T0 + 8, T0 + 6, None))
    for mid, sid, role, parts, model, created, packed in messages():
        raw = json.dumps(parts, separators=(",", ":")).encode()
        stored = zstandard.ZstdCompressor().compress(raw) if packed else raw.decode()
        finished = next((p["data"]["time"] for p in parts if p["type"] == "finish" and p["data"]["time"]), None)
        con.execute("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, finished_at, "
                    "provider) VALUES (?,?,?,?,?,?,?,?,?)",
                    (mid, sid, role, stored, model, created, created, finished, "mock" if model else None))
    con.execute("INSERT INTO files VALUES (?,?,?,?,?,?,?)",
                ("33333333-0000-4000-8000-000000000001", PARENT, str(project / "hello.txt"), "hello\n", 0, T0 + 3, T0 + 3))
    con.commit()
    con.close()
    return db
