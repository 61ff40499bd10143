"""Goose (block/goose): the adapter. ``<data>/goose/sessions/sessions.db`` (``GOOSE_PATH_ROOT``
replaces the data folder with ``<root>/data``; else ``XDG_DATA_HOME``), read through
``documents`` as OpenCode's database is (read-only, WAL-safe, one statement per query), and the
older ``<id>.jsonl`` sessions there. Built from Goose's schema (v13) and public samples: no
Goose client is installable here, so nothing is emitted for it. Parsing is in ``parse.py``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import orjson

from ...model import JsonObject
from ..base import LINES, RECORDS, Adapter, Document, Query, SourceInfo, env_path
from .parse import NAME, GooseParser

DB_NAME = "sessions.db"


def _text(v: object) -> object:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _line(table: str, cols: list[str], row: tuple) -> bytes:
    return b'{"table":"' + table.encode() + b'","row":' + orjson.dumps({c: _text(v) for c, v in zip(cols, row)}) + b"}\n"


class GooseAdapter(Adapter):
    name = NAME
    env_vars = ("GOOSE_PATH_ROOT",)
    # Goose's developer extension (``developer__shell``, ``developer__text_editor``)
    tool_kinds = {"developer__shell": "shell", "developer__text_editor": "edit", "shell": "shell",
                  "text_editor": "edit"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        root = env_path(env, "GOOSE_PATH_ROOT")
        data = root / "data" if root else (env_path(env, "XDG_DATA_HOME") or home / ".local" / "share") / "goose"
        return [data / "sessions"]

    def classify(self, path: Path) -> str | None:
        if path.name == DB_NAME:
            return RECORDS
        if path.suffix == ".jsonl" and path.parent.name == "sessions" and path.parent.parent.name in ("goose", "data"):
            return LINES
        return None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        if first.startswith(b'{"table":"session","row":{') and b'"working_dir"' in first:
            return True
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return isinstance(d, dict) and "working_dir" in d and "description" in d and "role" not in d

    def session_key(self, path: Path) -> str | None:
        return path.name.rsplit("#", 1)[-1].removesuffix(".jsonl") or None

    def documents(self, path: Path, query: Query | None) -> Iterator[Document]:
        """One document per session: its ``sessions`` row, then its ``messages`` rows by
        ``id``. Goose updates rows in place, so a change rewrites the document (a new
        generation, the older kept)."""
        if query is None:
            return
        tables = {_text(r[0]) for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if not {"sessions", "messages"} <= tables:
            return
        scols = [str(_text(r[1])) for r in query("PRAGMA table_info(sessions)", ())]
        mcols = [str(_text(r[1])) for r in query("PRAGMA table_info(messages)", ())]
        for srow in query("SELECT * FROM sessions ORDER BY id", ()):
            session = dict(zip(scols, srow))
            sid = str(_text(session["id"]))
            lines = [_line("session", scols, srow)]
            lines += [_line("message", mcols, m) for m in query("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (sid,))]
            yield Document(f"{path}#{sid}.jsonl", b"".join(lines))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> GooseParser:
        return GooseParser(source, state)


ADAPTER = GooseAdapter()
