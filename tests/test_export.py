"""Take a session anywhere (issue 41): ``export`` (one standalone HTML file drawn by the
conversation page's renderer, or emit's Markdown; child threads inside, folded; secrets
masked), ``resume`` (the client's own command; the ``emit --install`` step when the client
deleted the file; ``--to`` installs for another client) and the conversation page's
Export/Resume panel with its download route. The Chromium test with the network blocked
is tests/test_export_browser.py; the real clients' run of the commands
tests/test_export_clients.py."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from test_datasette import CANON, CANON_CHILD, FIXTURES, NEVER_IDLE, PARENT, SIDECHAIN, build_archive
from test_datasette import run as run_async
from test_secrets import canonical_session, planted

from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.serve import make_datasette

SECRET = "secret-thread"
EDITS = "edit-thread"
NESTED = "edit-thread-child-1"
NESTED2 = "edit-thread-child-1-grandchild"
CODEX = "cf4def41-21e0-4b91-adb4-5397c1492084"
# a Claude Code session (recorded with the real client) whose file the "client" deletes below
GONE_FILE = (FIXTURES / "recorded" / "claude-code-2.1.332" / "image" / "projects" / "-tmp-sesh-record-claude-code-image-work"
             / "20c215e7-6034-4ea3-9daf-a57f43340e01.jsonl")
GONE = GONE_FILE.stem
FORK_DIR = FIXTURES / "recorded" / "claude-code-2.1.332" / "fork"  # --fork-session, recorded with the real client
FORK_ORIGINAL, FORK = "be13429c-2f46-4920-a2a4-a6a5e0defcbb", "9e743857-794b-4722-b1e0-a0ff02c55890"


def edits_file(path: Path) -> Path:
    """A canonical thread with an edit (a diff), a child thread and a grandchild."""
    recs: list[dict[str, Any]] = [
        {"v": 1, "id": EDITS, "createdAt": "2026-04-01T10:00:00Z", "title": "Fix the greeting", "metadata": {"cwd": "/work/greet"}},
        {"v": 1, "id": "e1", "threadId": EDITS, "role": "user", "ts": "2026-04-01T10:00:01Z",
         "content": [{"type": "text", "text": "Say hello to pelicans instead."}]},
        {"v": 1, "id": "e2", "threadId": EDITS, "role": "assistant", "ts": "2026-04-01T10:00:02Z",
         "content": [{"type": "tool_call", "callId": "k1", "name": "Edit", "input": {
             "file_path": "/work/greet/hello.py", "old_string": "print('hello world')", "new_string": "print('hello pelicans')"}}]},
        {"v": 1, "id": "e3", "threadId": EDITS, "role": "tool", "ts": "2026-04-01T10:00:03Z",
         "content": [{"type": "tool_result", "callId": "k1", "output": "edited"}]},
        {"v": 1, "id": "e4", "threadId": EDITS, "role": "assistant", "ts": "2026-04-01T10:00:04Z",
         "content": [{"type": "text", "text": "Asked a helper to check the tests."}]},
        {"v": 1, "id": NESTED, "createdAt": "2026-04-01T10:00:05Z", "title": "Helper: run the tests",
         "parentThreadId": EDITS, "originMessageId": "e4", "metadata": {"cwd": "/work/greet"}},
        {"v": 1, "id": "n1", "threadId": NESTED, "role": "user", "ts": "2026-04-01T10:00:06Z",
         "content": [{"type": "text", "text": "Run the flamingo test suite."}]},
        {"v": 1, "id": NESTED2, "createdAt": "2026-04-01T10:00:07Z", "title": "Grandchild: lint",
         "parentThreadId": NESTED, "originMessageId": "n1", "metadata": {"cwd": "/work/greet"}},
        {"v": 1, "id": "g1", "threadId": NESTED2, "role": "user", "ts": "2026-04-01T10:00:08Z",
         "content": [{"type": "text", "text": "Lint the albatross module."}]},
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def arch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("export")
    db_path = build_archive(d / "archive.db", d / "canon.jsonl")
    plants = planted()
    aws = next(p for p in plants if p[0] == "aws-access-key")
    (d / "secret.jsonl").write_bytes(canonical_session(SECRET, [aws[2], "nothing else"]))
    gone = d / "gone" / GONE_FILE.name
    gone.parent.mkdir()
    shutil.copy(GONE_FILE, gone)
    db = open_db(db_path)
    for f in (d / "secret.jsonl", edits_file(d / "edits.jsonl"), gone, FORK_DIR):
        ingest_paths(db, [f], NEVER_IDLE)
    db.conn.close()
    gone.unlink()  # the client deleted it: only the archive has it now
    return {"db": str(db_path), "aws": aws[1], "dir": d, "gone_sha": hashlib.sha256(GONE_FILE.read_bytes()).hexdigest()}


def run(*args: str, code: int = 0) -> tuple[str, str]:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    return res.stdout, res.stderr


def page(arch: dict[str, Any], url: str, show_secrets: bool = False) -> Any:
    ds = make_datasette(arch["db"], show_secrets=show_secrets)

    async def go() -> Any:
        await ds.invoke_startup()
        return await ds.client.get(url)

    return run_async(go())


# ---------------------------------------------------------------- export --format html


def test_html_is_one_file_that_loads_nothing(arch: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "canon.html"
    run("--db", arch["db"], "export", CANON, "-o", str(out))
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "default-src 'none'" in html  # the browser refuses any request
    assert not re.search(r"<(script|link|iframe|object|embed|base)\b", html, re.I)
    assert not re.search(r"\b(?:src|srcset|poster|data)=\"(?!data:)", html)  # every loaded resource is inside
    assert "@import" not in html and "url(" not in html and "sesh-chat" in html and ".highlight" in html  # CSS inlined
    assert re.search(r'<img src="data:image/png;base64,iVBORw0KGgo', html)  # the archive's image, inlined
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # hostile text stays text
    assert "data:application/octet-stream;base64," in html and "image/svg+xml;base64" not in html  # svg: a download
    # the child thread: inside, folded, under the message that started it
    child = html.index(f'id="thread-{CANON_CHILD}"')
    assert html.rfind("<details", 0, child) == child - len('<details class="sesh-child-thread" ')
    start = html.index('<article class="sesh-msg sesh-role-assistant" id="msg-cm2"')
    assert start < child < html.index("</article>", start)  # in the bubble of the message that started it
    assert "Inspect the CSS of the button." in html


def test_html_is_the_conversation_pages_rendering(arch: dict[str, Any]) -> None:
    """Every block anchor of the web page is in the export, drawn the same way; the
    sidechains (children) are inside too."""
    web = page(arch, f"/-/sesh/thread/{PARENT}").text
    html, _ = run("--db", arch["db"], "export", PARENT[:8])
    web_blocks = re.findall(r'<details class="sesh-block [^"]*" id="b\d+">', web)
    assert web_blocks and all(b in html for b in web_blocks)
    assert f'id="thread-{SIDECHAIN}"' in html
    side = page(arch, f"/-/sesh/thread/{SIDECHAIN}").text
    assert set(re.findall(r'id="(b\d+)"', side)) <= set(re.findall(r'id="(b\d+)"', html))


def test_html_shows_diffs_and_nests_child_threads(arch: dict[str, Any]) -> None:
    html, _ = run("--db", arch["db"], "export", EDITS)
    assert 'class="highlight sesh-diff"' in html and "hello pelicans" in html and 'class="gi"' in html
    nested, grand = html.index(f'id="thread-{NESTED}"'), html.index(f'id="thread-{NESTED2}"')
    assert nested < html.index("Run the flamingo test suite.") < grand < html.index("Lint the albatross module.")
    assert html.index('id="msg-e4"') < nested
    # a canonical thread logs no usage: nothing to price, said as the conversation page says it
    assert '<dd class="sesh-cost">no usage recorded</dd>' in html and "no price" not in html


def test_a_child_thread_no_message_started_is_drawn_after_the_conversation(tmp_path: Path) -> None:
    """A child thread whose origin message is not among the parent's (none named, as in a
    Kimi CLI session's subagent, or one the parent does not hold) goes after the parent's
    messages, drawn like the others (this crashed the export: the template asked it whether
    it was omitted for depth)."""
    recs: list[dict[str, Any]] = [
        {"v": 1, "id": "orphan-parent", "createdAt": "2026-04-02T10:00:00Z", "title": "Parent"},
        {"v": 1, "id": "p1", "threadId": "orphan-parent", "role": "user", "ts": "2026-04-02T10:00:01Z",
         "content": [{"type": "text", "text": "Ask the heron."}]},
        {"v": 1, "id": "orphan-child", "createdAt": "2026-04-02T10:00:02Z", "title": "Heron",
         "parentThreadId": "orphan-parent"},
        {"v": 1, "id": "c1", "threadId": "orphan-child", "role": "user", "ts": "2026-04-02T10:00:03Z",
         "content": [{"type": "text", "text": "Count the egrets."}]},
        {"v": 1, "id": "stray-child", "createdAt": "2026-04-02T10:00:04Z", "title": "Stray",
         "parentThreadId": "orphan-parent", "originMessageId": "not-in-the-parent"},
        {"v": 1, "id": "s1", "threadId": "stray-child", "role": "user", "ts": "2026-04-02T10:00:05Z",
         "content": [{"type": "text", "text": "Find the stork."}]},
    ]  # fmt: skip
    (tmp_path / "t.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [tmp_path / "t.jsonl"], NEVER_IDLE)
    db.conn.close()
    html, _ = run("--db", str(tmp_path / "a.db"), "export", "orphan-parent")
    assert html.index("Ask the heron.") < html.index('id="thread-orphan-child"') < html.index("Count the egrets.")
    assert html.index("Ask the heron.") < html.index('id="thread-stray-child"') < html.index("Find the stork.")
    assert "nested too deep" not in html


def test_a_fork_is_named_not_included_and_shows_its_inherited_history(arch: dict[str, Any]) -> None:
    html, _ = run("--db", arch["db"], "export", FORK_ORIGINAL)
    assert f"<code>{FORK}</code>: export it on its own" in html and "<details class=\"sesh-child-thread\"" not in html
    fork, _ = run("--db", arch["db"], "export", FORK)
    assert f"fork of [fork-a] Run a command. (<code>{FORK_ORIGINAL}</code>: the history this fork inherited" in fork
    assert 'title="inherited history, archived in ' + FORK_ORIGINAL in fork
    out, _ = run("--db", arch["db"], "resume", FORK)  # a fork is a session of its own
    assert out.endswith(f"claude --resume {FORK}\n")


def test_secrets_are_masked_unless_asked(arch: dict[str, Any]) -> None:
    for fmt in ("html", "md"):
        masked, _ = run("--db", arch["db"], "export", SECRET, "--format", fmt)
        assert arch["aws"] not in masked and "[REDACTED aws-access-key]" in masked, fmt
        raw, _ = run("--db", arch["db"], "export", SECRET, "--format", fmt, "--no-redact")
        assert arch["aws"] in raw, fmt  # the test can fail: the value is there without masking


# ---------------------------------------------------------------- export --format md


def test_markdown_is_emits_then_the_child_threads(arch: dict[str, Any], tmp_path: Path) -> None:
    emitted, _ = run("--db", arch["db"], "emit", EDITS, "--to", "markdown")
    md, _ = run("--db", arch["db"], "export", EDITS, "--format", "md")
    assert md.startswith(emitted)  # one code path: emit --to markdown's
    rest = md[len(emitted):]
    assert f"<details><summary>Child thread {NESTED}: Helper: run the tests</summary>" in rest
    assert "Run the flamingo test suite." in rest and "Lint the albatross module." in rest
    same, _ = run("--db", arch["db"], "export", EDITS, "--format", "md", "-o", "-")
    assert same == md
    run("--db", arch["db"], "export", EDITS, "--format", "md", "-o", str(tmp_path / "e.md"))
    assert (tmp_path / "e.md").read_text() == md


def test_export_errors_have_their_exit_codes(arch: dict[str, Any], tmp_path: Path) -> None:
    _, err = run("--db", arch["db"], "export", "no-such-thread", code=1)
    assert "no thread id starts with 'no-such-thread'" in err
    run("--db", arch["db"], "export", CANON, "--format", "pdf", code=2)
    (tmp_path / "x.html").write_text("mine")
    _, err = run("--db", arch["db"], "export", CANON, "-o", str(tmp_path / "x.html"), code=1)
    assert "refusing to overwrite" in err and (tmp_path / "x.html").read_text() == "mine"


# ---------------------------------------------------------------- resume


def test_resume_prints_the_clients_own_command(arch: dict[str, Any]) -> None:
    out, _ = run("--db", arch["db"], "resume", PARENT[:8])
    assert out == f"cd /path/to/Demo && claude --resume {PARENT}\n"
    out, err = run("--db", arch["db"], "resume", SIDECHAIN)
    assert out == f"cd /path/to/Demo && claude --resume {PARENT}\n" and "child thread" in err
    out, _ = run("--db", arch["db"], "resume", CODEX)
    assert out == f"codex resume {CODEX}\n"
    report = orjson.loads(run("--db", arch["db"], "resume", CODEX, "--json")[0])
    assert report["command"] == f"codex resume {CODEX}" and report["missing_files"] == [] and report["install"] is None


def test_resume_of_a_deleted_session_installs_the_archived_copy_first(arch: dict[str, Any], tmp_path: Path) -> None:
    report = orjson.loads(run("--db", arch["db"], "resume", GONE, "--json")[0])
    sid = report["session"]
    assert report["missing_files"] and report["install"] == f"sesh-archive emit {sid} --to claude-code --install"
    assert report["command"] == f"{report['install']} && {report['resume']}"
    out, err = run("--db", arch["db"], "resume", GONE)
    assert out.strip() == report["command"] and "gone from disk" in err
    # the printed install step writes the session back where its client looks, byte for byte
    run("--db", arch["db"], "emit", sid, "--to", "claude-code", "--install")
    (written,) = (Path.home() / ".claude" / "projects").rglob(f"{sid}.jsonl")
    assert hashlib.sha256(written.read_bytes()).hexdigest() == arch["gone_sha"]
    # resume --to its own client does the same; the copy is in place now: nothing written again
    out, err = run("--db", arch["db"], "resume", GONE, "--to", "claude-code")
    assert out.strip() == report["resume"] and "byte-exact copy" in err and "already installed" in err


def test_resume_to_another_client_installs_it_and_prints_its_command(arch: dict[str, Any]) -> None:
    out, err = run("--db", arch["db"], "resume", EDITS, "--to", "codex")
    m = re.fullmatch(r"codex resume ([0-9a-f-]{36})\n", out)
    assert m and "wrote " in err
    (rollout,) = (Path.home() / ".codex" / "sessions").rglob(f"rollout-*{m.group(1)}.jsonl")
    assert b"Say hello to pelicans instead." in rollout.read_bytes()
    again, err = run("--db", arch["db"], "resume", EDITS, "--to", "codex")
    assert again == out and "already installed" in err
    run("--db", arch["db"], "resume", EDITS, "--to", "no-such-client", code=2)


def test_resume_without_a_command_is_exit_1(arch: dict[str, Any]) -> None:
    _, err = run("--db", arch["db"], "resume", CANON, code=1)
    assert "no command reopens canon-thread-1" in err and "--to" in err
    _, err = run("--db", arch["db"], "resume", "no-such-thread", code=1)
    assert "no thread id starts with" in err


# ---------------------------------------------------------------- the page's panel and downloads


def test_the_conversation_page_offers_export_and_resume(arch: dict[str, Any]) -> None:
    html = page(arch, f"/-/sesh/thread/{PARENT}").text
    panel = html[html.index('<details class="sesh-take"'):]
    panel = panel[: panel.index("</details>\n</div>\n</div>\n</details>")]
    assert f'href="/-/sesh/export?thread={PARENT}&amp;format=html"' in panel
    assert f'href="/-/sesh/export?thread={PARENT}&amp;format=md"' in panel
    assert f"cd /path/to/Demo &amp;&amp; claude --resume {PARENT}" in panel
    assert f"sesh-archive resume {PARENT} --to codex" in panel and "--to claude-code" not in panel
    assert "<form" not in panel and "<button" not in panel  # text and links only
    gone = page(arch, f"/-/sesh/thread/{orjson.loads(run('--db', arch['db'], 'resume', GONE, '--json')[0])['thread']}").text
    assert "--to claude-code --install &amp;&amp; cd " in gone


def test_the_download_is_what_export_writes(arch: dict[str, Any]) -> None:
    for fmt in ("html", "md"):
        r = page(arch, f"/-/sesh/export?thread={SECRET}&format={fmt}")
        assert r.status_code == 200 and r.headers["content-disposition"] == f'attachment; filename="{SECRET}.{fmt}"'
        cli_out, _ = run("--db", arch["db"], "export", SECRET, "--format", fmt)
        assert r.text == cli_out and arch["aws"] not in r.text
        assert arch["aws"] in page(arch, f"/-/sesh/export?thread={SECRET}&format={fmt}", show_secrets=True).text
    assert page(arch, "/-/sesh/export?thread=no-such&format=html").status_code == 404
    assert page(arch, f"/-/sesh/export?thread={SECRET}&format=pdf").status_code == 400
