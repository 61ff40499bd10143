"""The team archive in PostgreSQL: schema (``schema``), reads (``queries``), the seed's
MessageStore (``store``). The push engine that fills it is ``archive.push``.

psycopg (3.x) is an optional dependency (``pip install 'sesh-archive[postgres]'``): it is
imported only when a PostgreSQL URL is used, so the local archive never needs it.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ArchiveError

DEFAULT_SCHEMA = "sesh"
URL_ENV = "SESH_ARCHIVE_PUSH_URL"
SCHEMA_ENV = "SESH_ARCHIVE_SCHEMA"
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class PostgresError(ArchiveError):
    """psycopg missing, a bad URL or schema name, or the server refused."""


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("postgres://", "postgresql://"))


def check_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.fullmatch(schema):
        raise PostgresError(f"schema name {schema!r}: letters, digits and _ only")
    return schema


def redact_url(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def connect(url: str, schema: str = DEFAULT_SCHEMA, *, migrate: bool = True) -> Any:
    """A psycopg connection (autocommit off) whose search_path is ``schema``, migrated
    unless ``migrate`` is false. json columns come back as the text the server holds (the
    projection's loaders parse them, as they parse SQLite's)."""
    try:
        import psycopg
        from psycopg.types.string import TextLoader
    except ImportError:
        raise PostgresError(
            "PostgreSQL support needs psycopg: pip install 'sesh-archive[postgres]'"
        ) from None
    check_schema_name(schema)
    try:
        conn = psycopg.connect(url, autocommit=False, application_name="sesh-archive")
    except psycopg.Error as e:
        raise PostgresError(f"cannot connect to {redact_url(url)}: {str(e).strip()}") from None
    conn.adapters.register_loader("json", TextLoader)
    conn.adapters.register_loader("jsonb", TextLoader)
    from .schema import migrate as apply_migrations

    if migrate:
        apply_migrations(conn, schema)
        return conn
    conn.execute(f'SET search_path TO "{schema}"')
    found = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    conn.commit()
    if not found:
        conn.close()
        raise PostgresError(f"no team archive in schema {schema!r} at {redact_url(url)}: run `sesh-archive push` first")
    return conn


BLOCK_COLS = ("message_id", "position", "type", "text", "call_id", "tool_name", "input", "output", "is_error",
              "path", "patch", "media_type", "uri", "blob_sha256", "redacted", "extra")  # fmt: skip
# the seed field each text column of ``blocks`` holds, by block type (projection.block_row);
# columns not named here are derived (search text) or JSON (escaped, never a raw NUL)
_SEED_FIELD = {
    ("text", "text"): "text", ("reasoning", "text"): "text", ("web_search", "text"): "query",
    ("tool_result", "text"): "output", ("tool_call", "tool_name"): "name",
    ("file_change", "path"): "path", ("file_change", "patch"): "patch",
    ("attachment", "media_type"): "mediaType", ("attachment", "uri"): "uri",
}  # fmt: skip


def nul_free(v: Any) -> Any:
    """``v`` with NUL characters as U+FFFD (PostgreSQL text cannot hold NUL)."""
    return v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v


def nul_safe_block(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``blocks`` row (BLOCK_COLS order) fit for PostgreSQL and still lossless: a seed
    field whose text holds NUL keeps its exact value in ``extra`` (JSON escapes NUL), which
    ``projection.block_from_row`` lays over the columns; the column gets U+FFFD."""
    import orjson

    d = dict(zip(BLOCK_COLS, row))
    moved: dict[str, Any] = {}
    for col in ("text", "call_id", "tool_name", "path", "patch", "media_type", "uri"):
        v = d[col]
        if isinstance(v, str) and "\x00" in v:
            name = "callId" if col == "call_id" else _SEED_FIELD.get((d["type"], col))
            if name == "output" and d["output"] is not None:
                name = None  # a structured output lives in the JSON column; text is derived
            if name:
                moved[name] = v
            d[col] = nul_free(v)
    if moved:
        extra = orjson.loads(d["extra"]) if d["extra"] else {}
        extra.update(moved)
        d["extra"] = orjson.dumps(extra).decode()
    return tuple(nul_free(d[c]) for c in BLOCK_COLS)


# A message's or thread's text column with NUL keeps its exact value here, in ``extra``
# (JSON escapes NUL); the team database's loaders (pg/queries.py) put it back.
NUL_KEY = "$nul"
NUL_FIELDS = {
    "messages": ("id", "thread_id", "role", "ts", "turn_id", "parent_id", "run_id", "model"),
    "threads": ("id", "provider", "agent_id", "parent_thread_id", "origin_message_id", "title", "created_at", "cwd",
                "model"),
}  # fmt: skip


def nul_safe_row(table: str, cols: tuple[str, ...], row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``messages`` or ``threads`` row (``cols`` order) fit for PostgreSQL, still lossless."""
    import orjson

    d = dict(zip(cols, row))
    moved = {c: d[c] for c in NUL_FIELDS[table] if isinstance(d.get(c), str) and "\x00" in d[c]}
    if moved:
        extra = orjson.loads(d["extra"]) if d.get("extra") else {}
        extra[NUL_KEY] = moved
        d["extra"] = orjson.dumps(extra).decode()
    return tuple(nul_free(d[c]) for c in cols)


def nul_restore(row: dict[str, Any]) -> dict[str, Any]:
    """The row as it was before ``nul_safe_row``."""
    extra = row.get("extra")
    if not extra or NUL_KEY not in extra:
        return row
    import orjson

    d = orjson.loads(extra)
    moved = d.pop(NUL_KEY, None) if isinstance(d, dict) else None
    if not isinstance(moved, dict):
        return row
    return {**row, **moved, "extra": orjson.dumps(d).decode() if d else None}
