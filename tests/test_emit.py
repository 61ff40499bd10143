"""emit: byte-exact same-vendor copies, cross-vendor sessions that ingest back to the same
conversation, --install semantics."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.emit import emit_thread, install_base, write_files
from archive.ingest import IngestOptions, ingest_paths
from archive.db import ArchiveError
from helpers import assert_same_conversation
from tests.vendor_home import build_home, vendor_env

VENDOR_DIRS = {"claude-code": ".claude", "codex": ".codex", "clm": ".local/state", "gemini": ".gemini", "qwen": ".qwen",
               "pi": ".pi/agent", "copilot": ".copilot"}


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    home = tmp_path_factory.mktemp("vendor-home")
    placed = build_home(home)
    db_path = home / "archive.db"
    db = open_db(db_path)
    summary = ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9))
    assert summary.failed == 0
    return home, db_path, placed


def top_threads(db):
    return [r[0] for r in db.execute(
        "SELECT t.id FROM threads t WHERE t.parent_thread_id IS NULL AND t.provider IN ('claude-code', 'codex', 'clm') "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.id) ORDER BY t.id"
    )]  # fmt: skip


def test_every_fixture_thread_is_archived(archive):
    home, db_path, placed = archive
    db = open_db(db_path)
    assert len(top_threads(db)) >= 15


def test_same_vendor_emit_is_byte_exact_for_every_fixture(archive, tmp_path):
    home, db_path, placed = archive
    db = open_db(db_path)
    # two fixtures can hold the same bytes (the same tool output spooled by two client
    # versions' recordings): a digest names every file that has it
    originals: dict[str, list[Path]] = {}
    for p in placed.values():
        originals.setdefault(hashlib.sha256(p.read_bytes()).hexdigest(), []).append(p)
    covered: set[Path] = set()
    for tid, provider in db.execute(
        "SELECT id, provider FROM threads t WHERE provider IN ('claude-code','codex','clm','gemini','qwen','pi','copilot','vibe','cline','kimi') AND (parent_thread_id IS NULL "
        "OR NOT EXISTS (SELECT 1 FROM threads p WHERE p.id = t.parent_thread_id) "  # orphan subagent files too
        "OR json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id)"  # and forks: sessions of their own
    ).fetchall():
        out = emit_thread(db, tid, provider)
        assert out.exact, tid
        for rel, data in out.files.items():
            digest = hashlib.sha256(data).hexdigest()
            assert digest in originals, (tid, rel)
            same = [p for p in originals[digest] if p.name == Path(rel).parts[-1]]
            assert same, (tid, rel, originals[digest])
            covered.update(same)
    # every fixture file that holds a session comes back through some thread
    # (OpenCode's and Kilo's stored documents are not files the clients read: their emit
    # builds an import file from the model, test_opencode.py, test_kilo.py)
    missing = {p for p in placed.values() if p not in covered and not p.name.startswith("fuzz-corpus-meta")
               and not p.parent.parent.parent.name.startswith(("opencode-", "kilo-"))}
    assert missing == set()


@pytest.mark.parametrize("target", ["claude-code", "codex", "clm", "gemini", "qwen", "pi", "copilot", "kimi", "canonical"])
def test_cross_vendor_emit_ingests_back_to_the_same_conversation(archive, tmp_path, target):
    from archive.thread_view import own_messages as load_thread

    home, db_path, placed = archive
    db = open_db(db_path)
    checked = carried = 0
    for tid in top_threads(db):
        thread, messages = load_thread(db, tid)
        out = emit_thread(db, tid, target, exact=False)
        dest = tmp_path / target / tid.replace("/", "_")
        write_files(out, dest)
        db2 = open_db(dest / "again.db")
        s = ingest_paths(db2, [dest], IngestOptions(idle_seconds=10**9))
        assert s.failed == 0 and not s.reports.get("unexplained"), (tid, s.to_dict())
        new_top = [t for t in top_threads(db2)] or [r[0] for r in db2.execute("SELECT id FROM threads")]
        again = []
        for t2 in new_top:
            again += load_thread(db2, t2)[1]
        assert_same_conversation(messages, again, target, tid)
        if not any(k.startswith("usage") and "dropped" in k for k in out.counts):
            # each response's tokens travel with it, in the target's own convention
            assert usage_of(db2, new_top) == usage_of(db, [tid]), tid
            carried += usage_of(db, [tid]) != (0, 0, 0, 0)
        checked += 1
    assert checked >= 15
    assert target == "clm" or carried >= 5


def usage_of(db, thread_ids: list[str]) -> tuple[int, ...]:
    marks = ", ".join("?" * len(thread_ids))
    return tuple(db.execute(
        "SELECT coalesce(sum(input_tokens), 0), coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0), "
        f"coalesce(sum(output_tokens), 0) FROM usage WHERE thread_id IN ({marks})", thread_ids).fetchone())  # fmt: skip


def test_install_writes_atomically_and_never_overwrites(archive, tmp_path):
    home, db_path, placed = archive
    runner = CliRunner()
    tid = next(r[0] for r in open_db(db_path).execute("SELECT id FROM threads WHERE provider = 'codex' ORDER BY id"))
    fresh = tmp_path / "fresh-home"
    env = {"HOME": str(fresh), "CODEX_HOME": str(fresh / ".codex"), "CLAUDE_CONFIG_DIR": str(fresh / ".claude"),
           "XDG_STATE_HOME": str(fresh / ".local" / "state"), "GEMINI_CLI_HOME": str(fresh),
           "QWEN_HOME": str(fresh / ".qwen")}  # fmt: skip
    for target, expect in (("codex", ".codex/sessions"), ("claude-code", ".claude/projects"), ("clm", ".local/state/clm"),
                           ("gemini", ".gemini/tmp"), ("qwen", ".qwen/projects")):
        result = runner.invoke(cli, ["--db", str(db_path), "emit", tid[:12], "--to", target, "--install"], env=env,
                               catch_exceptions=False)  # fmt: skip
        assert result.exit_code == 0, result.output
        files = [p for p in fresh.rglob("*") if p.is_file()]
        assert any(str(p.relative_to(fresh)).startswith(expect) for p in files), files
        assert not [p for p in files if p.name.endswith(".tmp")]
        assert "resume with:" in result.stderr
        again = runner.invoke(cli, ["--db", str(db_path), "emit", tid[:12], "--to", target, "--install"], env=env)
        assert again.exit_code == 1 and "refusing to overwrite" in again.output
    assert not [p for p in fresh.rglob(".*.tmp")]


def test_write_files_refuses_before_writing_anything(tmp_path):
    from archive.emit import EmitOutcome

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.jsonl").write_text("existing")
    out = EmitOutcome("t", "codex", False, {"a/1.jsonl": b"x", "b/2.jsonl": b"y"})
    with pytest.raises(ArchiveError, match="refusing to overwrite"):
        write_files(out, tmp_path)
    assert not (tmp_path / "a" / "1.jsonl").exists()
    assert (tmp_path / "b" / "2.jsonl").read_text() == "existing"


def test_install_base_follows_vendor_env(tmp_path):
    env = {"CODEX_HOME": str(tmp_path / "cx"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "XDG_STATE_HOME": str(tmp_path / "st")}
    assert install_base("codex", env, tmp_path) == tmp_path / "cx"
    assert install_base("claude-code", env, tmp_path) == tmp_path / "cc"
    assert install_base("clm", env, tmp_path) == tmp_path / "st"


def test_emit_to_stdout_and_usage_errors(archive):
    home, db_path, placed = archive
    runner = CliRunner()
    tid = top_threads(open_db(db_path))[0]
    result = runner.invoke(cli, ["--db", str(db_path), "emit", tid, "--to", "canonical"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stdout.startswith('{"v":1,"id":')
    bad = runner.invoke(cli, ["--db", str(db_path), "emit", tid, "--to", "canonical", "--install"])
    assert bad.exit_code == 2
    missing = runner.invoke(cli, ["--db", str(db_path), "emit", "no-such-thread", "--to", "codex"])
    assert missing.exit_code == 1 and "no thread" in missing.output


def test_markdown_transcript_for_sharing(archive, tmp_path):
    home, db_path, placed = archive
    db = open_db(db_path)
    tid = db.execute(
        "SELECT t.id FROM threads t WHERE t.provider = 'claude-code' AND EXISTS (SELECT 1 FROM blocks b "
        "JOIN messages m ON m.id = b.message_id WHERE m.thread_id = t.id AND b.type = 'tool_call') ORDER BY t.id LIMIT 1"
    ).fetchone()[0]  # fmt: skip
    out = emit_thread(db, tid, "markdown")
    ((name, data),) = out.files.items()
    text = data.decode()
    assert name.endswith(".md") and text.startswith("# ")
    assert "## user" in text and "## assistant" in text
    assert "<details><summary>Tool call" in text and "</details>" in text


def test_emit_to_a_file_or_folder_never_overwrites(archive, tmp_path):
    """`emit -o FILE` writes one file whole (temporary file, then a link) and refuses an
    existing one; `-o DIR` lays out the vendor tree."""
    home, db_path, placed = archive
    tid = top_threads(open_db(db_path))[0]
    runner = CliRunner()
    out = tmp_path / "out" / "thread.jsonl"
    ok = runner.invoke(cli, ["--db", str(db_path), "emit", tid, "--to", "canonical", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert out.read_bytes().startswith(b'{"v":1,"id":') and [p.name for p in out.parent.iterdir()] == ["thread.jsonl"]
    before = out.read_bytes()
    again = runner.invoke(cli, ["--db", str(db_path), "emit", tid, "--to", "canonical", "-o", str(out)])
    assert again.exit_code == 1 and "refusing to overwrite" in again.output and out.read_bytes() == before
    folder = tmp_path / "tree"
    tree = runner.invoke(cli, ["--db", str(db_path), "emit", tid, "--to", "codex", "-o", str(folder)])
    assert tree.exit_code == 0, tree.output
    assert [p.name for p in folder.rglob("*.jsonl")] and not list(folder.rglob("*.tmp"))
    # the copy is not where Codex looks: it says how to install it, not a resume that would fail (issue 32)
    assert "resume with:" not in tree.stderr
    assert f"install it there (sesh-archive emit {tid} --to codex --install), then: codex" in tree.stderr


@pytest.mark.parametrize("target", ["pi", "claude-code"])
def test_a_forked_or_branched_thread_is_emitted_with_its_parents_history(archive, target):
    """pi's recorded ``--fork`` and in-place branch: the fork is a child thread holding only
    its own messages (its copied history is stored once, in the parent); emitting it gives
    the parent's messages up to the fork point first, then its own, and nothing after the
    fork point."""
    home, db_path, placed = archive
    db = open_db(db_path)
    forks = db.execute(
        "SELECT id, parent_thread_id FROM threads WHERE provider = 'pi' AND parent_thread_id IS NOT NULL "
        "AND origin_message_id IS NOT NULL AND agent_id IS NULL ORDER BY id").fetchall()  # fmt: skip
    assert len(forks) >= 2, forks  # the fork scenario's second file and the branch scenario's branch
    for tid, parent in forks:
        own = db.execute("SELECT group_concat(role) FROM messages WHERE thread_id = ?", (tid,)).fetchone()[0]
        assert own == "user,assistant", (tid, own)  # the copied history is the parent's
        out = emit_thread(db, tid, target, exact=False)
        text = b"".join(out.files.values()).decode()
        assert "[one] First question." in text and "First answer." in text, (tid, target)
        assert "[two] Second question." not in text  # the branch grows from the first answer
        assert "Alternative answer." in text


@pytest.mark.parametrize("target", ["codex", "clm", "gemini", "qwen", "pi", "copilot", "opencode"])
def test_a_loss_is_worded_once_for_every_target(archive, target):
    """Issue 32: the child threads a target does not write were reported four ways
    ("children: not emitted", "child threads: not written", "child thread", ...); every report
    reads "subject: what happened"."""
    from archive.vendors.base import CHILD_THREADS_NOT_WRITTEN

    home, db_path, placed = archive
    db = open_db(db_path)
    parents = [r[0] for r in db.execute(
        "SELECT parent_thread_id FROM threads WHERE parent_thread_id IS NOT NULL AND provider = 'claude-code' "
        "AND origin_message_id IS NOT NULL GROUP BY 1 ORDER BY 1")]
    assert parents
    out = emit_thread(db, parents[0], target, exact=False)
    kids = [k for k in out.counts if k.startswith("child")]
    assert kids == [CHILD_THREADS_NOT_WRITTEN] and out.counts[CHILD_THREADS_NOT_WRITTEN] >= 1
    assert all(": " in reason for reason in out.counts), out.counts
