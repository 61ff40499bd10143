"""pi and GitHub Copilot CLI beyond the contract test: discovery under the vendors' own
variables, pi's tree (a branch in place, a --fork file), Copilot's workspace.yaml companion,
and usage equal to the clients' own totals (recordings in tests/fixtures/recorded/)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages, load_threads
from archive.vendors import get
from archive.vendors.copilot.parse import parse_workspace_yaml
from archive.vendors.pi.emit import project_folder

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
PI = RECORDED / "pi-0.73.1"
COPILOT = RECORDED / "copilot-1.0.102"


def copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("scenario.json"))


def ingest_env(tmp_path: Path, env: dict[str, str]):
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(tmp_path / "home"), **env}, idle_seconds=10**9))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    return db, summary


def test_default_roots_follow_the_vendors_variables(tmp_path: Path) -> None:
    home = Path("/h")
    pi = get("pi")
    assert pi.default_roots({}, home) == [home / ".pi/agent/sessions"]
    assert pi.default_roots({"PI_CODING_AGENT_DIR": "/x/agent"}, home) == [Path("/x/agent/sessions")]
    assert pi.default_roots({"PI_CODING_AGENT_SESSION_DIR": "/s"}, home) == [Path("/s"), home / ".pi/agent/sessions"]
    copilot = get("copilot")
    assert copilot.default_roots({}, home) == [home / ".copilot/session-state"]
    assert copilot.default_roots({"COPILOT_HOME": "/c"}, home) == [Path("/c/session-state")]
    # a pi session file anywhere by its name; Copilot files only in a <uuid> folder
    assert pi.classify(Path("/a/2026-11-30T16-34-53-094Z_01a22d4f-2c25-70e4-afa3-47b72dd58210.jsonl")) == "lines"
    assert pi.classify(Path("/a/notes.jsonl")) is None
    uid = "33b4c1e6-762f-445d-b39a-065f174f340e"
    assert copilot.classify(Path(f"/s/{uid}/events.jsonl")) == "lines"
    assert copilot.classify(Path(f"/s/{uid}/workspace.yaml")) == "snapshot"
    assert copilot.classify(Path("/s/other/events.jsonl")) is None


def test_pi_sessions_found_under_pi_coding_agent_session_dir(tmp_path: Path) -> None:
    sessions = tmp_path / "elsewhere"
    for scenario in ("text", "bash"):
        copy_tree(PI / scenario / "sessions", sessions)
    db, summary = ingest_env(tmp_path, {"PI_CODING_AGENT_SESSION_DIR": str(sessions)})
    assert summary.files_changed == 2
    threads = load_threads(db.conn, "provider = 'pi'")
    assert len(threads) == 2 and {t.metadata["model"] for t in threads} == {"m"}


def test_pi_branch_in_place_and_fork_file_become_child_threads(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    for scenario in ("branch", "fork"):
        copy_tree(PI / scenario, agent)
    db, _ = ingest_env(tmp_path, {"PI_CODING_AGENT_DIR": str(agent)})
    threads = {t.id: t for t in load_threads(db.conn, "provider = 'pi'")}
    children = [t for t in threads.values() if t.parent_thread_id]
    assert len(threads) == 4 and len(children) == 2
    for child in children:
        parent_msgs = load_messages(db.conn, "m.thread_id = ?", (child.parent_thread_id,))
        origin = next(m for m in parent_msgs if m.id == child.origin_message_id)
        # both grew from the first answer; the branch's own history starts after it
        assert origin.role == "assistant" and origin.content[0].text == "First answer."  # type: ignore[union-attr]
        own = load_messages(db.conn, "m.thread_id = ?", (child.id,))
        assert [m.content[0].text for m in own] == [  # type: ignore[union-attr]
            "[alt] Another second question." if "/branch-" in child.id else "[alt] Another question.",
            "Alternative answer."]
    # the fork file's copies of its parent's entries are the parent's messages, stored once
    fork = next(t for t in children if "/branch-" not in t.id)
    assert len(load_messages(db.conn, "m.thread_id = ?", (fork.parent_thread_id,))) == 2
    occurrences = db.execute("SELECT count(*) FROM message_occurrences o JOIN messages m ON m.id = o.message_id "
                             "WHERE m.thread_id = ?", (fork.parent_thread_id,)).fetchone()[0]
    assert occurrences == 4  # each parent message seen in both files


def pi_usage_of_file(path: Path) -> tuple[int, int, int, int]:
    totals = [0, 0, 0, 0]
    for line in path.read_text().splitlines():
        d = json.loads(line)
        u = (d.get("message") or {}).get("usage") if d.get("type") == "message" else None
        if u:
            for i, k in enumerate(("input", "cacheRead", "cacheWrite", "output")):
                totals[i] += u[k]
    return tuple(totals)  # type: ignore[return-value]


def usage_totals(db, provider: str) -> tuple[int, ...]:
    return tuple(db.execute(
        "SELECT sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), count(*) "
        "FROM usage u JOIN threads t ON t.id = u.thread_id WHERE t.provider = ?", (provider,)).fetchone())


def test_pi_usage_is_pis_own_and_keeps_its_cost(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    copy_tree(PI / "bash", agent)
    db, _ = ingest_env(tmp_path, {"PI_CODING_AGENT_DIR": str(agent)})
    (session,) = (agent / "sessions").rglob("*.jsonl")
    assert usage_totals(db, "pi")[:4] == pi_usage_of_file(session)
    assert usage_totals(db, "pi")[1] > 0  # the mock reports cache reads after the first request
    costs = [json.loads(r[0])["vendor"]["cost"]["total"] for r in db.execute("SELECT extra FROM usage")]
    assert len(costs) == 3 and all(c > 0 for c in costs)


def test_copilot_usage_equals_its_shutdown_accounting(tmp_path: Path) -> None:
    home = tmp_path / "copilot"
    copy_tree(COPILOT / "bash", home)
    db, _ = ingest_env(tmp_path, {"COPILOT_HOME": str(home)})
    (events,) = home.rglob("events.jsonl")
    shutdown = [json.loads(line) for line in events.read_text().splitlines() if '"session.shutdown"' in line][-1]
    (metrics,) = shutdown["data"]["accountingSnapshot"]["modelMetrics"].values()
    u = metrics["usage"]
    inp, cache_read, cache_write, out, responses = usage_totals(db, "copilot")
    # Copilot's inputTokens include cache reads; the archive's input_tokens do not
    assert (inp + cache_read + cache_write, cache_read, out) == (u["inputTokens"], u["cacheReadTokens"], u["outputTokens"])
    assert responses == metrics["requests"]["count"] == 3 and cache_read > 0
    # every response is carried by its assistant message
    assert db.execute("SELECT count(*) FROM usage WHERE message_id IS NULL").fetchone()[0] == 0
    extras = [json.loads(r[0]) for r in db.execute("SELECT extra FROM usage")]
    assert all(e["vendor"]["isByok"] is True and "planCovered" not in e for e in extras)


def test_copilot_workspace_yaml_is_a_companion_snapshot(tmp_path: Path) -> None:
    home = tmp_path / "copilot"
    copy_tree(COPILOT / "bash", home)
    db, summary = ingest_env(tmp_path, {"COPILOT_HOME": str(home)})
    assert summary.files_changed == 2
    (thread,) = load_threads(db.conn, "provider = 'copilot'")
    assert thread.title == "[bash] Run two commands."
    assert thread.metadata["cwd"] == "/tmp/sesh-record/copilot-bash/work"
    assert thread.metadata["systemPrompt"]["chars"] > 1000 and thread.metadata["model"] == "gpt-4.1"
    # the prompt as typed, never the harness's transformedContent
    first = load_messages(db.conn, "m.thread_id = ?", (thread.id,))[0]
    assert first.content[0].text == "[bash] Run two commands."  # type: ignore[union-attr]
    # workspace.yaml rewritten in place: a second generation; both restore byte for byte
    (yaml,) = home.rglob("workspace.yaml")
    original = yaml.read_bytes()
    yaml.write_bytes(original.replace(b"summary_count: 0", b"summary_count: 1"))
    again = ingest_paths(db, None, IngestOptions(env={"HOME": str(tmp_path), "COPILOT_HOME": str(home)}, idle_seconds=10**9))
    assert again.files_changed == 1
    restored = restore(db, tmp_path / "out", all_generations=True)
    shas = {r.sha256 for r in restored}
    assert hashlib.sha256(original).hexdigest() in shas and hashlib.sha256(yaml.read_bytes()).hexdigest() in shas
    # and a byte-exact copy of the thread carries its workspace.yaml along
    assert get("copilot").companion_markers(thread.id) == (f"/{thread.id}/workspace.yaml",)


def test_workspace_yaml_scalars() -> None:
    doc = parse_workspace_yaml("id: x\nname: 'it''s: here'\nuser_named: false\nsummary_count: 2\nbranch: \"a\\\"b\"\n"
                               "nested:\n  - skipped\n")
    assert doc == {"id": "x", "name": "it's: here", "user_named": False, "summary_count": 2, "branch": 'a"b', "nested": None}


def test_pi_emit_files_a_session_under_pis_project_folder() -> None:
    assert project_folder("/home/me/app") == "--home-me-app--"
    assert project_folder("C:\\work\\app") == "--C--work-app--"
    hint = get("pi").resume_hint("01a22d4f-2c25", "/home/me/my app")
    assert hint == "cd '/home/me/my app' && pi --session 01a22d4f-2c25"
    assert get("copilot").resume_hint("u-1", None) == "copilot --resume=u-1"


def test_copilot_subagent_events_go_to_a_child_thread() -> None:
    """Events with a top-level agentId (schema 1.0.102; none recorded yet): the recorded
    prompt event, given an agentId, lands in <session>/agent-<id>, announced once."""
    from archive.vendors.base import MessageRow, SourceInfo, ThreadFact

    (events,) = (COPILOT / "text").rglob("events.jsonl")
    lines = events.read_bytes().splitlines()
    start = lines[0]
    prompt = json.loads(next(ln for ln in lines if b'"user.message"' in ln))
    parser = get("copilot").parser(SourceInfo("s", "copilot", str(events)))
    list(parser.feed(0, start))
    sid = json.loads(start)["data"]["sessionId"]
    rows = []
    for i, agent in enumerate(("a1", "a1", None)):
        d = dict(prompt, id=f"e{i}", **({"agentId": agent} if agent else {}))
        rows += list(parser.feed(100 + i, json.dumps(d).encode()))
    facts = [r for r in rows if isinstance(r, ThreadFact)]
    assert [(f.thread_id, f.fields["parentThreadId"], f.fields["agentId"]) for f in facts] == [(f"{sid}/agent-a1", sid, "a1")]
    assert [r.message.thread_id for r in rows if isinstance(r, MessageRow)] == [f"{sid}/agent-a1"] * 2 + [sid]


def _events(files) -> list[dict]:
    (rel,) = [r for r in files if r.endswith("events.jsonl")]
    return [json.loads(line) for line in files[rel].decode().splitlines()]


def test_copilot_view_of_a_png_keeps_the_image_and_emits_it_back(tmp_path: Path) -> None:
    """1.0.102 writes a tool's image once, base64, in a session.binary_asset event, and the
    tool.execution_complete after it names it in binaryResultsForLlm: the archive stores the
    bytes as a blob, gives the result its image (Claude Code's shape), and an emit to Copilot
    writes them back the same way, from Copilot's session or from Claude Code's."""
    import base64

    from archive.emit import emit_thread
    from archive.model import Attachment, ToolResult
    from tests.clients.scenarios import PNG_B64

    png = base64.b64decode(PNG_B64)
    sha = hashlib.sha256(png).hexdigest()
    home = tmp_path / "copilot"
    copy_tree(COPILOT / "image", home)
    db, summary = ingest_env(tmp_path, {"COPILOT_HOME": str(home)})
    assert not summary.reports.get("unknown") and not summary.reports.get("invalid")
    assert db.execute("SELECT sha256, media_type, data FROM blobs").fetchall() == [(sha, "image/png", png)]
    (thread,) = load_threads(db.conn, "provider = 'copilot'")
    (viewed,) = [m for m in load_messages(db.conn, "m.thread_id = ?", (thread.id,))
                 if any(isinstance(b, Attachment) for b in m.content)]  # fmt: skip
    result, image = viewed.content
    assert isinstance(result, ToolResult) and isinstance(image, Attachment)
    assert result.output == [{"type": "text", "text": "Viewed image file successfully."}, {"type": "image", "attachment": 0}]
    assert (image.media_type, image.data, image.extra["callId"]) == ("image/png", PNG_B64, result.call_id)

    def asset_and_result(events: list[dict]) -> tuple[dict, dict]:
        (i,) = [k for k, e in enumerate(events) if e["type"] == "session.binary_asset"]
        assert events[i + 1]["type"] == "tool.execution_complete"  # the asset just before its result
        return events[i]["data"], events[i + 1]["data"]["result"]

    # back to Copilot, built from the model: the asset and its reference as Copilot wrote them
    asset, res = asset_and_result(_events(emit_thread(db, thread.id, "copilot", exact=False).files))
    assert asset == {"assetId": f"sha256:{sha}", "type": "image", "mimeType": "image/png", "byteLength": len(png),
                     "data": PNG_B64, "description": image.extra["description"]}  # fmt: skip
    assert res["content"] == "Viewed image file successfully."
    assert res["binaryResultsForLlm"] == [{"type": "image", "assetId": f"sha256:{sha}", "mimeType": "image/png",
                                           "byteLength": len(png), "description": image.extra["description"]}]  # fmt: skip
    # to Claude Code: an image block inside the tool_result
    claude = emit_thread(db, thread.id, "claude-code", exact=False).files
    (rel,) = [r for r in claude if r.endswith(".jsonl")]
    sent = [c for line in claude[rel].decode().splitlines() for b in (json.loads(line).get("message") or {}).get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_result" for c in (b.get("content") or [])
            if isinstance(c, dict) and c.get("type") == "image"]  # fmt: skip
    assert [c["source"]["data"] for c in sent] == [PNG_B64]
    # to clm: a user record with the attachment after the result, the bytes in its blobs folder
    clm = emit_thread(db, thread.id, "clm", exact=False)
    assert not [k for k in clm.counts if "outside" in k], clm.counts
    (blob,) = [r for r in clm.files if ".blobs/" in r]
    assert blob.endswith(f"{sha}.png") and clm.files[blob] == png
    # Claude Code's image Read, emitted to Copilot: the bytes as an asset, no text
    claude_home = tmp_path / "claude"
    copy_tree(RECORDED / "claude-code-2.1.197" / "image", claude_home)
    ingest_paths(db, [claude_home], IngestOptions(idle_seconds=10**9))
    (cc,) = load_threads(db.conn, "provider = 'claude-code'")
    out = emit_thread(db, cc.id, "copilot", exact=False)
    asset, res = asset_and_result(_events(out.files))
    assert asset["data"] == PNG_B64 and asset["assetId"] == f"sha256:{sha}" and res["content"] == ""
    assert out.counts["tool_result: image written as session.binary_asset (Copilot sends a BYOK model the text only)"] == 1


def test_copilot_pasted_image_is_an_attachment_of_the_prompt(tmp_path: Path) -> None:
    """A user.message ``blob`` attachment (the schema's AttachmentBlob: persisted with an
    ``assetId`` in place of its data) is the prompt's image, read from the asset's blob;
    other attachments stay Unknown blocks. No recording has one: the image recording's
    prompt is given one, naming the asset its view wrote."""
    import base64

    from archive.model import Attachment, Text, Unknown
    from tests.clients.scenarios import PNG_B64

    sha = hashlib.sha256(base64.b64decode(PNG_B64)).hexdigest()
    (events,) = (COPILOT / "image").rglob("events.jsonl")
    lines = []
    for line in events.read_text().splitlines():
        d = json.loads(line)
        if d["type"] == "user.message":
            d["data"]["attachments"] = [
                {"type": "blob", "mimeType": "image/png", "displayName": "dot.png", "assetId": f"sha256:{sha}",
                 "byteLength": 69},
                {"type": "file", "path": "/w/dot.png", "displayName": "dot.png"},
            ]  # fmt: skip
        lines.append(json.dumps(d))
    folder = tmp_path / "home" / ".copilot" / "session-state" / events.parent.name
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    db, _ = ingest_env(tmp_path, {})
    prompt = load_messages(db.conn, "m.role = 'user'", ())[0]
    text, image, file = prompt.content
    assert isinstance(text, Text) and isinstance(file, Unknown) and isinstance(image, Attachment)
    assert (image.media_type, image.data, image.extra) == (
        "image/png", PNG_B64, {"displayName": "dot.png", "byteLength": 69, "blobSha256": sha})


def test_an_image_whose_asset_never_came_shows_without_a_link(tmp_path: Path) -> None:
    """A binaryResultsForLlm reference whose session.binary_asset line is not in the file (a
    truncated log): the page says no bytes are stored instead of an image that cannot load;
    once a file holding the asset arrives, the image shows."""
    from archive.pricing import load_prices
    from archive.web.conversation import bubbles, load_page

    (events,) = (COPILOT / "image").rglob("events.jsonl")
    folder = tmp_path / "home" / ".copilot" / "session-state" / events.parent.name
    folder.mkdir(parents=True)
    kept = [ln for ln in events.read_text().splitlines(keepends=True) if '"session.binary_asset"' not in ln]
    (folder / "events.jsonl").write_text("".join(kept))
    db, _ = ingest_env(tmp_path, {})

    def page_html() -> str:
        page = load_page(db.conn, events.parent.name, 1, load_prices(), {})
        assert page is not None
        return "".join(str(i) for b in bubbles(page, lambda sha: f"/blob/{sha}") for i in b["items"])

    assert "<img" not in page_html() and "attachment image/png (no bytes stored)" in page_html()
    other = tmp_path / "home" / ".copilot" / "session-state" / "4aac106a-d54f-40e8-8e9c-d181f3e4e87a"
    other.mkdir()
    (other / "events.jsonl").write_text("".join(ln for ln in events.read_text().splitlines(keepends=True)
                                                if '"session.binary_asset"' in ln))  # fmt: skip
    ingest_env(tmp_path, {})
    assert '<img src="/blob/' in page_html()


def test_copilot_task_subagent_is_a_child_thread_of_its_call(tmp_path: Path) -> None:
    """The task tool's subagent (recorded): its events carry an agentId and go to a child
    thread titled by the task's description, whose origin is the message holding the task
    call; its system prompt and model are its own (the session's stay the session's); the
    usage of both agents equals Copilot's own shutdown accounting."""
    from archive.model import ToolCall

    home = tmp_path / "copilot"
    copy_tree(COPILOT / "agent", home)
    db, _ = ingest_env(tmp_path, {"COPILOT_HOME": str(home)})
    (events,) = home.rglob("events.jsonl")
    records = [json.loads(line) for line in events.read_text().splitlines()]
    prompts = {r.get("agentId"): len(r["data"]["content"]) for r in records if r["type"] == "system.message"}
    (main,) = load_threads(db.conn, "provider = 'copilot' AND parent_thread_id IS NULL")
    (child,) = load_threads(db.conn, "parent_thread_id = ?", (main.id,))
    (agent,) = [k for k in prompts if k]
    assert child.id == f"{main.id}/agent-{agent}" and child.agent_id == agent and child.title == "Count to three"
    assert main.metadata["systemPrompt"]["chars"] == prompts[None] != prompts[agent] == child.metadata["systemPrompt"]["chars"]
    spawn = child.metadata["spawnCallId"]
    origin = load_messages(db.conn, "m.id = ?", (child.origin_message_id,))[0]
    assert origin.thread_id == main.id and [b.name for b in origin.content if isinstance(b, ToolCall) and b.call_id == spawn] == ["task"]
    texts = [b.text for m in load_messages(db.conn, "m.thread_id = ?", (child.id,)) for b in m.content if hasattr(b, "text")]
    assert texts[0] == "[subagent] Count to three with echo." and texts[-1] == "1 2 3"
    shutdown = [r for r in records if r["type"] == "session.shutdown"][-1]
    (metrics,) = shutdown["data"]["accountingSnapshot"]["modelMetrics"].values()
    inp, cache_read, cache_write, out, responses = usage_totals(db, "copilot")
    assert (inp + cache_read + cache_write, out, responses) == (
        metrics["usage"]["inputTokens"], metrics["usage"]["outputTokens"], metrics["requests"]["count"])
    assert db.execute("SELECT count(DISTINCT thread_id) FROM usage").fetchone()[0] == 2


# ---------------------------------------------------------------- releases without usage records (issue 33)

FIXTURES = Path(__file__).parent / "fixtures" / "copilot"


def ingest_file(tmp_path: Path, name: str):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copyfile(FIXTURES / name, folder / name)
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, [folder], IngestOptions(idle_seconds=10**9))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    events = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
    return db, events


def shutdown_usage(event: dict) -> tuple[int, int, int, int]:
    (metrics,) = event["data"]["modelMetrics"].values()
    u = metrics["usage"]
    return u["inputTokens"], u["cacheReadTokens"], u["cacheWriteTokens"], u["outputTokens"]


def archived(db) -> tuple[int, int, int, int]:
    """The archive's totals in Copilot's convention (its inputTokens include the cache)."""
    inp, cache_read, cache_write, out, _ = usage_totals(db, "copilot")
    return inp + cache_read + cache_write, cache_read, cache_write, out


def test_copilot_1_0_40_usage_is_its_messages_and_its_shutdown(tmp_path: Path) -> None:
    """1.0.40 logs no session.usage_record: each assistant.message's outputTokens is its
    response, the shutdown's modelMetrics the rest (before: 0 tokens)."""
    db, events = ingest_file(tmp_path, "copilot-1.0.40-bash.events.jsonl")
    assert not any(e["type"] == "session.usage_record" for e in events)
    (shutdown,) = [e for e in events if e["type"] == "session.shutdown"]
    assert archived(db) == shutdown_usage(shutdown) == (2637, 1318, 0, 121)
    outputs = [e["data"]["outputTokens"] for e in events if e["type"] == "assistant.message"]
    rows = db.execute("SELECT output_tokens, input_tokens, message_id, model FROM usage ORDER BY ts").fetchall()
    assert [r[0] for r in rows] == outputs == [54, 53, 14]  # one row per response
    # the rest (inputs and cache reads no message logged) is added to the last response
    last = db.execute("SELECT id FROM messages WHERE role = 'assistant' ORDER BY ts DESC LIMIT 1").fetchone()[0]
    assert [r[1] for r in rows] == [None, None, 2637 - 1318] and rows[-1][2:] == (last, "gpt-4.1")
    assert all(r[2] is not None and r[3] == "gpt-4.1" for r in rows)


def test_copilot_1_0_40_resume_restarts_its_totals_and_both_count(tmp_path: Path) -> None:
    db, events = ingest_file(tmp_path, "copilot-1.0.40-text.events.jsonl")
    first, second = [e for e in events if e["type"] == "session.shutdown"]
    assert first["data"]["modelMetrics"]["gpt-4.1"]["requests"]["count"] == 1
    assert second["data"]["modelMetrics"]["gpt-4.1"]["requests"]["count"] == 1  # restarted
    assert archived(db) == tuple(a + b for a, b in zip(shutdown_usage(first), shutdown_usage(second)))


def test_copilot_usage_once_per_response_where_records_and_shutdowns_both_exist(tmp_path: Path) -> None:
    """A 1.0.40 session resumed by 1.0.102: old responses (outputTokens, a shutdown), then a
    usage record, then a shutdown whose totals carry the first's: every figure once."""
    db, events = ingest_file(tmp_path, "copilot-1.0.40-then-1.0.102.events.jsonl")
    first, last = [e for e in events if e["type"] == "session.shutdown"]
    assert last["data"]["modelMetrics"]["gpt-4.1"]["requests"]["count"] == 4  # cumulative
    assert archived(db) == shutdown_usage(last) == (3330, 1664, 0, 132)
    (record,) = [e["data"]["usage"] for e in events if e["type"] == "session.usage_record"]
    rows = db.execute("SELECT input_tokens + cache_read_tokens, output_tokens FROM usage WHERE key LIKE ?",
                      (f"%:{record['apiCallId']}",)).fetchall()
    assert rows == [(record["inputTokens"], record["outputTokens"])]
    # one row per response: the second shutdown adds nothing, the record counted its response
    assert db.execute("SELECT count(*) FROM usage").fetchone()[0] == 4
