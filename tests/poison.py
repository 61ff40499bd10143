"""Poison values planted in real fixture lines (issue 16): each is a line the vendor's client
can write and that once stopped the archive."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import orjson

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "marot__spotter__short.jsonl"
CLAUDE_EMOJI = FIXTURES / "claude-code" / "marot__spotter__agent-acompact-e1f845.jsonl"
CODEX = FIXTURES / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
KINDS = ("usage 2**63", "deep 320", "lone surrogate", "long line")
LONG = 3 << 20  # the tests' "long line" (their line limit is 1 MiB); the benchmark plants 100 MB
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_API_ID = re.compile(rb"\b(msg|req|toolu)_([0-9A-Za-z]{20,})")


def fresh_ids(data: bytes, salt: str) -> bytes:
    """The same file under new session, message, response and tool call ids (consistently
    replaced), so a copy is a session of its own, not a resume of the original."""

    def new(m: re.Match[bytes]) -> bytes:
        h = hashlib.sha256(salt.encode() + m.group(0)).hexdigest()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}".encode()

    def api(m: re.Match[bytes]) -> bytes:
        h = hashlib.sha256(salt.encode() + m.group(0)).hexdigest()
        return m.group(1) + b"_" + h[: len(m.group(2))].encode()

    return _API_ID.sub(api, _UUID.sub(new, data))


def _json(d: dict) -> bytes:
    # stdlib json: orjson refuses to write the 320 levels this file is about
    return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()


def poison_line(lines: list[bytes], kind: str) -> tuple[list[bytes], int]:
    """``lines`` with one line poisoned; returns the lines and the poisoned index."""
    out = list(lines)
    if kind == "usage 2**63":  # the response's last snapshot: the one the usage table keeps
        i = max(i for i, line in enumerate(lines) if b'"output_tokens":' in line)
        out[i] = re.sub(rb'"output_tokens":\d+', b'"output_tokens":9223372036854775808', lines[i], count=1)
        return out, i
    for i, line in enumerate(lines):
        d = orjson.loads(line)
        msg = d.get("message") if isinstance(d, dict) else None
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if kind == "deep 320" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    x: object = "leaf"
                    for _ in range(320):
                        x = {"a": x}
                    b["input"] = {"deep": x, "command": "poisoned"}
                    out[i] = _json(d)
                    return out, i
        if kind == "long line" and msg.get("role") == "user" and isinstance(content, str):
            out[i] = line.replace(b'"content":"', b'"content":"' + b"z" * LONG, 1)
            return out, i
        if kind == "lone surrogate" and msg.get("role") == "user" and isinstance(content, str):
            # Node's JSON.stringify of a string cut after the first half of an emoji
            out[i] = line.replace(content[-12:].encode() + b'"', content[-12:].encode() + b' \\ud83d"', 1)
            assert out[i] != line
            return out, i
    raise ValueError(f"no line to plant {kind!r} in")
