"""Masks for forgotten values (``archive/forget.py``): a value replaced by
``[REDACTED <rule>]`` padded to its length, raw or JSON-escaped, and the masker ingest applies
to every later line of a source something was forgotten from (``incoming_masker``: the value
does not come back). Same length, same offsets: see forget's invariants."""

from __future__ import annotations

import re
import sqlite3

import orjson

from . import secrets


def _mask(rule: str, length: int) -> bytes:
    for tag in (f"[REDACTED {rule}]", f"[{rule}]", "[REDACTED]"):
        if len(tag) <= length:
            return (tag + "*" * (length - len(tag))).encode()
    return b"*" * length


def _forms(values: dict[str, str]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for v, rule in values.items():
        for form in (v, orjson.dumps(v).decode()[1:-1]):
            b = form.encode("utf-8", "surrogatepass")
            out.setdefault(b, _mask(rule, len(b)))
    return out


def _pattern(forms: dict[bytes, bytes]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(k) for k in sorted(forms, key=len, reverse=True)))


def _strings(line: bytes) -> list[str]:
    """The texts of a line the scan would see: every JSON string in it (block texts come
    from them, unescaped), and the line itself (a line that is not JSON, a value split
    across strings)."""
    text = line.decode("utf-8", "replace")
    out = [text]
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return out
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack += list(v.values())
        elif isinstance(v, list):
            stack += v
    return out


class IncomingMasker:
    """A line read from a source's file with every value forgotten from that source masked
    as ``forget`` masked it (same length), found by the scan and recognised by its sha256;
    ``lines_masked`` counts the lines it changed (the run says so: their stored bytes differ
    from the file's)."""

    def __init__(self, hashes: dict[str, str]) -> None:
        self.hashes = hashes
        self.lines_masked = 0

    def __call__(self, line: bytes) -> bytes:
        texts = _strings(line)
        values: dict[str, str] = {}
        for text, hits in zip(texts, secrets.find_many(texts)):
            for h in hits:
                v = text[h.start : h.end]
                rule = self.hashes.get(secrets.sha(v))
                if rule is not None:
                    values[v] = rule
        if not values:
            return line
        forms = _forms(values)
        masked = _pattern(forms).sub(lambda m: forms[m.group(0)], line)
        assert len(masked) == len(line)
        self.lines_masked += 1
        return masked


def incoming_masker(conn: sqlite3.Connection, source_id: int | None) -> IncomingMasker | None:
    """The masker of a source something was forgotten from; None for every other source (no cost)."""
    if source_id is None:
        return None
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'forgotten_values'").fetchone():
        return None
    hashes = dict(conn.execute(
        "SELECT value_sha256, rule FROM forgotten_values WHERE source_id = ?", (source_id,)
    ).fetchall())  # fmt: skip
    return IncomingMasker(hashes) if hashes else None
