"""Compatibility with the real vendor CLIs (marker ``clients``), offline against the mock
model servers in tests/clients/.

* The mock servers themselves (no CLI needed): event streams, step counting, bounded life.
* Every recording in tests/fixtures/recorded/ is resumed by the installed client, and the
  history the client sends must equal the recorded conversation turn for turn.
* Every scenario is run live by the installed client and must produce the same shape of
  conversation as its recording: a new client version that behaves differently fails here
  (then re-record with scripts/record_sessions.py and review the diff).
* Archive round trip: ingest each recording, emit the archived thread for each vendor
  with the adapters' ``emit``, resume it with the real client and compare the history.

Tests needing a CLI skip with a reason when it is absent (see clients/runner.py for where
it is looked for; scripts/install_clients.sh installs both).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from clients import conversation as conv
from clients import recordings as rec_mod
from clients import runner
from clients.mock_servers import (
    AnthropicMock,
    ChatCompletionsMock,
    MockServer,
    ResponsesMock,
    Script,
    Text,
    Thinking,
    Tool,
    WebSearchCall,
    anthropic_prompt_and_step,
    chat_prompt_and_step,
    responses_prompt_and_step,
)
from clients.recordings import Recording, recordings
from clients.scenarios import RESUME_PROMPT, scenarios

pytestmark = pytest.mark.clients

EXE = runner.EXES
VENDORS = tuple(EXE)
MOCKS = {"claude-code": AnthropicMock, "codex": ResponsesMock, "pi": ChatCompletionsMock, "copilot": ChatCompletionsMock}
READERS = {"claude-code": conv.from_anthropic, "codex": conv.from_responses, "pi": conv.from_chat, "copilot": conv.from_chat}
# Copilot CLI 1.0.102 keeps reasoningText but never sends it back to a model
SENDS_REASONING = {"copilot": False}


def client(vendor: str) -> Path:
    exe = runner.find_client(EXE[vendor])
    if exe is None:
        pytest.skip(f"{EXE[vendor]} CLI not found in $SESH_CLIENTS_DIR, ./.clients or PATH; run scripts/install_clients.sh")
    return exe


def mock_for(vendor: str, script: Script) -> MockServer:
    return MOCKS[vendor](script)


def sent_conversation(vendor: str, body: dict[str, Any]) -> conv.Conversation:
    """The conversation a client sent in one request body."""
    return READERS[vendor](body)


def as_sent_by(vendor: str, c: conv.Conversation) -> conv.Conversation:
    """A conversation as ``vendor``'s client sends it back to a model (Copilot: no reasoning)."""
    return c if SENDS_REASONING.get(vendor, True) else [t for t in c if t.kind != "reasoning"]


def run(vendor: str, home: Path, cwd: Path, url: str, prompt: str, resume: str | None = None) -> runner.RunResult:
    return runner.run_vendor(vendor, client(vendor), home, cwd, url, prompt, resume=resume)


def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    return home, cwd


# ---------------------------------------------------------------- the mock servers


def _post(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_anthropic_mock_streams_the_scripted_step() -> None:
    script = Script(turns={"[k]": [[Thinking("hm"), Text("one"), Tool("Bash", {"command": "ls"})], [Text("two")]]})
    with AnthropicMock(script) as m:
        first = [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "[k] go"}]}]
        ev = _post(m.url + "/v1/messages?beta=true", {"messages": first, "tools": [{"name": "Bash"}], "stream": True})
        assert [e["type"] for e in ev][:2] == ["message_start", "content_block_start"]
        assert ev[-2]["delta"]["stop_reason"] == "tool_use" and ev[-1]["type"] == "message_stop"
        deltas = [e["delta"]["type"] for e in ev if e["type"] == "content_block_delta"]
        assert deltas == ["thinking_delta", "signature_delta", "text_delta", "text_delta", "input_json_delta", "input_json_delta"]
        tool_id = next(e["content_block"]["id"] for e in ev if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use")
        second = first + [{"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "x"}]}]
        ev2 = _post(m.url + "/v1/messages", {"messages": second, "tools": [{"name": "Bash"}], "stream": True})
        assert "".join(e["delta"].get("text", "") for e in ev2 if e["type"] == "content_block_delta") == "two"
        # a request without tools (a title) gets the side reply
        ev3 = _post(m.url + "/v1/messages", {"messages": first, "stream": True})
        assert "".join(e["delta"].get("text", "") for e in ev3 if e["type"] == "content_block_delta") == "Mock session"
        assert len(m.requests) == 3 and len(m.model_requests()) == 2
        assert anthropic_prompt_and_step(second) == ("<system-reminder>x</system-reminder>\n[k] go", 1)


def test_responses_mock_streams_the_scripted_step() -> None:
    script = Script(turns={"[k]": [[Thinking("hm"), WebSearchCall("q"), Tool("apply_patch", "*** Begin Patch\n"), Tool("f", {"a": 1})]]})
    with ResponsesMock(script) as m:
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[k] go"}]}]
        ev = _post(m.url + "/v1/responses", {"input": items, "tools": [{"type": "function"}], "stream": True})
        assert ev[0]["type"] == "response.created" and ev[-1]["type"] == "response.completed"
        done = [e["item"]["type"] for e in ev if e["type"] == "response.output_item.done"]
        assert done == ["reasoning", "web_search_call", "custom_tool_call", "function_call"]
        assert ev[-1]["response"]["usage"]["total_tokens"] > 0
    outputs = items + [{"type": "function_call"}, {"type": "function_call_output"}, {"type": "custom_tool_call_output"},
                       {"type": "message", "role": "assistant"}, {"type": "function_call_output"}]
    assert responses_prompt_and_step(outputs) == ("[k] go", 2)


def test_mock_server_stops_by_itself() -> None:
    m = AnthropicMock(max_seconds=0.3).start()
    url = m.url
    time.sleep(0.8)
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _post(url + "/v1/messages", {"messages": []})


# ---------------------------------------------------------------- recordings resumed by the real client


def _rec_id(r: Recording) -> str:
    return r.name


@pytest.mark.parametrize("rec", recordings(), ids=_rec_id)
def test_recording_resumes_with_the_recorded_history(rec: Recording, tmp_path: Path) -> None:
    home, cwd = dirs(tmp_path)
    rec_mod.install(rec, home, cwd)
    sc = next(s for s in scenarios(rec.vendor, cwd) if s.name == rec.meta["scenario"])
    with mock_for(rec.vendor, sc.script) as mock:
        run(rec.vendor, home, cwd, mock.url, RESUME_PROMPT, resume=rec.session_id).check()
        first = mock.model_requests()[0]
    expected = rec.conversation + [conv.Turn("user", "text", None, RESUME_PROMPT)]
    conv.assert_same(expected, sent_conversation(rec.vendor, first.body))


# ---------------------------------------------------------------- live scenarios against the recordings


def _latest(vendor: str) -> dict[str, Recording]:
    """Per scenario, the recording of the newest recorded client version."""
    def key(r: Recording) -> tuple[int, ...]:
        return tuple(int(p) if p.isdigit() else 0 for p in r.version.split("."))

    out: dict[str, Recording] = {}
    for r in sorted(recordings(vendor), key=key):
        out[r.meta["scenario"]] = r
    return out


LIVE = [(v, name) for v in VENDORS for name in _latest(v)]


@pytest.mark.parametrize("vendor,name", LIVE, ids=[f"{v}-{n}" for v, n in LIVE])
def test_live_scenario_has_the_recorded_shape(vendor: str, name: str, tmp_path: Path) -> None:
    home, cwd = dirs(tmp_path)
    sc = next(s for s in scenarios(vendor, cwd) if s.name == name)
    session: str | None = None
    exe = client(vendor)
    with mock_for(vendor, sc.script) as mock:
        for i, prompt in enumerate(sc.prompts):
            session = runner.run_step(vendor, exe, home, cwd, mock.url, prompt, sc.mode(i), session)
        last = mock.model_requests()[-1].body
        reply = mock.reply_for(last)[3]  # type: ignore[attr-defined]
    live = sent_conversation(vendor, last) + conv.reply_turns(reply)
    recorded = _latest(vendor)[name].conversation
    # Paths, timings and ids differ between runs; roles, kinds and tool names must not.
    shape = ("text", "reasoning", "tool_call", "tool_result", "image", "web_search")
    conv.assert_same(conv.project(recorded, shape, values=False), conv.project(live, shape, values=False))
    # Texts the model wrote and the user typed are fixed by the scenario.
    conv.assert_same(conv.project(recorded, ("text",)), conv.project(live, ("text",)))


# ---------------------------------------------------------------- archive round trip: ingest, emit, resume


def _archive_status() -> str | None:
    """Why the ingest -> emit round trip cannot run yet (None when it can)."""
    try:
        from archive import ingest, store, vendors  # noqa: F401
        from archive.vendors.base import Adapter
    except Exception as e:  # an import error in a module being written is "not landed"
        return f"archive.ingest/store not importable: {e!r}"
    names = vendors.names()
    for vendor in VENDORS:
        if vendor not in names:
            return f"adapter {vendor!r} not registered in archive.vendors.VENDORS"
        if type(vendors.get(vendor)).emit is Adapter.emit:
            return f"adapter {vendor!r} has no emit"
    return None


_NOT_LANDED = _archive_status()
emit_landed = pytest.mark.xfail(_NOT_LANDED is not None, reason=f"emit not yet landed: {_NOT_LANDED}", strict=False)

VENDOR_HOME = {v: h for v, (h, _) in runner.HOMES.items()}
# What survives a cross-vendor emit: reasoning needs the source vendor's signature or
# ciphertext, images and web searches have no faithful equivalent, tool names and inputs
# are vendor vocabulary. The texts and tool results must survive.
CROSS_KINDS = ("text", "tool_call", "tool_result")


def archive_threads(rec: Recording, tmp_path: Path) -> tuple[Any, list[Any], list[tuple[Any, list[Any]]]]:
    """Ingest a recording into a temp db; (main thread, its messages, [(child, messages)])."""
    from archive.db import open_db
    from archive.ingest import ingest_paths
    from archive.store import SqliteMessageStore

    src_home = tmp_path / "src-home"
    rec_mod.install(rec, src_home, tmp_path / "src-cwd")
    db_path = tmp_path / "archive.db"
    db = open_db(db_path)
    ingest_paths(db, [src_home / VENDOR_HOME[rec.vendor]])
    db.conn.close()
    store = SqliteMessageStore(db_path)
    threads = store.list_threads()
    roots = [t for t in threads if t.parent_thread_id is None]
    assert len(roots) == 1, f"expected one root thread from {rec.name}, got {[t.id for t in threads]}"
    root = roots[0]
    newest = max((m for t in threads for m in store.get_messages(t.id)), key=lambda m: m.ts or "")
    leaf = next(t for t in threads if t.id == newest.thread_id)
    if leaf.id != root.id and leaf.agent_id is None and leaf.origin_message_id:
        # the session the recording resumes is a fork or a branch (pi): its history is the
        # parent's up to the fork point (originMessageId), then its own messages
        return leaf, lineage(store, leaf), []
    children = [(t, store.get_messages(t.id)) for t in threads if t.parent_thread_id is not None]
    return root, store.get_messages(root.id), children


def lineage(store: Any, thread: Any) -> list[Any]:
    """A forked thread's messages preceded by its ancestors' up to each fork point."""
    own = store.get_messages(thread.id)
    if not thread.parent_thread_id or not thread.origin_message_id:
        return own
    parent = next(t for t in store.list_threads() if t.id == thread.parent_thread_id)
    before = lineage(store, parent)
    ids = [m.id for m in before]
    assert thread.origin_message_id in ids, (thread.id, thread.origin_message_id)
    return before[: ids.index(thread.origin_message_id) + 1] + own


def emit_into(target: str, thread: Any, messages: list[Any], children: list[Any], home: Path, cwd: Path) -> tuple[str, Any]:
    """Write the emitted files into the target vendor home; (the id to resume, EmitResult)."""
    from archive import vendors

    adapter = vendors.get(target)
    from archive.vendors.base import EmitOptions

    options = EmitOptions(cwd=str(cwd))
    if target == "codex":
        options = EmitOptions(cwd=str(cwd), model=runner.CODEX_MODEL, model_provider="mock")
    elif target == "pi":
        options = EmitOptions(cwd=str(cwd), model=runner.PI_MODEL, model_provider=runner.PI_PROVIDER)
    elif target == "copilot":
        options = EmitOptions(cwd=str(cwd), model=runner.COPILOT_MODEL)
    result = adapter.emit(thread, messages, children, options)
    vendor_home = home / VENDOR_HOME[target]
    project = runner.claude_project_dir(home, cwd)
    for rel, data in result.files.items():
        parts = Path(rel).parts
        if target == "claude-code" and parts[0] == "projects":
            # The emitter keeps the thread's own cwd (the recording's); Claude Code finds a
            # session by the project folder of the cwd it runs in, so move it to ours.
            dest = project.joinpath(*parts[2:])
        else:
            dest = vendor_home / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    if result.thread_id:
        return result.thread_id, result
    if target == "claude-code":
        return next(Path(rel).stem for rel in result.files if len(Path(rel).parts) == 3), result
    return runner.codex_session_id(runner.codex_sessions(home)[0]), result


def drop_reported_texts(expected: conv.Conversation, sent: conv.Conversation, counts: dict[str, int]) -> conv.Conversation:
    """A cross-vendor emit may write what the target cannot represent (a web search, a file
    change, reasoning) as an assistant text, and must report it ("written as ... text"). Remove
    such added texts from ``sent``, no more of them than were reported."""
    allowed = sum(n for reason, n in counts.items() if re.search(r"written as\b.*\btext", reason))
    known = {t.value for t in expected if t.kind == "text"}
    out, dropped = [], 0
    for t in sent:
        if t.role == "assistant" and t.kind == "text" and t.value not in known:
            dropped += 1
            # pi (openai-completions) joins the text parts of one message into one string:
            # an added text in front of a known one is the added part
            whole = [k for k in known if isinstance(k, str) and k and isinstance(t.value, str) and t.value.endswith(k)]
            if whole:
                out.append(t._replace(value=max(whole, key=len)))
            continue
        out.append(t)
    assert dropped <= allowed, f"{dropped} assistant texts added by the emit, {allowed} reported: {counts}"
    return out


# Known adapter/store gaps found by this test (see the issue tracker); strict=False so a fix
# shows up as XPASS and the entry can be removed.
KNOWN_ISSUES: dict[tuple[str, str], str] = {
    (f"{v}/image", "copilot"): "Copilot CLI: images in a tool result are written as JSON text (result.contents not tried)"
    for v in ("claude-code-2.1.197", "codex-0.171.0")
}

ROUND_TRIPS = [
    pytest.param(r, target, id=f"{r.name}->{target}",
                 marks=[pytest.mark.xfail(reason=KNOWN_ISSUES[(r.name, target)], strict=False)] if (r.name, target) in KNOWN_ISSUES else [])
    for r in recordings() for target in VENDORS
]


@emit_landed
@pytest.mark.parametrize("rec,target", ROUND_TRIPS)
def test_archived_thread_emits_and_resumes(rec: Recording, target: str, tmp_path: Path) -> None:
    client(target)
    thread, messages, children = archive_threads(rec, tmp_path)
    # the archive holds the conversation the client had sent
    conv.assert_same(rec.conversation, as_sent_by(rec.vendor, conv.from_canonical(messages)))
    home, cwd = dirs(tmp_path)
    resume_id, result = emit_into(target, thread, messages, children, home, cwd)
    with mock_for(target, Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        run(target, home, cwd, mock.url, RESUME_PROMPT, resume=resume_id).check()
        first = mock.model_requests()[0]
    sent = sent_conversation(target, first.body)
    expected = rec.conversation + [conv.Turn("user", "text", None, RESUME_PROMPT)]
    if target == rec.vendor:
        conv.assert_same(as_sent_by(target, expected), sent)
    else:
        sent = drop_reported_texts(expected, sent, result.counts)
        keep = ("text", "tool_result")
        conv.assert_same(conv.project(expected, CROSS_KINDS, names=False, values=False), conv.project(sent, CROSS_KINDS, names=False, values=False))
        conv.assert_same(conv.project(expected, keep), conv.project(sent, keep))
