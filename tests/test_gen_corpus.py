"""Tests for scripts/gen_corpus.py: a small corpus is deterministic, valid, and described
exactly by its manifest; append mode adds complete lines only."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_corpus.py"
MANIFEST = "corpus-manifest.json"
END = "2026-11-01T00:00:00.000Z"
START = "2025-11-01T00:00:00.000Z"


def run(*args: str) -> None:
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, capture_output=True, timeout=60)


def files(root: Path) -> list[Path]:
    return sorted((p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST), key=lambda p: p.as_posix())


def digest(root: Path) -> str:
    """Hash of every file's relative path, bytes and mtime (all part of the guarantee)."""
    h = hashlib.sha256()
    for p in files(root) + [root / MANIFEST]:
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(str(p.stat().st_mtime_ns).encode())
    return h.hexdigest()


def vendor_of(root: Path, p: Path) -> str:
    rel = p.relative_to(root).as_posix()
    for prefix, vendor in ((".claude/", "claude_code"), (".codex/", "codex"), (".gemini/", "gemini"), (".qwen/", "qwen"),
                           (".pi/", "pi"), (".copilot/", "copilot"), (".local/share/opencode/", "opencode"),
                           (".cline/", "cline"), (".hermes/", "hermes"), (".openclaw/", "openclaw"), (".vibe/", "vibe"),
                           (".factory/", "factory_droid"), (".kimi/", "kimi")):
        if rel.startswith(prefix):
            return vendor
    return "clm"


def jsonl_lines(p: Path) -> list[dict]:
    data = p.read_bytes()
    assert data.endswith(b"\n"), p
    out = []
    for ln in data.split(b"\n")[:-1]:
        assert ln, f"blank line in {p}"
        obj = orjson.loads(ln)
        assert isinstance(obj, dict)
        out.append(obj)
    return out


def opencode_rows(p: Path, sql: str) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "home"
    run(str(root), "--size", "2MB", "--seed", "7")
    return root


def test_deterministic(corpus: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    run(str(again), "--size", "2MB", "--seed", "7")
    assert digest(again) == digest(corpus)
    other = tmp_path / "other"
    run(str(other), "--size", "2MB", "--seed", "8")
    assert digest(other) != digest(corpus)


def test_every_line_is_json(corpus: Path) -> None:
    for p in files(corpus):
        if p.name.endswith((".jsonl", ".jsonl.bak")):
            jsonl_lines(p)
        elif p.name == "opencode.db":  # OpenCode's database: every event's data is a JSON object
            assert all(isinstance(orjson.loads(d), dict) for (d,) in opencode_rows(p, "SELECT data FROM event"))
        elif p.name == "state.db":  # Hermes Agent's database: tool calls and terminal results are JSON text
            rows = opencode_rows(p, "SELECT role, content, tool_calls FROM messages")
            assert rows and all(isinstance(orjson.loads(c), list) for r, _, c in rows if c is not None)
            assert all(isinstance(orjson.loads(t), dict) for r, t, _ in rows if r == "tool")
        elif p.name == "workspace.yaml":  # Copilot CLI's companion: flat "key: value" lines
            lines = p.read_text().splitlines()
            assert lines[0] == f"id: {p.parent.name}" and all(": " in ln for ln in lines), p
        elif p.name == "openclaw-agent.sqlite":  # OpenClaw 2026.9.6: each row an entry, plain or zstd-compressed
            import zstandard

            rows = opencode_rows(p, "SELECT event_json, event_zstd, event_utf8_bytes FROM transcript_events")
            assert any(z is not None for _, z, _ in rows) and any(j is not None for j, _, _ in rows)
            for j, z, n in rows:
                line = j.encode() if j is not None else zstandard.ZstdDecompressor().decompress(z, max_output_size=n)
                assert len(line) == n and isinstance(orjson.loads(line), dict)
        elif p.suffix == ".json" and any(f"/{d}/" in p.as_posix() for d in (".openclaw", ".vibe", ".factory", ".kimi")):
            assert isinstance(orjson.loads(p.read_bytes()), dict), p  # indexes, metadata, settings, state
        elif ".cline/" in p.as_posix():  # Cline CLI: a transcript or a manifest, one JSON document each
            doc = orjson.loads(p.read_bytes())
            assert doc.get("sessionId", doc.get("session_id")) == p.parent.name, p
        else:
            assert p.name.endswith(".meta.json"), p
            assert set(orjson.loads(p.read_bytes())) == {"agentType", "description", "toolUseId"}


def test_manifest_matches_files(corpus: Path) -> None:
    m = orjson.loads((corpus / MANIFEST).read_bytes())
    per: dict[str, dict[str, int]] = {}
    for p in files(corpus):
        d = per.setdefault(vendor_of(corpus, p), {"files": 0, "bytes": 0, "lines": 0})
        data = p.read_bytes()
        d["files"] += 1
        d["bytes"] += len(data)
        d["lines"] += data.count(b"\n") if p.name.endswith((".jsonl", ".jsonl.bak")) else 0
    for vendor, d in per.items():
        for k, n in d.items():
            assert m["vendors"][vendor][k] == n, (vendor, k)
    assert m["file_count"] == sum(d["files"] for d in per.values())
    assert m["total_bytes"] == sum(d["bytes"] for d in per.values())
    assert m["line_count"] == sum(d["lines"] for d in per.values())
    assert 1.8 * 2**20 < m["total_bytes"] < 3 * 2**20
    sessions = {
        "claude_code": len(list((corpus / ".claude/projects").glob("*/*.jsonl"))),
        "codex": len(list((corpus / ".codex").rglob("rollout-*.jsonl"))),
        "clm": len(list((corpus / ".local/state/clm").glob("*.jsonl"))),
        "gemini": len(list((corpus / ".gemini/tmp").glob("*/chats/session-*.jsonl"))),
        "qwen": len(list((corpus / ".qwen/projects").glob("*/chats/*.jsonl"))),
        "pi": len(list((corpus / ".pi/agent/sessions").glob("*/*.jsonl"))),
        "copilot": len(list((corpus / ".copilot/session-state").glob("*/events.jsonl"))),
        "opencode": opencode_rows(corpus / ".local/share/opencode/opencode.db", "SELECT count(*) FROM session")[0][0],
        "cline": len(list((corpus / ".cline/data/sessions").glob("*/*.messages.json"))),
        "hermes": opencode_rows(corpus / ".hermes/state.db", "SELECT count(*) FROM sessions")[0][0],
        "openclaw": len(list((corpus / ".openclaw/agents/main/sessions").glob("*.jsonl"))) + opencode_rows(
            corpus / ".openclaw/agents/main/agent/openclaw-agent.sqlite",
            "SELECT count(DISTINCT session_id) FROM transcript_events")[0][0],
        "vibe": len(list((corpus / ".vibe/logs/session").glob("*/meta.json")))
        + len(list((corpus / ".vibe/logs/session/unified").glob("*/meta.json"))),
        "factory_droid": len(list((corpus / ".factory/sessions").glob("*/*.jsonl"))),
        "kimi": len(list((corpus / ".kimi/sessions").glob("*/*/context.jsonl"))),
    }
    for vendor, n in sessions.items():
        assert m["vendors"][vendor]["sessions"] == n > 0
    assert m["sessions"] == sum(sessions.values())
    assert set(m["sessions_last_30_days"]) == set(sessions)
    # Marker counts are exact: raw occurrences, and the same case-insensitively (FTS view).
    blob = b"".join(p.read_bytes() for p in files(corpus)
                    if p.name not in ("opencode.db", "state.db", "openclaw-agent.sqlite")).decode()  # (no markers there)
    for marker, d in m["markers"].items():
        assert d["occurrences"] >= 1, marker
        assert blob.count(marker) == d["occurrences"], marker
        assert len(re.findall(re.escape(marker), blob, re.I)) == d["occurrences"], marker
        assert sum(d["by_vendor"].values()) == d["occurrences"]
        assert all((corpus / f).is_file() for f in d["files"])
    assert m["largest_file"]["bytes"] == max(p.stat().st_size for p in files(corpus))


def test_vendor_shapes(corpus: Path) -> None:
    claude = corpus / ".claude/projects"
    assert list(claude.glob("*/*/subagents/agent-*.meta.json"))
    acompact = list(claude.glob("*/*/subagents/agent-acompact-*.jsonl"))
    assert acompact
    saw = {"compact_boundary": 0, "isCompactSummary": 0, "image": 0, "file-history-snapshot": 0, "progress": 0,
           "queue-operation": 0, "thinking": 0, "toolUseResult": 0}
    for p in claude.glob("*/*.jsonl"):
        lines = jsonl_lines(p)
        seen: set[str] = set()
        msg_ids: dict[str, int] = {}
        for d in lines:
            if "uuid" in d:
                # parentUuid always points to an earlier line of the same file (or null).
                assert d["parentUuid"] is None or d["parentUuid"] in seen, p
                seen.add(d["uuid"])
                assert d["sessionId"] == p.stem and d["cwd"] and d["version"].startswith("2.1.")
                assert START <= d["timestamp"] < END
            t = d["type"]
            saw[t] = saw.get(t, 0) + 1
            if d.get("subtype") == "compact_boundary":
                saw["compact_boundary"] += 1
                assert d["logicalParentUuid"] in seen
            saw["isCompactSummary"] += bool(d.get("isCompactSummary"))
            saw["toolUseResult"] += "toolUseResult" in d
            if t == "assistant":
                msg_ids[d["message"]["id"]] = msg_ids.get(d["message"]["id"], 0) + 1
                saw["thinking"] += d["message"]["content"][0]["type"] == "thinking"
            if t == "user" and isinstance(d["message"]["content"], list):
                saw["image"] += any(b.get("type") == "image" for b in d["message"]["content"])
        assert not msg_ids or max(msg_ids.values()) > 1  # responses split over several lines
    assert all(saw.values()), saw
    for p in acompact:
        first = jsonl_lines(p)[0]
        assert first["isSidechain"] and first["parentUuid"] is not None and first["agentId"].startswith("acompact-")
    # Codex: both generations, an archived rollout, filename uuid == session_meta id.
    rollouts = list((corpus / ".codex").rglob("rollout-*.jsonl"))
    assert list((corpus / ".codex/archived_sessions").glob("rollout-*.jsonl"))
    gens = set()
    for p in rollouts:
        lines = jsonl_lines(p)
        assert lines[0]["type"] == "session_meta" and p.stem.endswith(lines[0]["payload"]["id"])
        gens.add("g3" if "ordinal" in lines[0] else "g2")
        if "ordinal" in lines[0]:
            assert [d["ordinal"] for d in lines] == list(range(len(lines)))
        kinds = {(d["type"], d["payload"].get("type")) for d in lines}
        assert ("event_msg", "token_count") in kinds
    assert gens == {"g2", "g3"}
    # clm: meta first; a compacted session's .bak shares the meta line and is longer.
    clm = corpus / ".local/state/clm"
    baks = list(clm.glob("*.jsonl.bak"))
    assert baks
    for bak in baks:
        log = bak.with_suffix("")
        assert bak.read_bytes().split(b"\n")[0] == log.read_bytes().split(b"\n")[0]
    for p in clm.glob("*.jsonl"):
        lines = jsonl_lines(p)
        assert lines[0]["type"] == "meta" and lines[0]["id"] == p.stem
        for d in lines[1:]:
            if d.get("role") == "assistant" and "tool_calls" in d:
                assert all(isinstance(c["args"], str) for c in d["tool_calls"])

    # pi: a header, then a tree whose parentIds point to earlier entries; some branch in place
    branches = 0
    for p in (corpus / ".pi/agent/sessions").glob("*/*.jsonl"):
        lines = jsonl_lines(p)
        assert lines[0]["type"] == "session" and p.stem.endswith(lines[0]["id"])
        seen_ids: list[str] = []
        for d in lines[1:]:
            assert d["parentId"] is None or d["parentId"] in seen_ids, p
            branches += bool(seen_ids) and d["parentId"] != seen_ids[-1]
            seen_ids.append(d["id"])
    assert branches
    # Copilot CLI: events chained by parentId, a usage record before every assistant message
    for p in (corpus / ".copilot/session-state").glob("*/events.jsonl"):
        lines = jsonl_lines(p)
        assert lines[0]["type"] == "session.start" and lines[0]["data"]["sessionId"] == p.parent.name
        assert all(b["parentId"] == a["id"] for a, b in zip(lines, lines[1:]))
        kinds = [d["type"] for d in lines]
        assert kinds.count("session.usage_record") == kinds.count("assistant.message") > 0
        assert (p.parent / "workspace.yaml").is_file()
    # OpenCode: per session, events numbered from 0 that open with session.created, one
    # step-finish part per assistant step, parts written again as they stream
    db = corpus / ".local/share/opencode/opencode.db"
    events: dict[str, list[tuple[int, str, dict]]] = {}
    for agg, seq, kind, data in opencode_rows(db, "SELECT aggregate_id, seq, type, data FROM event ORDER BY aggregate_id, seq"):
        events.setdefault(agg, []).append((seq, kind, orjson.loads(data)))
    assert events
    for evs in events.values():
        assert [e[0] for e in evs] == list(range(len(evs))) and evs[0][1] == "session.created.1"
        parts = [e[2]["part"] for e in evs if e[1] == "message.part.updated.1"]
        assert sum(p["type"] == "step-finish" for p in parts) == sum(p["type"] == "step-start" for p in parts) > 0
        assert any(p["type"] == "tool" and p["state"]["status"] == "pending" for p in parts)
    # Hermes: every message row belongs to a session, each session has one usage row whose
    # totals are the session's, and each terminal call has its result
    db = corpus / ".hermes/state.db"
    sessions = opencode_rows(db, "SELECT id, input_tokens, output_tokens, api_call_count FROM sessions")
    usage = opencode_rows(db, "SELECT session_id, input_tokens, output_tokens, api_call_count FROM session_model_usage")
    assert sessions and sorted(sessions) == sorted(usage)
    assert opencode_rows(db, "SELECT count(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)") == [(0,)]
    calls = {c["id"] for (tc,) in opencode_rows(db, "SELECT tool_calls FROM messages WHERE tool_calls IS NOT NULL")
             for c in orjson.loads(tc)}
    assert calls and calls == {r for (r,) in opencode_rows(db, "SELECT tool_call_id FROM messages WHERE role = 'tool'")}
    # OpenClaw and Mistral Vibe: both generations each; Kimi: a wire log beside every context
    assert list((corpus / ".openclaw/agents/main/sessions").glob("*.jsonl"))
    assert opencode_rows(corpus / ".openclaw/agents/main/agent/openclaw-agent.sqlite", "SELECT count(*) FROM transcript_events")[0][0]
    assert list((corpus / ".vibe/logs/session").glob("session_*/messages.jsonl"))
    for p in (corpus / ".vibe/logs/session/unified").glob("*/journal/*.jsonl"):
        lines = jsonl_lines(p)
        assert [d["sequence"] for d in lines] == list(range(1, len(lines) + 1))
        assert all(b["previous_record_sha256"] == a["record_sha256"] for a, b in zip(lines, lines[1:]))
    for p in (corpus / ".kimi/sessions").glob("*/*/context.jsonl"):
        assert jsonl_lines(p)[0]["role"] == "_system_prompt" and jsonl_lines(p.with_name("wire.jsonl"))[0]["type"] == "metadata"


def test_append_adds_complete_lines(corpus: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(corpus, a)
    shutil.copytree(corpus, b)
    before = {p.relative_to(a).as_posix(): p.read_bytes() for p in files(a)}
    run(str(a), "--append-mb", "0.2", "--append-files", "5")
    run(str(b), "--append-mb", "0.2", "--append-files", "5")
    after = {p.relative_to(a).as_posix(): p.read_bytes() for p in files(a)}
    assert after == {p.relative_to(b).as_posix(): p.read_bytes() for p in files(b)}  # deterministic
    assert set(after) == set(before)
    changed = [k for k in after if after[k] != before[k]]
    assert len(changed) == 5
    assert {vendor_of(a, a / k) for k in changed} == {"claude_code", "codex", "clm"}
    added = 0
    for k in changed:
        old, new = before[k], after[k]
        assert new.startswith(old) and new.endswith(b"\n")
        tail = new[len(old):]
        added += len(tail)
        for ln in tail.split(b"\n")[:-1]:
            orjson.loads(ln)
        if k.startswith(".claude/"):
            # The new lines continue the existing parentUuid chain.
            lines = jsonl_lines(a / k)
            seen: set[str] = set()
            for d in lines:
                if "uuid" in d:
                    assert d["parentUuid"] is None or d["parentUuid"] in seen
                    seen.add(d["uuid"])
        if k.startswith(".codex/") and b'"ordinal"' in new[:200]:
            lines = jsonl_lines(a / k)
            assert [d["ordinal"] for d in lines] == list(range(len(lines)))
    assert 0.15 * 2**20 < added < 0.6 * 2**20
    m = orjson.loads((a / MANIFEST).read_bytes())
    assert m["total_bytes"] == sum(len(v) for v in after.values())
    assert m["line_count"] == sum(v.count(b"\n") for k, v in after.items() if ".jsonl" in k)
    assert m["appends"][-1]["bytes"] == added


def test_big_file(tmp_path: Path) -> None:
    root = tmp_path / "big"
    run(str(root), "--size", "3MB", "--big-file-mb", "1.5")
    m = orjson.loads((root / MANIFEST).read_bytes())
    largest = root / m["largest_file"]["path"]
    assert largest.parent.parent.name == "projects" and largest.suffix == ".jsonl"
    assert largest.stat().st_size >= 1.5 * 2**20
    jsonl_lines(largest)


def test_adapters_read_every_vendor(corpus: Path, tmp_path: Path) -> None:
    """Every vendor's generated files are read by its adapter (issue 35): one top-level thread
    per generated session, prompts, answers and tool results, and no line the adapter could not
    place (only duplicate, metadata and skipped reports: what the real clients' recordings give)."""
    from archive.db import open_db
    from archive.ingest import IngestOptions, ingest_paths

    m = orjson.loads((corpus / MANIFEST).read_bytes())
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(corpus)})).to_dict()
    assert summary["failed"] == 0
    conn = db.conn
    top = dict(conn.execute("SELECT provider, count(*) FROM threads WHERE parent_thread_id IS NULL GROUP BY 1").fetchall())
    assert top == {v.replace("_", "-"): d["sessions"] for v, d in m["vendors"].items()}
    roles = {(p, r) for p, r in conn.execute(
        "SELECT DISTINCT t.provider, m.role FROM messages m JOIN threads t ON t.id = m.thread_id").fetchall()}
    assert roles >= {(v, r) for v in top for r in ("user", "assistant")}
    blocks = {(p, k) for p, k in conn.execute("SELECT DISTINCT t.provider, b.type FROM blocks b JOIN messages m "
                                              "ON m.id = b.message_id JOIN threads t ON t.id = m.thread_id").fetchall()}
    assert blocks >= {(v, k) for v in top for k in ("text", "tool_call", "tool_result")}
    kinds = {k for (k,) in conn.execute("SELECT DISTINCT kind FROM reports")}
    assert kinds <= {"duplicate", "metadata", "skipped"}, kinds
    assert set(summary["reports"]) <= {"duplicate", "metadata", "skipped"}
