"""A Goose ``sessions.db`` built from Goose's own schema, not recorded (no Goose client is
installable here): the tables as ``crates/goose/src/session/session_manager.rs`` creates them
(schema v5) with migrations v6-v13 of ``crates/goose/src/session/migrations.rs`` applied
(block/goose), and rows in the shapes Goose writes (``conversation/message.rs``: content items
tagged ``type``; ``toolCall``/``toolResult`` as ``{"status":"success","value":...}``; message
ids ``msg_<session>_<n>`` as migration v7 names them; SQLite ``CURRENT_TIMESTAMP`` times)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

DDL = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT,
    provider_name TEXT, model_config_json TEXT, goose_mode TEXT NOT NULL DEFAULT 'auto', thread_id TEXT,
    archived_at TIMESTAMP, project_id TEXT, accumulated_cost REAL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL, timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER, metadata_json TEXT, message_id TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_message_id ON messages(message_id);
"""

SESSION = "20260301_1"
SUBAGENT = "20260301_2"


def _ok(value):
    return {"status": "success", "value": value}


MESSAGES = [
    (SESSION, "user", [{"type": "text", "text": "run the tests and fix what fails"}], 1772355600, {"userVisible": True, "agentVisible": True}),
    (SESSION, "assistant", [{"type": "thinking", "thinking": "Run pytest first.", "signature": "c2ln"},
                            {"type": "text", "text": "I'll run the tests."},
                            {"type": "toolRequest", "id": "toolu_01", "toolCall": _ok({"name": "developer__shell", "arguments": {"command": "pytest -q"}})}],
     1772355601, {"userVisible": True, "agentVisible": True, "inference": {"provider": "anthropic", "requestedModel": "claude-sonnet-4-5"}}),
    (SESSION, "user", [{"type": "toolResponse", "id": "toolu_01", "toolResult": _ok({"content": [{"type": "text", "text": "1 failed, 3 passed"}], "isError": False})}],
     1772355605, {"userVisible": True, "agentVisible": True}),
    (SESSION, "assistant", [{"type": "toolRequest", "id": "toolu_02", "toolCall": _ok({"name": "developer__text_editor", "arguments": {"command": "str_replace", "path": "/home/me/proj/calc.py", "old_str": "a - b", "new_str": "a + b"}})}],
     1772355607, {"userVisible": True, "agentVisible": True}),
    (SESSION, "user", [{"type": "toolResponse", "id": "toolu_02", "toolResult": {"status": "error", "error": "Execution failed: old_str not found"}}],
     1772355608, {"userVisible": True, "agentVisible": True}),
    (SESSION, "assistant", [{"type": "text", "text": "The edit did not apply; the tests still fail in calc.py."}], 1772355610,
     {"userVisible": True, "agentVisible": True}),
    (SUBAGENT, "user", [{"type": "text", "text": "summarise calc.py"}], 1772355700, {"userVisible": False, "agentVisible": True}),
    (SUBAGENT, "assistant", [{"type": "text", "text": "calc.py adds two numbers."}], 1772355702, {"userVisible": False, "agentVisible": True}),
]


def build(path: Path) -> Path:
    """A sessions.db at ``path`` (its folder created) holding a user session and a subagent's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    conn.executemany("INSERT INTO schema_version (version, applied_at) VALUES (?, '2026-03-01 09:00:00')", [(v,) for v in range(1, 14)])
    config = json.dumps({"model_name": "claude-sonnet-4-5", "context_limit": None, "temperature": None, "max_tokens": None,
                         "toolshim": False, "toolshim_model": None})
    conn.execute("INSERT INTO sessions (id, name, user_set_name, session_type, working_dir, created_at, updated_at, "
                 "accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens, provider_name, "
                 "model_config_json, goose_mode, accumulated_cost) VALUES (?, 'Fix failing tests', 0, 'user', "
                 "'/home/me/proj', '2026-03-01 09:00:00', '2026-03-01 09:00:10', 5230, 4980, 250, 'anthropic', ?, 'auto', 0.0187)",
                 (SESSION, config))
    conn.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, updated_at, provider_name, "
                 "model_config_json) VALUES (?, 'summarise calc.py', 'sub_agent', '/home/me/proj', '2026-03-01 09:01:40', "
                 "'2026-03-01 09:01:42', 'anthropic', ?)", (SUBAGENT, config))
    counters: dict[str, int] = {}
    for sid, role, content, created, meta in MESSAGES:
        counters[sid] = counters.get(sid, 0) + 1
        conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, timestamp, metadata_json, "
                     "message_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (sid, role, json.dumps(content), created, "2026-03-01 09:00:00", json.dumps(meta), f"msg_{sid}_{counters[sid]}"))
    conn.commit()
    conn.close()
    return path


LEGACY = [
    {"working_dir": "/home/me/old", "description": "Old style session", "schedule_id": None, "message_count": 2,
     "total_tokens": 300, "input_tokens": 250, "output_tokens": 50, "accumulated_total_tokens": 300,
     "accumulated_input_tokens": 250, "accumulated_output_tokens": 50},
    {"role": "user", "created": 1735732800, "content": [{"type": "text", "text": "list the files"}]},
    {"role": "assistant", "created": 1735732802, "content": [
        {"type": "toolRequest", "id": "call_1", "toolCall": {"status": "success", "value": {"name": "developer__shell", "arguments": {"command": "ls"}}}}]},
    {"role": "user", "created": 1735732803, "content": [
        {"type": "toolResponse", "id": "call_1", "toolResult": {"status": "success", "value": [{"type": "text", "text": "a.txt\nb.txt"}]}}]},
    {"role": "assistant", "created": 1735732804, "content": [{"type": "text", "text": "Two files: a.txt and b.txt."}]},
]


def legacy_bytes() -> bytes:
    """A legacy ``<id>.jsonl`` (crates/goose/src/session/legacy.rs): metadata, then messages."""
    return b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in LEGACY)
