"""Sessions written by older releases (issue 33): pi's session format v1 (0.7 - 0.30) and the
same file after pi migrated it, Copilot CLI 0.0.3xx's flat ``session-state/<uuid>.jsonl``,
and the TypeScript Codex CLI's ``rollout-*.json`` documents. Each is read whole from the
real clients' recordings (tests/fixtures/<vendor>/SOURCES.md), restores byte for byte, and
a rerun changes nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Reasoning, Text, ToolCall, ToolResult
from archive.projection import load_messages, load_threads
from archive.vendors import get
from ingest_helpers import portable_dump

FIXTURES = Path(__file__).parent / "fixtures"
PI_V1 = FIXTURES / "pi" / "pi-0.27.9-v1.jsonl"
PI_MIGRATED = FIXTURES / "pi" / "pi-0.27.9-v1-migrated-by-0.73.1.jsonl"
COPILOT_FLAT = FIXTURES / "copilot" / "copilot-0.0.370-flat.jsonl"
COPILOT_SID = "391d7039-4c83-4d20-9ca9-fb2aac2121a7"
CODEX_TS = FIXTURES / "codex" / "rollout-2026-12-02-8ca0f6e5-23c6-49d6-b874-7dd13d3204ec.json"
CODEX_TS_FIRST = [FIXTURES / "codex" / f"rollout-2026-12-02-{u}.json"
                  for u in ("be222129-3cb8-4071-bd7f-c6279c7eb01f", "2572df8b-62b8-4117-b93e-d3817e278b5a")]
NEVER_IDLE = 10**9


def ingest_home(tmp_path: Path, env: dict[str, str] | None = None):
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(tmp_path / "home"), **(env or {})},
                                                   idle_seconds=NEVER_IDLE))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    return db, summary


def texts(messages) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        for b in m.content:
            if isinstance(b, Text):
                out.append((m.role, b.text))
            elif isinstance(b, Reasoning):
                out.append((m.role, f"reasoning: {b.text}"))
            elif isinstance(b, ToolCall):
                out.append((m.role, f"call {b.name}"))
            elif isinstance(b, ToolResult):
                out.append((m.role, f"result {b.call_id}"))
    return out


def assert_restores(db, tmp_path: Path, originals: list[Path]) -> None:
    restored = restore(db, tmp_path / "restored")
    want = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in originals)
    assert sorted(r.sha256 for r in restored) == want


# ---------------------------------------------------------------- pi session format v1


PI_V1_CONVERSATION = [
    ("user", "say hello"), ("assistant", "reasoning: Thinking about hello."), ("assistant", "Hello back from the mock."),
    ("user", "please list the files"), ("assistant", "Running ls."), ("assistant", "call bash"),
    ("tool", "result call_66363e51b587a43bad5680dd"), ("assistant", "Listed."),
]


def pi_home_file(tmp_path: Path, src: Path) -> Path:
    dest = tmp_path / "home" / ".pi" / "agent" / "sessions" / "--tmp-rec33-w1--" / \
        "2026-12-02T00-49-10-365Z_2018c66f-9201-4201-bf12-d6c34bdb0b3d.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def test_pi_v1_session_is_read_whole(tmp_path: Path) -> None:
    pi_home_file(tmp_path, PI_V1)
    db, _ = ingest_home(tmp_path)
    (thread,) = load_threads(db.conn, "provider = 'pi'")
    assert thread.id == "5858744d-b75f-4724-80ba-cbc6e12e7808"  # the header's id, not the file name's
    messages = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert texts(messages) == PI_V1_CONVERSATION
    # a chain, as pi's migration makes it: each message's parent is the one before it
    assert [m.parent_id for m in messages] == [None] + [m.id for m in messages[:-1]]
    assert thread.metadata["model"] == "m" and thread.metadata["sessionFormat"] == "v1"
    assert db.execute("SELECT count(*) FROM usage").fetchone()[0] == 3
    assert_restores(db, tmp_path, [PI_V1])


def test_pi_v1_file_rewritten_by_pi_stays_one_thread(tmp_path: Path) -> None:
    """pi 0.73.1 migrates a v1 file in place when it resumes it (random ids appended): the
    rewritten file is a new generation of the same thread whose messages keep their ids,
    and the turn pi added after the migration follows them."""
    path = pi_home_file(tmp_path, PI_V1)
    db, _ = ingest_home(tmp_path)
    first = [m.id for m in load_messages(db.conn, "m.thread_id = ?", ("5858744d-b75f-4724-80ba-cbc6e12e7808",))]
    shutil.copyfile(PI_MIGRATED, path)
    db, _ = ingest_home(tmp_path)
    (thread,) = load_threads(db.conn, "provider = 'pi'")
    messages = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert [m.id for m in messages][: len(first)] == first
    assert texts(messages) == PI_V1_CONVERSATION + [
        ("user", "say hello again"), ("assistant", "reasoning: Thinking about hello."),
        ("assistant", "Hello back from the mock.")]
    assert messages[len(first)].parent_id == first[-1]  # pi's new entry hangs on the migrated leaf
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 8
    assert db.execute("SELECT count(*) FROM usage").fetchone()[0] == 4


def test_pi_v1_and_migrated_file_parse_to_the_same_ids() -> None:
    from archive.vendors.base import MessageRow, SourceInfo

    def ids(path: Path) -> list[str]:
        parser = get("pi").parser(SourceInfo("s-" + path.name, "pi", str(path)))
        return [r.message.id for line in path.read_bytes().splitlines()
                for r in parser.feed(0, line) if isinstance(r, MessageRow)]

    assert ids(PI_MIGRATED)[:6] == ids(PI_V1)


def test_pi_v1_header_names_the_model() -> None:
    from archive.vendors.base import SourceInfo, ThreadFact

    def facts(name: str) -> dict:
        path = FIXTURES / "pi" / name
        parser = get("pi").parser(SourceInfo("s", "pi", str(path)))
        out: dict = {}
        for r in parser.feed(0, path.read_bytes().splitlines()[0]):
            if isinstance(r, ThreadFact):
                out.update(r.fields.get("metadata", {}))
        return out

    # 0.7: "model": "google/gemini-2.5-flash"; 0.13: provider and modelId
    assert {k: facts("pi-0.7.6-v1.jsonl")[k] for k in ("model", "modelProvider", "thinkingLevel")} == {
        "model": "gemini-2.5-flash", "modelProvider": "google", "thinkingLevel": "off"}
    assert {k: facts("pi-0.13.2-v1.jsonl")[k] for k in ("model", "modelProvider")} == {
        "model": "m", "modelProvider": "mock"}


def test_pi_v1_branch_file_copies_are_the_parents() -> None:
    """A v1 branch (``branchedFrom``, pi-mono's own fixture): the entries stamped before the
    header are the parent's, under the ids the parent's own file gives them (by position)."""
    from archive.vendors.base import MessageRow, SourceInfo, ThreadFact

    path = FIXTURES / "pi" / "badlogic__pi-mono__before-compaction.head13.jsonl"
    parser = get("pi").parser(SourceInfo("s", "pi", str(path)))
    rows = [r for line in path.read_bytes().splitlines() for r in parser.feed(0, line)]
    header = rows[0]
    assert isinstance(header, ThreadFact) and header.fields["parentThreadId"] == "d97339c6-6c10-4827-846b-9ff1d9c3dc37"
    msgs = [r.message for r in rows if isinstance(r, MessageRow)]
    assert msgs and {m.thread_id for m in msgs} == {"d97339c6-6c10-4827-846b-9ff1d9c3dc37"}
    assert msgs[0].provenance.source_id == "v1-0"


# ---------------------------------------------------------------- Copilot CLI 0.0.3xx


def test_copilot_flat_layout_is_found_and_read(tmp_path: Path) -> None:
    adapter = get("copilot")
    assert adapter.detect(COPILOT_FLAT.read_bytes()[:65536])  # a file given by hand
    assert adapter.classify(Path(f"/h/.copilot/session-state/{COPILOT_SID}.jsonl")) == "lines"
    assert adapter.classify(Path("/h/.copilot/session-state/notes.jsonl")) is None
    assert adapter.classify(Path(f"/h/.copilot/other/{COPILOT_SID}.jsonl")) is None
    # 0.0.370 keeps its state under $XDG_STATE_HOME/.copilot when that is set
    assert adapter.default_roots({"XDG_STATE_HOME": "/st"}, Path("/h")) == [
        Path("/h/.copilot/session-state"), Path("/st/.copilot/session-state")]
    state = tmp_path / "state"
    dest = state / ".copilot" / "session-state" / f"{COPILOT_SID}.jsonl"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(COPILOT_FLAT, dest)
    db, summary = ingest_home(tmp_path, {"XDG_STATE_HOME": str(state)})
    assert summary.files_changed == 1
    (thread,) = load_threads(db.conn, "provider = 'copilot'")
    assert thread.id == COPILOT_SID and thread.metadata["version"] == "0.0.370"
    assert thread.metadata["model"] == "gpt-4.1"  # from the model_change the resume wrote
    messages = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert texts(messages) == [
        ("user", "say hello"), ("assistant", "Hello back from the mock."),
        ("user", "please list the files"), ("assistant", "Running ls."), ("assistant", "call bash"),
        ("tool", "result call_c6b19ec201e6d901ee355190"), ("assistant", "Listed."),
        ("user", "say hello again"), ("assistant", "Hello back from the mock.")]
    before = portable_dump(db)
    assert ingest_home(tmp_path, {"XDG_STATE_HOME": str(state)})[1].files_changed == 0
    assert portable_dump(db) == before
    assert_restores(db, tmp_path, [COPILOT_FLAT])


# ---------------------------------------------------------------- Codex TypeScript CLI


def codex_home(tmp_path: Path, files: list[Path]) -> None:
    sessions = tmp_path / "home" / ".codex" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copyfile(f, sessions / f.name)


def test_codex_typescript_rollout_is_read_whole(tmp_path: Path) -> None:
    codex_home(tmp_path, [CODEX_TS])
    db, _ = ingest_home(tmp_path)
    (thread,) = load_threads(db.conn, "provider = 'codex'")
    assert thread.id == "8ca0f6e5-23c6-49d6-b874-7dd13d3204ec"
    messages = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert texts(messages) == [
        ("user", "say hello"), ("assistant", "Hello back from the mock."), ("user", "run the shell please"),
        ("assistant", "call shell"), ("tool", "result call_1f9fd45ffc0db5de3ebe27e4"), ("assistant", "Shell done.")]
    assert_restores(db, tmp_path, [CODEX_TS])


def test_codex_first_typescript_release_reasoning_and_each_save(tmp_path: Path) -> None:
    """0.1.2504172351 draws a new session id on every save: each file is read whole, as its
    own thread (the first turn then appears in both; see the README)."""
    codex_home(tmp_path, CODEX_TS_FIRST)
    db, _ = ingest_home(tmp_path)
    threads = {t.id: t for t in load_threads(db.conn, "provider = 'codex'")}
    assert set(threads) == {"be222129-3cb8-4071-bd7f-c6279c7eb01f", "2572df8b-62b8-4117-b93e-d3817e278b5a"}
    whole = load_messages(db.conn, "m.thread_id = ?", ("2572df8b-62b8-4117-b93e-d3817e278b5a",))
    assert texts(whole) == [
        ("user", "say hello"), ("assistant", "reasoning: Thinking about hello."), ("assistant", "Hello back from the mock."),
        ("user", "run the shell please"), ("assistant", "call shell"), ("tool", "result call_63eadc683aa96347b51e1e69"),
        ("assistant", "Done.")]
    assert_restores(db, tmp_path, CODEX_TS_FIRST)


CODEX_TS_LAST = FIXTURES / "codex" / "rollout-2026-12-02-2907c00d-2bf2-44df-8f09-149f1f3dc177.json"  # 0.1.2505191453


@pytest.mark.parametrize("path", [CODEX_TS, *CODEX_TS_FIRST, CODEX_TS_LAST], ids=lambda p: p.name[19:27])
def test_codex_typescript_rollout_every_item_explained(path: Path) -> None:
    from archive.vendors.base import MessageRow, Report, SourceInfo

    doc = json.loads(path.read_bytes())
    parser = get("codex").parser(SourceInfo("s", "codex", str(path), kind="snapshot"))
    rows = list(parser.feed(0, path.read_bytes()))
    assert not [r for r in rows if isinstance(r, Report) and r.kind in ("unknown", "invalid", "parse_error")]
    assert len([r for r in rows if isinstance(r, MessageRow)]) == len(doc["items"])


def test_pi_v2_file_keeps_its_own_ids() -> None:
    """pi 0.31.1 writes format v2 (ids of its own, ``version`` before ``id`` in the header):
    not a migrated v1 file, so its entries keep their ids; 0.30.2 still writes v1."""
    from archive.vendors.base import MessageRow, SourceInfo, ThreadFact

    def rows(name: str) -> list:
        path = FIXTURES / "pi" / name
        parser = get("pi").parser(SourceInfo("s", "pi", str(path)))
        return [r for line in path.read_bytes().splitlines() for r in parser.feed(0, line)]

    v2 = rows("pi-0.31.1-v2.jsonl")
    assert "sessionFormat" not in v2[0].fields["metadata"] and v2[0].fields["metadata"]["sessionVersion"] == 2
    assert [r.message.provenance.source_id for r in v2 if isinstance(r, MessageRow)][:2] == ["441d12ee", "819bb338"]
    v1 = rows("pi-0.30.2-v1.jsonl")
    assert isinstance(v1[0], ThreadFact) and v1[0].fields["metadata"]["sessionFormat"] == "v1"
    assert [r.message.provenance.source_id for r in v1 if isinstance(r, MessageRow)][:2] == ["v1-0", "v1-1"]
