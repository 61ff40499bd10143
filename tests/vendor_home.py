"""A vendor home laid out from the fixtures, the way the vendors lay out their files.

Claude Code fixtures are renamed after the sessionId inside them (the shared fixtures
carry their upstream names), subagent transcripts go to ``<session>/subagents/`` (2.1.x)
or beside the session (2.0.x); Codex rollouts go under ``sessions/YYYY/MM/DD``; clm logs
under ``state/clm``. The recorded trees (tests/fixtures/recorded) are already in layout
(Gemini CLI and Qwen Code fixtures are copies of recorded files, placed from there); the
pi and Copilot CLI fixtures are byte-for-byte copies of recorded files (the archive would
take a second copy for the same source moved), so they come from the recorded trees only;
OpenCode's recorded sessions are written into one database, as OpenCode keeps them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson

FIXTURES = Path(__file__).parent / "fixtures"


def _first_with(path: Path, key: str) -> dict:
    for line in path.read_bytes().splitlines():
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(d, dict) and key in d:
            return d
    return {}


def build_home(home: Path) -> dict[str, Path]:
    """Lay out every vendor fixture under ``home``; returns fixture name -> placed path."""
    placed: dict[str, Path] = {}
    claude = home / ".claude" / "projects"
    for f in sorted((FIXTURES / "claude-code").glob("*.jsonl")) + sorted((FIXTURES / "claude-code" / "recorded").glob("*.jsonl")):
        d = _first_with(f, "sessionId")
        sid = d["sessionId"]
        slug = "-" + "".join(c if c.isalnum() else "-" for c in str(d.get("cwd") or "/fixture").lstrip("/"))
        if d.get("agentId"):
            if "marot" in f.name:  # 2.1.x layout
                target = claude / slug / sid / "subagents" / f"agent-{d['agentId']}.jsonl"
            else:  # 2.0.x: flat, beside the session
                target = claude / slug / f"agent-{d['agentId']}.jsonl"
        else:
            target = claude / slug / f"{sid}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        placed[f.name] = target
    codex = home / ".codex" / "sessions" / "2026" / "01" / "01"
    for f in sorted((FIXTURES / "codex").glob("*.jsonl")) + sorted((FIXTURES / "codex" / "recorded").glob("*.jsonl")):
        target = codex / f"rollout-{f.stem}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        placed[f.name] = target
    clm = home / ".local" / "state" / "clm"
    clm.mkdir(parents=True, exist_ok=True)
    for f in sorted((FIXTURES / "clm").glob("*.jsonl")):
        shutil.copyfile(f, clm / f.name)
        placed[f.name] = clm / f.name
    homes = {"claude-code": ".claude", "codex": ".codex", "gemini": ".gemini", "qwen": ".qwen",
             "pi": ".pi/agent", "copilot": ".copilot", "vibe": ".vibe/logs", "cline": ".cline/data",
             "kimi": ".kimi"}
    recorded = FIXTURES / "recorded"
    for vendor_dir in sorted(recorded.glob("*")) if recorded.exists() else []:
        if vendor_dir.name.endswith("-side"):
            continue  # a home's side files (issue 38), laid out by tests/test_side_files_rest.py itself
        if vendor_dir.name.startswith("opencode-"):
            placed.update(_opencode_db(home, vendor_dir))
            continue
        if vendor_dir.name.startswith("kilo-"):  # an OpenCode fork: the same schema in kilo/kilo.db
            placed.update(_opencode_db(home, vendor_dir, "kilo"))
            continue
        vendor = next(h for v, h in homes.items() if vendor_dir.name.startswith(v + "-"))
        for scenario in sorted(p for p in vendor_dir.iterdir() if p.is_dir()):
            for f in sorted(scenario.rglob("*")):
                if f.is_file() and f.name not in ("scenario.json", "steps.json"):
                    rel = f.relative_to(scenario)
                    # the old releases' recordings are relative to the home (.gemini/tmp/...,
                    # .qwen/tmp/...: scripts/record_old_sessions.py), the others to the vendor home
                    if rel.parts[0] == vendor.split("/")[0]:
                        # two releases recorded in the same folder share the project folder
                        # name (sha256 of the cwd): each gets one of its own
                        parts = rel.parts
                        target = home.joinpath(*parts[:2], f"{parts[2]}-{vendor_dir.name}", *parts[3:])
                    else:
                        target = home / vendor / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, target)
                    key = f"{vendor_dir.name}/{scenario.name}/{f.name}"
                    # a name a session repeats in several folders (Vibe's generations/<n>/manifest.json)
                    placed[key if key not in placed else f"{vendor_dir.name}/{scenario.name}/{rel}"] = target
    return placed


def _opencode_db(home: Path, vendor_dir: Path, name: str = "opencode") -> dict[str, Path]:
    """OpenCode keeps its sessions in one database: the recorded sessions' event rows are
    written into ``.local/share/opencode/opencode.db`` as the client writes them (the
    recorded ``export/`` documents are for the client's own import, not part of its home)."""
    import sqlite3

    from opencode_writer import SCHEMA, events, write

    db = home / ".local" / "share" / name / f"{name}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    placed = {}
    for doc in sorted(vendor_dir.glob(f"*/{name}/*.jsonl")):
        for ev in events(doc):
            write(conn, *ev)
        # the recorded document: what restore gives back for the session (the bytes read from the db)
        placed[f"{vendor_dir.name}/{doc.parent.parent.name}/{doc.name}"] = doc
    conn.close()  # the last connection checkpoints the WAL into the file
    past = 1_767_225_600 * 10**9  # written long before the test reads it, as a client's database at rest
    os.utime(db, ns=(past, past))
    return placed


def vendor_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "GEMINI_CLI_HOME": str(home),
        "QWEN_HOME": str(home / ".qwen"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
        "COPILOT_HOME": str(home / ".copilot"),
        "HERMES_HOME": str(home / ".hermes"),
        "VIBE_HOME": str(home / ".vibe"),
        "KIMI_SHARE_DIR": str(home / ".kimi"),
        "OPENCLAW_STATE_DIR": str(home / ".openclaw"),
        "CLINE_DIR": str(home / ".cline"),
    }
