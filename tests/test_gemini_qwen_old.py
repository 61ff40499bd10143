"""Gemini CLI 0.1.x and Qwen Code 0.1.x (issue 33): ``/chat save`` checkpoints, the ``logs.json``
prompt log and Qwen Code's ``chats/session-*.json`` documents, from the real clients' files in
``tests/fixtures/recorded/{gemini-0.1.22,qwen-0.1.4}/`` (scripts/record_old_sessions.py).

Parser level: every document explained, the golden dump. Archive level, from a home laid out
as the client left it: every content, prompt, answer, call and result archived; checkpoints
of one conversation share their messages (stored once, lineage by the engine); rerun and
rebuild change nothing; every file restores sha256-equal; a checkpoint saved again is a new
generation that keeps the old one."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from archive.db import dump_tables
from archive.ingest import ingest_paths, rebuild, restore
from archive.thread_view import MessagePages
from archive.vendors import get
from archive.vendors.base import DUPLICATE, INVALID, PARSE_ERROR, SNAPSHOT, UNKNOWN, MessageRow, Report, UsageRow
from helpers import check_golden, parse_bytes, rows_dump, source_for
from ingest_helpers import NEVER_IDLE, ingest

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
GOLDEN = Path(__file__).parent / "golden"
# release -> the recorded tmp/ folder; Gemini CLI 0.4.1, 0.10.0 and 0.19.4: checkpoints beside a
# session document (chats/session-*.json)
RELEASES = {"gemini-0.1.22": ".gemini", "gemini-0.4.1": ".gemini", "gemini-0.10.0": ".gemini", "gemini-0.19.4": ".gemini",
            "qwen-0.1.4": ".qwen"}
TMP = {r: RECORDED / r / "checkpoints" / h / "tmp" for r, h in RELEASES.items()}
OLD = {"gemini": TMP["gemini-0.1.22"], "qwen": TMP["qwen-0.1.4"]}
HOME_DIR = {"gemini": ".gemini", "qwen": ".qwen"}
FILES = [pytest.param(r.split("-")[0], p, id=f"{r}:{p.name}") for r, root in TMP.items() for p in sorted(root.rglob("*.json"))]


def _rows(vendor: str, path: Path) -> list:
    return [r for _, r in parse_bytes(get(vendor), path.read_bytes(), source_for(path, vendor, SNAPSHOT))]


@pytest.mark.parametrize("vendor,path", FILES)
def test_every_document_explained_and_golden(vendor: str, path: Path, update_golden: bool) -> None:
    rows = _rows(vendor, path)
    assert [r for r in rows if isinstance(r, Report) and r.kind in (UNKNOWN, INVALID, PARSE_ERROR)] == []
    assert any(isinstance(r, MessageRow) for r in rows)
    ids = [r.message.id for r in rows if isinstance(r, MessageRow)]
    assert len(ids) == len(set(ids))
    version = path.relative_to(RECORDED).parts[0]
    check_golden(GOLDEN / vendor / "old" / f"{version}-{path.name.replace('.json', '')}.jsonl",
                 rows_dump([(0, r) for r in rows]), update_golden)


def test_classify_and_roots() -> None:
    gemini, qwen = get("gemini"), get("qwen")
    g = Path("/h/.gemini/tmp/0a1b")
    assert gemini.classify(g / "checkpoint-one.json") == SNAPSHOT
    assert gemini.classify(g / "checkpoint-a%2Fb.json") == SNAPSHOT
    assert gemini.classify(g / "logs.json") == SNAPSHOT
    assert gemini.classify(g / "checkpoints" / "x.json") is None  # /restore's tool snapshots: not read
    q = Path("/h/.qwen/tmp/0a1b")
    for p in (q / "chats" / "session-2026-12-02T01-07-d6a64365.json", q / "logs.json", q / "checkpoint-one.json"):
        assert qwen.classify(p) == SNAPSHOT
    assert qwen.classify(g / "logs.json") is None  # Gemini CLI's own
    # 0.1.x honours neither QWEN_HOME nor QWEN_RUNTIME_DIR: the home's .qwen/tmp is looked at too
    assert qwen.default_roots({"QWEN_HOME": "/srv/q"}, Path("/home/me")) == [
        Path("/srv/q/projects"), Path("/home/me/.qwen/tmp")]


def _home(tmp_path: Path, release: str) -> Path:
    """A home with the recorded files where the client wrote them."""
    home = tmp_path / "home"
    shutil.copytree(TMP[release], home / RELEASES[release] / "tmp")
    return home


def _ingest_home(tmp_path: Path, release: str, monkeypatch: pytest.MonkeyPatch, db_name: str = "a.db"):
    home = _home(tmp_path, release)
    for var, value in (("HOME", home), ("GEMINI_CLI_HOME", home), ("QWEN_HOME", home / ".qwen")):
        monkeypatch.setenv(var, str(value))
    db, summary = ingest(tmp_path / db_name, None)
    return db, summary, home


@pytest.mark.parametrize("release", list(RELEASES))
def test_everything_the_client_wrote_is_archived(release: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vendor = release.split("-")[0]
    db, summary, home = _ingest_home(tmp_path, release, monkeypatch)
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    files = sorted(p for p in (home / HOME_DIR[vendor] / "tmp").rglob("*") if p.is_file())
    assert len(files) == len(list(TMP[release].rglob("*.json")))
    paths = {r[0] for r in db.execute("SELECT path FROM source_paths")}
    assert paths == {str(p) for p in files}
    assert {r[0] for r in db.execute("SELECT provider FROM sources")} == {vendor}
    threads = {r[0]: r[1] for r in db.execute("SELECT id, title FROM threads")}
    # every checkpoint's view is the whole conversation the client saved, in order
    for f in files:
        if not f.name.startswith("checkpoint-"):
            continue
        contents = orjson.loads(f.read_bytes())
        contents = contents["history"] if isinstance(contents, dict) else contents  # 0.19.4: {history, authType}
        (tid,) = [t for t, title in threads.items() if title == f"checkpoint {f.name[11:-5]}"]
        view = list(MessagePages(db, tid))
        assert len(view) == len(contents)
        for m, c in zip(view, contents):
            assert m.role == {"user": "tool" if "functionResponse" in c["parts"][0] else "user", "model": "assistant"}[c["role"]]
            texts = [p["text"] for p in c["parts"] if "text" in p]
            assert [b.text for b in m.content if type(b).__name__ == "Text"] == texts
            calls = [p["functionCall"]["name"] for p in c["parts"] if "functionCall" in p]
            assert [b.name for b in m.content if type(b).__name__ == "ToolCall"] == calls
            results = [p["functionResponse"]["id"] for p in c["parts"] if "functionResponse" in p]
            assert [b.call_id for b in m.content if type(b).__name__ == "ToolResult"] == results
    # the checkpoints of one conversation share their messages: stored once
    docs = [orjson.loads(f.read_bytes()) for f in files if f.name.startswith("checkpoint-")]
    n_contents = sum(len(d["history"] if isinstance(d, dict) else d) for d in docs)
    stored = db.execute("SELECT count(*) FROM messages WHERE thread_id IN (SELECT id FROM threads WHERE title LIKE 'checkpoint %')").fetchone()[0]
    # one: 9 contents (Qwen Code: 8, a model turn's text and call in one content); two and
    # three add their last exchange each
    one = orjson.loads(next(TMP[release].rglob("checkpoint-one.json")).read_bytes())
    assert stored == len(one["history"] if isinstance(one, dict) else one) + 4
    assert n_contents > stored
    forks = db.execute("SELECT count(*) FROM thread_lineage").fetchone()[0]
    assert forks == 2
    # every call has its result, by id
    unpaired = db.execute(
        "SELECT count(*) FROM blocks c WHERE c.type = 'tool_call' AND NOT EXISTS "
        "(SELECT 1 FROM blocks r WHERE r.type = 'tool_result' AND r.call_id = c.call_id)").fetchone()[0]
    assert unpaired == 0
    # the prompt log: every prompt typed, slash commands marked
    log = orjson.loads(next(TMP[release].rglob("logs.json")).read_bytes())
    rows = db.execute("SELECT m.id FROM messages m JOIN threads t ON t.id = m.thread_id "
                      "WHERE json_extract(t.metadata, '$.promptLog') AND m.role = 'user'").fetchall()
    assert len(rows) == len(log) == 7
    for doc in TMP[release].rglob("session-*.json"):
        # every message of the session document is archived, in its thread
        d = orjson.loads(doc.read_bytes())
        kept = {r[0] for r in db.execute("SELECT json_extract(provenance, '$.sourceId') FROM messages WHERE thread_id = ?",
                                         (d["sessionId"],))}
        assert {m["id"] for m in d["messages"]} <= kept
        if vendor == "gemini":
            # every answer's tokens once, with its model; every tool call and its result
            answers = [m for m in d["messages"] if m["type"] == "gemini"]
            usage = db.execute("SELECT model, output_tokens FROM usage WHERE thread_id = ?", (d["sessionId"],)).fetchall()
            assert sorted(usage) == sorted((m["model"], m["tokens"]["output"]) for m in answers if m.get("tokens"))
            calls = [c for m in answers for c in m.get("toolCalls") or []]
            got = db.execute("SELECT b.type, b.call_id FROM blocks b JOIN messages m ON m.id = b.message_id "
                             "WHERE m.thread_id = ? AND b.type IN ('tool_call', 'tool_result') ORDER BY b.type, b.call_id",
                             (d["sessionId"],)).fetchall()
            assert got == sorted([("tool_call", c["id"]) for c in calls] + [("tool_result", c["id"]) for c in calls])
    if vendor == "qwen":
        # the session document: every prompt and answer, with each response's tokens
        (doc,) = OLD[vendor].rglob("session-*.json")
        d = orjson.loads(doc.read_bytes())
        view = list(MessagePages(db, d["sessionId"]))
        assert [(m.role, m.content[0].text) for m in view] == [
            ("user" if x["type"] == "user" else "assistant", x["content"]) for x in d["messages"]]
        usage = db.execute("SELECT count(*), sum(input_tokens), sum(cache_read_tokens) FROM usage WHERE thread_id = ?",
                           (d["sessionId"],)).fetchone()
        toks = [x["tokens"] for x in d["messages"] if x["type"] == "qwen"]
        assert usage == (len(toks), sum(t["input"] - t["cached"] for t in toks), sum(t["cached"] for t in toks))


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_prompt_log_is_not_an_abandoned_session(release: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt log's thread holds the prompts of a session without its answers: its signals
    end ``log`` and it has no outcome (it read ``abandoned``), while the sessions beside it
    keep theirs; an archive derived before (``open``) is derived again by the next ingest
    after migration m139."""
    from archive.marks import annotate

    db, _, _home = _ingest_home(tmp_path, release, monkeypatch)
    logs = [r[0] for r in db.execute("SELECT id FROM threads WHERE json_extract(metadata, '$.promptLog')")]
    others = [r[0] for r in db.execute("SELECT id FROM threads WHERE json_extract(metadata, '$.promptLog') IS NULL")]
    assert logs and others
    signals = {r["id"]: r["signals"] for r in annotate(db.conn, [{"id": t} for t in logs + others])}
    for t in logs:
        assert signals[t]["ending"] == "log" and signals[t]["outcome"] is None, t
    assert {signals[t]["ending"] for t in others} <= {"completed", "errored", "open"}
    assert any(signals[t]["outcome"] is not None for t in others)
    # an archive of the release before: the logs read open, as an abandoned session
    db.execute("UPDATE thread_signals SET ending = 'open' WHERE thread_id IN (SELECT value FROM json_each(?))",
               (orjson.dumps(logs).decode(),))
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm139_prompt_logs_have_no_outcome'")
    db.conn.commit()
    db.conn.close()
    again, summary = ingest(tmp_path / "a.db", None)  # opened and migrated again
    assert summary.files_changed == 0
    ending = dict(again.execute("SELECT thread_id, ending FROM thread_signals WHERE thread_id IN (SELECT value FROM json_each(?))",
                                (orjson.dumps(logs).decode(),)).fetchall())  # fmt: skip
    assert set(ending.values()) == {"log"}


@pytest.mark.parametrize("release", list(RELEASES))
def test_rerun_rebuild_restore_and_a_checkpoint_saved_again(release: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    vendor = release.split("-")[0]
    db, _, home = _ingest_home(tmp_path, release, monkeypatch)
    before = dump_tables(db)
    assert ingest_paths(db, None, NEVER_IDLE).files_changed == 0 and dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before
    restored = {r.path: r.sha256 for r in restore(db, tmp_path / "out")}
    files = [p for p in (home / HOME_DIR[vendor] / "tmp").rglob("*") if p.is_file()]
    assert sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in files) == sorted(restored.values())
    # /chat save one again, later in the conversation: the file is rewritten; the archive
    # keeps both versions (generations) and the messages of both
    (proj,) = [p.name for p in TMP[release].iterdir() if p.is_dir()]
    one = home / HOME_DIR[vendor] / "tmp" / proj / "checkpoint-one.json"
    first = one.read_bytes()
    one.write_bytes((one.parent / "checkpoint-two.json").read_bytes())
    ingest_paths(db, None, NEVER_IDLE)
    gens = db.execute("SELECT count(*) FROM generations g JOIN sources s ON s.id = g.source_id "
                      "WHERE s.last_path = ?", (str(one),)).fetchone()[0]
    assert gens == 2
    every = {r.sha256 for r in restore(db, tmp_path / "all", all_generations=True)}
    assert {hashlib.sha256(first).hexdigest(), hashlib.sha256(one.read_bytes()).hexdigest()} <= every


def test_copied_homes_given_by_hand(tmp_path: Path) -> None:
    """A copy of each home given by hand: the same file names (``tmp/<hash>/logs.json``,
    ``checkpoint-*.json``) go to the vendor whose folder holds them."""
    for vendor in ("qwen", "gemini"):
        shutil.copytree(OLD[vendor], tmp_path / "backup" / HOME_DIR[vendor] / "tmp")
    db, summary = ingest(tmp_path / "a.db", [tmp_path / "backup"])
    assert summary.failed == 0
    got = {(r[0], Path(r[1]).parts[len((tmp_path / "backup").parts)]) for r in db.execute(
        "SELECT s.provider, p.path FROM sources s JOIN source_paths p ON p.source_id = s.id")}
    assert got == {("qwen", ".qwen"), ("gemini", ".gemini")}
    (doc,) = OLD["qwen"].rglob("session-*.json")
    sid = orjson.loads(doc.read_bytes())["sessionId"]
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ? AND role = 'assistant'", (sid,)).fetchone()[0] == 4


def test_a_call_without_id_takes_its_response_id() -> None:
    """Gemini CLI 0.1.22 writes ``functionCall`` without ``id``: the call takes the id of the
    response answering it (same name, in order), so calls and results pair."""
    (one,) = [p for p in OLD["gemini"].rglob("checkpoint-one.json")]
    contents = orjson.loads(one.read_bytes())
    assert not any("id" in p["functionCall"] for c in contents for p in c["parts"] if "functionCall" in p)
    rows = _rows("gemini", one)
    calls = [b for r in rows if isinstance(r, MessageRow) for b in r.message.content if type(b).__name__ == "ToolCall"]
    results = [b for r in rows if isinstance(r, MessageRow) for b in r.message.content if type(b).__name__ == "ToolResult"]
    assert [c.call_id for c in calls] == [r.call_id for r in results] and all(c.call_id for c in calls)
    assert all(c.extra == {"callIdFrom": "functionResponse"} for c in calls)
    assert not [r for r in rows if isinstance(r, (UsageRow,)) or (isinstance(r, Report) and r.kind == DUPLICATE)]


def test_shapes_the_recordings_do_not_show() -> None:
    """An empty log (the client writes ``[]`` when it starts), a log entry of another shape,
    and a checkpoint wrapped in an object (``{"history": [...]}``) read like the array."""
    gemini = get("gemini")

    def rows(doc) -> list:
        return [r for _, r in parse_bytes(gemini, orjson.dumps(doc), source_for(Path("t/p/checkpoint-x.json"), "gemini", SNAPSHOT))]

    assert [(r.kind, r.reason) for r in rows([])] == [("skipped", "empty document")]
    log = rows([{"sessionId": "s", "messageId": 0, "type": "user", "message": "hi", "timestamp": "2025-07-01T00:00:00Z"},
                {"sessionId": "s", "messageId": "1", "message": "bad"}])
    assert [type(r).__name__ for r in log] == ["ThreadFact", "MessageRow", "Report"] and log[2].kind == INVALID
    (one,) = OLD["gemini"].rglob("checkpoint-one.json")
    history = orjson.loads(one.read_bytes())
    plain = [r for r in rows(history) if isinstance(r, MessageRow)]
    wrapped = rows({"history": history, "authType": "gemini-api-key"})
    assert [r.message for r in wrapped if isinstance(r, MessageRow)] == [r.message for r in plain]
    assert wrapped[0].fields["metadata"]["checkpointFields"] == {"authType": "gemini-api-key"}
