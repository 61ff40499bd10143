"""Public real files of Copilot CLI, Gemini CLI and Qwen Code (issue 33): sessions users
committed with their home folders (``tests/fixtures/<vendor>/public/SOURCES.md`` names each
repository, commit, path and licence), laid out in a home where each client wrote them.
Each is read with the usage (exact figures), model and tool calls it logs, every file is
restored sha256-equal, and a second ingest changes nothing. The contract tests
(``test_contract.py``) run on the same files: they sit in each vendor's fixture folder.
OpenCode's public files are tested in ``test_opencode_parts.py`` and ``test_opencode_storage.py``.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, restore

FIXTURES = Path(__file__).parent / "fixtures"
COPILOT = FIXTURES / "copilot" / "public"
GEMINI = FIXTURES / "gemini" / "public"
QWEN = FIXTURES / "qwen" / "public"
INKSCAPE = GEMINI / "KuantumQuest__MyDotFiles-HyDE" / "5dd181630c95c1112a25e5ca68b4816c9472a887284f756197a289e8e7a2d910"
FABIEN_PROJECT = "56cfacee57fb9791a4f38e595662752e07022cdeb39cd7127005427d7361037b"
COPILOT_IDS = {"feeb765c": "feeb765c-b05d-456f-bb55-ff2504dad88b", "9a493a94": "9a493a94-a307-489e-8bc7-d16f4afcd992"}
QWEN_PROJECTS = {"artas-linux": "-home-archbtw", "uncommonpope-png": "-data-data-com-termux-files-home"}


def lay_out(vendor: str, home: Path) -> list[Path]:
    """The public files of ``vendor`` where its client wrote them (names as the client gives
    them); returns the files."""
    if vendor == "copilot":
        for f in sorted(COPILOT.glob("*.events.jsonl")):
            folder = home / ".copilot" / "session-state" / COPILOT_IDS[f.name.split("__")[2].split(".")[0]]
            folder.mkdir(parents=True)
            shutil.copy(f, folder / "events.jsonl")
        root = home / ".copilot"
    elif vendor == "gemini":
        root = home / ".gemini" / "tmp"
        shutil.copytree(INKSCAPE, root / INKSCAPE.name)
        chats = root / FABIEN_PROJECT / "chats"
        chats.mkdir(parents=True)
        for f in sorted(GEMINI.glob("fabien-lessirard__*.json")):
            shutil.copy(f, chats / f.name.split("__")[2])
    else:
        for f in sorted(QWEN.glob("*.jsonl")):
            chats = home / ".qwen" / "projects" / QWEN_PROJECTS[f.name.split("__")[0]] / "chats"
            chats.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, chats / (f.name.split("__")[2].split(".")[0] + ".jsonl"))
        root = home / ".qwen"
    return sorted(p for p in root.rglob("*") if p.is_file())


def archive(vendor: str, tmp_path: Path):
    home = tmp_path / "home"
    files = lay_out(vendor, home)
    db = open_db(tmp_path / "a.db")
    options = IngestOptions(providers=(vendor,), env={"HOME": str(home)}, idle_seconds=10**9)
    summary = ingest_paths(db, None, options)
    assert summary.failed == 0 and summary.files_changed == len(files), summary
    assert not summary.reports.get("unexplained") and not summary.reports.get("adapter_error") and not summary.reports.get("unknown")
    return db, files, options


def usage(db, thread: str) -> list[tuple]:
    return db.execute("SELECT model, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens "
                      "FROM usage WHERE thread_id = ? ORDER BY ts, source_id, generation, offset, key", (thread,)).fetchall()


def calls(db, thread: str) -> Counter[str]:
    return Counter(r[0] for r in db.execute(
        "SELECT b.tool_name FROM blocks b JOIN messages m ON m.id = b.message_id "
        "WHERE m.thread_id = ? AND b.type = 'tool_call'", (thread,)))


def unanswered(db, thread: str) -> int:
    return db.execute(
        "SELECT count(*) FROM blocks c JOIN messages m ON m.id = c.message_id WHERE m.thread_id = ? AND c.type = 'tool_call' "
        "AND NOT EXISTS (SELECT 1 FROM blocks r WHERE r.type = 'tool_result' AND r.call_id = c.call_id)", (thread,)).fetchone()[0]


def model_of(db, thread: str) -> str | None:
    return db.execute("SELECT model FROM threads WHERE id = ?", (thread,)).fetchone()[0]


def test_copilot_1_0_5x_6x_usage_from_messages_and_shutdown(tmp_path: Path) -> None:
    """Copilot CLI 1.0.59/1.0.60 log no ``session.usage_record``: each response's output is its
    ``assistant.message`` ``outputTokens``, the rest is in ``session.shutdown`` ``modelMetrics``;
    the archive holds exactly the shutdown's totals (the figures issue 33 quotes)."""
    db, _, _ = archive("copilot", tmp_path)
    sid = COPILOT_IDS["feeb765c"]
    events = [orjson.loads(line) for line in (COPILOT / "XEFF09__dotfiles__feeb765c.events.jsonl").read_bytes().splitlines()]
    (shutdown,) = [e["data"] for e in events if e["type"] == "session.shutdown"]
    (metrics,) = shutdown["modelMetrics"].values()
    rows = usage(db, sid)
    assert len(rows) == metrics["requests"]["count"] == 13
    assert {r[0] for r in rows} == {"claude-sonnet-4.6"} == {model_of(db, sid)}
    u = metrics["usage"]
    # the shutdown's rest (input, cache, reasoning) rides on the last response (copilot/parse.py)
    totals = tuple(sum(r[i] or 0 for r in rows) for i in range(1, 6))
    assert totals == (u["inputTokens"] - u["cacheReadTokens"] - u["cacheWriteTokens"], u["cacheReadTokens"],
                      u["cacheWriteTokens"], u["outputTokens"], u["reasoningTokens"]) == (914, 400_526, 40_074, 4_199, 499)
    # each response's output as its message logs it
    assert [r[4] for r in rows] == [e["data"]["outputTokens"] for e in events if e["type"] == "assistant.message"]
    logged = Counter(t["name"] for e in events if e["type"] == "assistant.message" for t in e["data"].get("toolRequests", []))
    assert calls(db, sid) == logged and sum(logged.values()) == 36
    assert set(logged) == {"report_intent", "view", "glob", "bash", "create"}
    assert unanswered(db, sid) == 0

    # 1.0.59: MCP errors before the prompt; one answer
    other = COPILOT_IDS["9a493a94"]
    assert usage(db, other) == [("claude-sonnet-4.6", 3, 0, 19_768, 12, 0)]
    assert [r[0] for r in db.execute("SELECT role FROM messages WHERE thread_id = ? ORDER BY offset", (other,))] == ["user", "assistant"]


def test_gemini_chats_with_their_models_usage_and_calls(tmp_path: Path) -> None:
    """Gemini CLI chat documents of October 2025 and January 2026: every response's tokens
    under its own model (input net of ``cached``, output with ``thoughts``), the thread's model
    the latest response's; a request the user cancelled names a model (``auto-gemini-3``) and
    logs no tokens: no usage row; a cancelled call keeps its result, an error."""
    db, _, _ = archive("gemini", tmp_path)
    jan = "0f4d27cd-058e-4e8f-9b30-294d8792e0bb"
    assert usage(db, jan) == [
        ("gemini-2.5-pro", 14135, 0, 0, 633, 599), ("gemini-2.5-pro", 598, 7534, 0, 142, 110),
        ("gemini-2.5-pro", 902, 7511, 0, 401, 339), ("gemini-2.5-flash", 8485, 0, 0, 73, 63),
        ("gemini-2.5-pro", 4330, 7974, 0, 303, 259)]
    assert model_of(db, jan) == "gemini-2.5-pro"
    assert calls(db, jan) == Counter({"run_shell_command": 4, "delegate_to_agent": 1}) and unanswered(db, jan) == 0
    (cancelled,) = db.execute("SELECT b.is_error, coalesce(b.output, b.text) FROM blocks b JOIN messages m ON m.id = b.message_id "
                              "WHERE m.thread_id = ? AND b.type = 'tool_result' AND b.call_id LIKE 'delegate_to_agent-%'",
                              (jan,)).fetchall()
    assert cancelled[0] == 1 and "Cancelled" in cancelled[1]
    oct_ = "63dffd98-910c-4e2b-b7a6-6c79c25fbf14"
    assert usage(db, oct_) == [("gemini-2.5-pro", 6236, 0, 0, 49, 40)] and model_of(db, oct_) == "gemini-2.5-pro"
    assert calls(db, oct_) == Counter({"run_shell_command": 1})
    # September 2025: seven responses of two models; this release's chat keeps no tool calls
    sep = "90d45f43-a359-479a-beab-d75dd1c8359a"
    rows = usage(db, sep)
    assert [r[0] for r in rows] == ["gemini-2.5-pro"] * 6 + ["gemini-2.5-flash"] and model_of(db, sep) == "gemini-2.5-flash"
    doc = orjson.loads((INKSCAPE / "chats" / "session-2025-09-27T16-20-90d45f43.json").read_bytes())
    tokens = [m["tokens"] for m in doc["messages"] if m.get("tokens")]
    assert [(r[1], r[2], r[4], r[5]) for r in rows] == [
        (t["input"] - t["cached"], t["cached"], t["output"] + t["thoughts"], t["thoughts"]) for t in tokens]
    assert calls(db, sep) == Counter()
    # the checkpoint saved from it holds the calls (five read_file, each with its result)
    (ck,) = [r[0] for r in db.execute("SELECT id FROM threads WHERE title = 'checkpoint inkscape-nvim'")]
    assert calls(db, ck) == Counter({"read_file": 5}) and unanswered(db, ck) == 0


def test_qwen_each_response_counted_once(tmp_path: Path) -> None:
    """Qwen Code 0.5.1 and 0.12.6 log each response twice (``ui_telemetry`` ``api_response``,
    then the ``assistant`` record): one usage row each, with the record's figures."""
    db, _, _ = archive("qwen", tmp_path)
    old = "9a578cd0-ad2c-423c-8f19-95412a2d81af"
    assert usage(db, old) == [("coder-model", 11656, 0, 0, 9, 0)] and model_of(db, old) == "coder-model"
    new = "4a3f5e0f-328a-4f01-9dfe-667121bffe6a"
    records = [orjson.loads(line) for line in (QWEN / "uncommonpope-png__New-backend-pope__4a3f5e0f.head23.jsonl").read_bytes().splitlines()]
    meta = [r["usageMetadata"] for r in records if r["type"] == "assistant"]
    rows = usage(db, new)
    assert [r[4] for r in rows] == [m["candidatesTokenCount"] for m in meta] == [234, 59, 106, 511]
    assert [(r[1], r[2]) for r in rows] == [(m["promptTokenCount"] - m["cachedContentTokenCount"], m["cachedContentTokenCount"])
                                            for m in meta]
    assert {r[0] for r in rows} == {"coder-model"} == {model_of(db, new)}
    assert calls(db, new) == Counter({"read_file": 6, "glob": 1}) and unanswered(db, new) == 0


@pytest.mark.parametrize("vendor", ["copilot", "gemini", "qwen"])
def test_restored_whole_and_a_rerun_changes_nothing(vendor: str, tmp_path: Path) -> None:
    db, files, options = archive(vendor, tmp_path)
    before = dump_tables(db)
    assert ingest_paths(db, None, options).files_changed == 0
    assert dump_tables(db) == before
    restored = sorted(r.sha256 for r in restore(db, tmp_path / "out"))
    assert restored == sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
