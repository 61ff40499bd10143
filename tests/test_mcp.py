"""``sesh-archive mcp`` (issue 39): the protocol, driven with the official SDK's own client.

Over stdio (a real ``sesh-archive mcp`` subprocess, the initialize handshake agents use),
in process (``Client(server)``, the same dispatch without the pipe) and over streamable
HTTP (the Host-header rule of ``serve``). The archive holds the recorded sessions of
test_cli_read, a canonical session with a planted AWS key, and one whose tool calls name
files by relative and absolute paths and in a patch.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import string
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db, open_readonly
from archive.ingest import ingest_paths

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

from archive.mcp_server import build_server, make_http_server  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
CLAUDE = FIX / "claude-code" / "recorded" / "cc-2.1.197-bash-resume.jsonl"
AGTRACE = FIX / "codex" / "lanegrid__agtrace__codex_session.jsonl"
CODEX171 = FIX / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
SIDECHAINS = FIX / "claude-code" / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
T_CLAUDE = "7767af10-96b1-4f0a-b48d-8e085110fdc1"
T_SIDE = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
TOOLS = {"search", "list_sessions", "session_overview", "read_session", "file_sessions", "usage"}
_RND = random.Random(39)
AWS = "AKIA" + "".join(_RND.choice(string.ascii_uppercase + string.digits) for _ in range(16))
TS = "2026-11-29T10:00:%02d.000Z"


def _canonical(tid: str, cwd: str, messages: list[tuple[str, list[dict[str, Any]]]], title: str | None = None) -> bytes:
    recs: list[dict[str, Any]] = [{"v": 1, "id": tid, "createdAt": TS % 0, "metadata": {"cwd": cwd, "model": "claude-sonnet-5"},
                                   **({"title": title} if title else {})}]  # fmt: skip
    for i, (role, content) in enumerate(messages, start=1):
        recs.append({"v": 1, "id": f"{tid}-m{i}", "threadId": tid, "role": role, "ts": TS % i, "content": content})
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


SECRET_SESSION = _canonical("mcp-secret", "/home/dev/keys", [
    ("user", [{"type": "text", "text": f"deploy with aws_access_key_id = {AWS} please, zebrafinch"}]),
    ("assistant", [{"type": "text", "text": "Running the deploy."},
                   {"type": "tool_call", "callId": "c1", "name": "Bash", "input": {"command": f"AWS_ACCESS_KEY_ID={AWS} deploy zebrafinch"}}]),
    ("tool", [{"type": "tool_result", "callId": "c1", "output": f"deployed with {AWS}"}]),
])  # fmt: skip

FILES_SESSION = _canonical("mcp-files", "/home/dev/app", [
    ("user", [{"type": "text", "text": "fix the parser in src/app.py"}]),
    ("assistant", [{"type": "tool_call", "callId": "r1", "name": "Read", "input": {"file_path": "src/app.py"}}]),
    ("tool", [{"type": "tool_result", "callId": "r1", "output": "def parse(): pass"}]),
    ("assistant", [{"type": "tool_call", "callId": "e1", "name": "Edit",
                    "input": {"file_path": "/home/dev/app/src/app.py", "old_string": "pass", "new_string": "return 1"}}]),
    ("tool", [{"type": "tool_result", "callId": "e1", "output": "ok"}]),
    ("assistant", [{"type": "tool_call", "callId": "p1", "name": "apply_patch",
                    "input": {"input": "*** Begin Patch\n*** Update File: src/util.py\n@@\n-a\n+b\n*** End Patch\n"}}]),
    ("tool", [{"type": "tool_result", "callId": "p1", "output": "ok"}]),
    ("assistant", [{"type": "tool_call", "callId": "x1", "name": "Read", "input": {"file_path": "src/data.py"}}]),
], title="parser fix")  # fmt: skip


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("mcp")
    (d / "canon").mkdir()
    (d / "canon" / "secret.jsonl").write_bytes(SECRET_SESSION)
    (d / "canon" / "files.jsonl").write_bytes(FILES_SESSION)
    db = open_db(d / "a.db")
    summary = ingest_paths(db, [CLAUDE, AGTRACE, CODEX171, SIDECHAINS, d / "canon"])
    assert not summary.failed
    assert db.execute("SELECT count(*) FROM secret_findings").fetchone()[0] > 0  # the key was found
    db.conn.close()
    return d / "a.db"


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _call(client: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    r = await client.call_tool(name, args or {})
    assert not r.is_error, (name, args, _text(r))
    return orjson.loads(_text(r))


async def _error(client: Any, name: str, args: dict[str, Any]) -> str:
    r = await client.call_tool(name, args)
    assert r.is_error, (name, args, _text(r))
    return _text(r)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _stdio(db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "archive", "--db", str(db), "mcp", "--utc"],
                                 env=dict(os.environ))  # fmt: skip


# ---------------------------------------------------------------- protocol over stdio


def test_stdio_initialize_list_and_call_every_tool(archive: Path) -> None:
    async def go() -> None:
        async with Client(_stdio(archive), mode="legacy") as c:  # the initialize handshake
            assert c.server_info.name == "sesh-archive"
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for t in tools.values():
                assert t.description and "\n" not in t.description and len(t.description) < 120
                assert t.input_schema["type"] == "object"
                assert t.annotations.read_only_hint is True
            props = tools["search"].input_schema["properties"]
            vendor = props["vendor"]["anyOf"][0]
            assert "claude-code" in vendor["enum"] and "codex" in vendor["enum"]
            assert {"max_tokens", "cursor", "mode", "kinds", "role", "since", "until", "project"} <= set(props)
            assert tools["search"].input_schema["required"] == ["query"]
            assert (await _call(c, "search", {"query": "zebrafinch"}))["results"][0]["session"] == "mcp-secret"
            assert (await _call(c, "list_sessions"))["sessions"]
            assert (await _call(c, "session_overview", {"session": T_CLAUDE[:8]}))["session"] == T_CLAUDE
            assert (await _call(c, "read_session", {"session": T_CLAUDE}))["messages"]
            assert (await _call(c, "file_sessions", {"path": "src/app.py"}))["sessions"][0]["session"] == "mcp-files"
            assert (await _call(c, "usage", {"by": "vendor"}))["rows"]

    run(go())


def test_bad_arguments_are_clear_errors_and_the_server_stays_up(archive: Path) -> None:
    async def go() -> None:
        async with Client(_stdio(archive), mode="legacy") as c:
            cases = [
                ("read_session", {"session": "no-such-session"}, "unknown session 'no-such-session'"),
                ("session_overview", {"session": "zzz"}, "unknown session 'zzz'"),
                ("usage", {"session": "zzz"}, "unknown session 'zzz'"),
                ("search", {"query": "x", "session": "zzz"}, "unknown session 'zzz'"),
                ("session_overview", {"session": "0"}, "matches 2 threads; give more of the id"),
                ("session_overview", {}, "session"),  # a required argument missing
                ("search", {"query": ""}, "at least 1 character"),
                ("search", {"query": "x", "mode": "vector"}, "lexical"),
                ("search", {"query": "x", "vendor": "nobody"}, "vendor"),
                ("search", {"query": "hello AND", "fts_syntax": True}, "invalid search query"),  # a dangling operator: FTS5 still rejects it
                ("search", {"query": "x", "since": "last tuesday"}, "is not a date"),
                ("list_sessions", {"limit": "many"}, "limit"),
                ("list_sessions", {"cursor": "garbage!"}, "not a cursor"),
                ("usage", {"by": "weekday"}, "by"),
                ("search", {"query": "x", "max_tokens": 10}, "max_tokens"),
            ]
            for name, args, words in cases:
                assert words in await _error(c, name, args), (name, args)
            # a cursor from one call is not taken by another
            page = await _call(c, "list_sessions", {"limit": 1})
            assert "another list_sessions call" in await _error(c, "list_sessions", {"limit": 1, "vendor": "codex",
                                                                                     "cursor": page["next_cursor"]})
            assert "another list_sessions call" in await _error(c, "search", {"query": "the", "cursor": page["next_cursor"]}) \
                or "another" in await _error(c, "search", {"query": "the", "cursor": page["next_cursor"]})
            with pytest.raises(Exception, match="(?i)unknown tool|not found"):
                r = await c.call_tool("drop_tables", {})
                if r.is_error:
                    raise RuntimeError(_text(r))
            # still serving
            assert (await _call(c, "session_overview", {"session": T_SIDE}))["session"] == T_SIDE

    run(go())


# ---------------------------------------------------------------- each tool (in process)


def test_search_groups_hits_by_session_with_filters_and_pages(archive: Path) -> None:
    async def go() -> None:
        async with Client(build_server(archive, "UTC")) as c:
            r = await _call(c, "search", {"query": "the", "per_session": 2})
            sessions = [g["session"] for g in r["results"]]
            assert len(sessions) == len(set(sessions)) == r["sessions_found"] > 2
            side = next(g for g in r["results"] if g["session"] == T_SIDE)
            assert side["hits"] > 2 and len(side["snippets"]) == 2 and side["vendor"] == "claude-code"
            assert all("the" in s["text"].lower() for s in side["snippets"])
            # filters of `search`
            r = await _call(c, "search", {"query": "the", "vendor": "codex"})
            assert r["results"] and {g["vendor"] for g in r["results"]} == {"codex"}
            r = await _call(c, "search", {"query": "deploy", "kinds": ["tool_call"]})
            assert [s["kind"] for g in r["results"] for s in g["snippets"]] == ["tool_call"]
            r = await _call(c, "search", {"query": "deploy", "role": "user"})
            assert r["results"] and {s["role"] for g in r["results"] for s in g["snippets"]} == {"user"}
            assert (await _call(c, "search", {"query": "the", "since": "2026-11-30"}))["sessions_found"] == 2
            demo = (await _call(c, "search", {"query": "the", "project": "/path/to/Demo"}))["results"]
            assert {g["session"].split("/")[0] for g in demo} == {T_SIDE}  # the session and its subagents
            # plain words by default: punctuation FTS5 would reject is just text
            assert (await _call(c, "search", {"query": "src/app.py"}))["results"][0]["session"] == "mcp-files"
            # a small budget pages the sessions; the pages together are the whole
            whole = [g["session"] for g in (await _call(c, "search", {"query": "the"}))["results"]]
            got, cursor = [], None
            while True:
                page = await _call(c, "search", {"query": "the", "max_tokens": 200, **({"cursor": cursor} if cursor else {})})
                assert len(orjson.dumps(page)) // 4 <= 200 or len(page["results"]) == 1
                got += [g["session"] for g in page["results"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            assert got == whole and len(got) > 2

    run(go())


def test_list_sessions_sorts_filters_and_pages(archive: Path) -> None:
    async def go() -> None:
        async with Client(build_server(archive, "UTC")) as c:
            r = await _call(c, "list_sessions", {"limit": 50})
            ids = [s["session"] for s in r["sessions"]]
            assert T_CLAUDE in ids and T_SIDE in ids and not any("/" in i for i in ids)  # subagents folded
            side = next(s for s in r["sessions"] if s["session"] == T_SIDE)
            assert side["subagents"] == 2 and side["cost_usd"] > 0 and side["vendor"] == "claude-code"
            assert [s["last"] for s in r["sessions"]] == sorted((s["last"] for s in r["sessions"]), reverse=True)
            by_tokens = (await _call(c, "list_sessions", {"sort": "tokens"}))["sessions"]
            assert [s["total_tokens"] for s in by_tokens] == sorted((s["total_tokens"] for s in by_tokens), reverse=True)
            assert {s["vendor"] for s in (await _call(c, "list_sessions", {"vendor": "codex"}))["sessions"]} == {"codex"}
            with_kids = (await _call(c, "list_sessions", {"subagents": True, "limit": 50}))["sessions"]
            assert any(s["session"].startswith(T_SIDE + "/") for s in with_kids)
            for sort in ("recent", "oldest", "cost"):
                whole = [s["session"] for s in (await _call(c, "list_sessions", {"sort": sort, "limit": 50}))["sessions"]]
                got, cursor = [], None
                while True:
                    page = await _call(c, "list_sessions", {"sort": sort, "limit": 2, **({"cursor": cursor} if cursor else {})})
                    got += [s["session"] for s in page["sessions"]]
                    cursor = page["next_cursor"]
                    if not cursor:
                        break
                assert got == whole, sort

    run(go())


def test_session_overview_and_pages_of_its_conversation(archive: Path) -> None:
    async def go() -> None:
        async with Client(build_server(archive, "UTC")) as c:
            o = await _call(c, "session_overview", {"session": T_SIDE[:6]})
            assert o["session"] == T_SIDE and o["vendor"] == "claude-code" and o["project"] == "/path/to/Demo"
            assert o["models"] == [{"model": "claude-sonnet-4-20250514", "responses": 10}]
            assert o["usage"]["total_tokens"] == 218402 and o["cost_usd"] > 0
            assert o["children_total"] == 2 and {k["kind"] for k in o["children"]} == {"subagent"}
            assert o["lineage"]["parent"] is None and o["started"] < o["last"]
            kid = await _call(c, "session_overview", {"session": o["children"][0]["session"]})
            assert kid["lineage"]["parent"] == T_SIDE and kid["lineage"]["kind"] == "subagent"
            # the conversation in pages: every message once, in order
            whole = await _call(c, "read_session", {"session": T_SIDE, "max_tokens": 50_000})
            assert whole["next_cursor"] is None and len(whole["messages"]) == whole["messages_total"] == o["messages"]
            got, cursor = [], None
            while True:
                page = await _call(c, "read_session", {"session": T_SIDE, "max_tokens": 400, **({"cursor": cursor} if cursor else {})})
                assert len(orjson.dumps(page)) // 4 <= 400 or len(page["messages"]) == 1
                got += [m["index"] for m in page["messages"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            assert got == list(range(whole["messages_total"]))
            start = await _call(c, "read_session", {"session": T_SIDE, "start": 5, "max_tokens": 400})
            assert start["messages"][0]["index"] == 5
            # tool calls folded to a line unless asked for
            files = (await _call(c, "read_session", {"session": "mcp-files"}))["messages"]
            edit = next(m for m in files if "Edit" in m["text"])
            assert edit["text"].startswith("[tool call Edit] {") and "\n" not in edit["text"]
            full = (await _call(c, "read_session", {"session": "mcp-files", "full_tools": True}))["messages"]
            edit = next(m for m in full if "Edit" in m["text"])
            assert edit["text"].startswith("[tool call Edit e1]\n{") and '"new_string": "return 1"' in edit["text"]

    run(go())


def test_file_sessions_from_tool_call_paths(archive: Path) -> None:
    async def go() -> None:
        async with Client(build_server(archive, "UTC")) as c:
            for path in ("/home/dev/app/src/app.py", "src/app.py", "app.py"):
                r = await _call(c, "file_sessions", {"path": path})
                assert [s["session"] for s in r["sessions"]] == ["mcp-files"], path
                s = r["sessions"][0]
                # Read of the relative path (joined to the session's folder) and Edit of the absolute one
                assert s["actions"] == {"read": 1, "changed": 1} and s["paths"] == ["/home/dev/app/src/app.py"]
                assert s["label"] == "parser fix"
            util = (await _call(c, "file_sessions", {"path": "/home/dev/app/src/util.py"}))["sessions"]
            assert [s["session"] for s in util] == ["mcp-files"]  # named in a patch
            assert (await _call(c, "file_sessions", {"path": "pp.py"}))["sessions"] == []  # components, not characters
            assert (await _call(c, "file_sessions", {"path": "/elsewhere/src/app.py"}))["sessions"] == []
            demo = (await _call(c, "file_sessions", {"path": "/path/to/Demo/CLAUDE.md"}))["sessions"]
            assert [s["session"] for s in demo] == [T_SIDE] and demo[0]["actions"]["changed"] >= 1

    run(go())


def test_usage_equals_the_stats_command(archive: Path) -> None:
    async def go() -> dict[str, Any]:
        async with Client(build_server(archive, "UTC")) as c:
            return {by: await _call(c, "usage", {"by": by}) for by in ("day", "model", "vendor", "project")}

    got = run(go())
    for by, cli_by in (("day", "day"), ("model", "model"), ("vendor", "provider"), ("project", "project")):
        out = CliRunner().invoke(cli, ["--db", str(archive), "stats", "--by", cli_by, "--utc", "--json"], catch_exceptions=False)
        report = orjson.loads(out.stdout)
        assert got[by]["total"]["total_tokens"] == report["total"]["total_tokens"] > 0
        assert got[by]["total"]["cost_usd"] == report["total"]["cost_usd"]
        assert sorted(str(r[by]) for r in got[by]["rows"]) == sorted(str(r["key"]) for r in report["rows"])
    days = [r["day"] for r in got["day"]["rows"]]
    assert days == sorted(days, reverse=True)  # the latest first


def test_no_secret_leaves_by_any_tool(archive: Path) -> None:
    async def go() -> list[str]:
        async with Client(build_server(archive, "UTC")) as c:
            outs = []
            for name, args in [("search", {"query": "zebrafinch"}), ("search", {"query": AWS}),  # the query is not echoed
                               ("list_sessions", {"limit": 50}), ("session_overview", {"session": "mcp-secret"}),
                               ("read_session", {"session": "mcp-secret"}),
                               ("read_session", {"session": "mcp-secret", "full_tools": True}),
                               ("usage", {"by": "project"})]:  # fmt: skip
                r = await c.call_tool(name, args)
                outs.append(_text(r))
            return outs

    outs = run(go())
    assert all(AWS not in o for o in outs)
    assert all("[REDACTED" in o for o in outs[:2] + outs[3:6])
    assert "zebrafinch" in outs[4]  # the text around it is there


def test_the_server_never_writes(archive: Path) -> None:
    wal = Path(f"{archive}-wal")

    def digest() -> str:
        return hashlib.sha256(archive.read_bytes()).hexdigest()

    before = digest()
    run(_every_tool(build_server(archive, "UTC")))
    assert digest() == before
    # a reader of a WAL database may leave an empty -wal file behind, never a frame
    assert not wal.exists() or wal.stat().st_size == 0
    db = open_readonly(archive)
    with pytest.raises(Exception, match="readonly"):
        db.execute("CREATE TABLE x (y)")


async def _every_tool(server: Any) -> None:
    async with Client(server) as c:
        for name, args in [("search", {"query": "the"}), ("list_sessions", {}), ("session_overview", {"session": T_SIDE}),
                           ("read_session", {"session": T_SIDE}), ("file_sessions", {"path": "CLAUDE.md"}),
                           ("usage", {})]:  # fmt: skip
            await _call(c, name, args)


# ---------------------------------------------------------------- HTTP


def test_http_serves_loopback_and_refuses_foreign_hosts(archive: Path) -> None:
    import httpx

    server = make_http_server(archive, "127.0.0.1", 0, (), "UTC")
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"

        async def go() -> None:
            async with Client(url) as c:
                assert {t.name for t in (await c.list_tools()).tools} == TOOLS
                assert (await _call(c, "search", {"query": "zebrafinch"}))["results"][0]["session"] == "mcp-secret"

        run(go())
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        r = httpx.post(url, json=body, headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"})
        assert r.status_code == 403 and "host names it serves on" in r.text
        r = httpx.post(url, json=body, headers={"Host": f"localhost:{port}", "Accept": "application/json, text/event-stream"})
        assert r.status_code == 200
    finally:
        server.should_exit = True
        t.join(10)


# ---------------------------------------------------------------- the command


def test_mcp_command_without_the_sdk_says_how_to_get_it(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    r = CliRunner().invoke(cli, ["--db", str(archive), "mcp"])
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == ["Error: the MCP server needs the mcp SDK: pip install 'sesh-archive[mcp]'"]


def test_mcp_command_on_a_missing_archive_is_one_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "none.db"), "mcp"])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and not (tmp_path / "none.db").exists()


# ---------------------------------------------------------------- a 100k-message session


def _long_session(path: Path, n: int) -> None:
    with path.open("wb") as f:
        f.write(orjson.dumps({"v": 1, "id": "long-one", "createdAt": "2026-01-01T00:00:00Z", "title": "long",
                              "metadata": {"cwd": "/work/long"}}) + b"\n")  # fmt: skip
        for i in range(n):
            ts = f"2026-01-0{1 + i // 86400}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
            role = ("user", "assistant")[i % 2]
            f.write(orjson.dumps({"v": 1, "id": f"long-m{i}", "threadId": "long-one", "role": role, "ts": ts,
                                  "content": [{"type": "text", "text": f"message {i} " + "lorem ipsum " * 8}]}) + b"\n")  # fmt: skip


@pytest.mark.slow
def test_a_100k_message_session_pages_within_bounded_memory(tmp_path: Path) -> None:
    n = 100_000
    src = tmp_path / "long.jsonl"
    _long_session(src, n)
    db = open_db(tmp_path / "long.db")
    assert not ingest_paths(db, [src]).failed
    db.conn.close()
    server = build_server(tmp_path / "long.db", "UTC")

    async def go() -> list[dict[str, Any]]:
        async with Client(server) as c:
            pages = []
            page = await _call(c, "read_session", {"session": "long-one", "start": n // 2, "max_tokens": 2000})
            pages.append(page)
            page = await _call(c, "read_session", {"session": "long-one", "cursor": page["next_cursor"], "max_tokens": 2000})
            pages.append(page)
            tracemalloc.start()
            try:
                page = await _call(c, "read_session", {"session": "long-one", "start": n - 10, "max_tokens": 2000})
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            pages.append(page)
            pages.append({"peak": peak})
            pages.append(await _call(c, "session_overview", {"session": "long"}))
            return pages

    first, second, last, mem, overview = run(go())
    assert first["messages_total"] == n and first["messages"][0]["index"] == n // 2
    assert second["messages"][0]["index"] == first["messages"][-1]["index"] + 1
    assert [m["index"] for m in last["messages"]] == list(range(n - 10, n)) and last["next_cursor"] is None
    assert len(orjson.dumps(first)) < 2000 * 4
    # the page, the ordered ids (~100 bytes a message) and SQLite's own: not the thread (~15 MB of text)
    assert mem["peak"] < 20 << 20, mem
    assert overview["messages"] == n


def test_bench_mcp_measures_search_and_pages(archive: Path) -> None:
    import subprocess

    script = Path(__file__).parent.parent / "scripts" / "bench_mcp.py"
    out = subprocess.run([sys.executable, str(script), "--db", str(archive), "--reps", "1", "--json"],
                         capture_output=True, check=True, timeout=300, env=dict(os.environ))  # fmt: skip
    r = orjson.loads(out.stdout)
    assert r["largest_thread"]["id"] == T_SIDE
    assert r["search"]["calls"] == 15 and r["read_session"]["calls"] >= 4
    assert 0 < r["search"]["p50_ms"] <= r["search"]["p95_ms"] and 0 < r["read_session"]["p50_ms"] <= r["read_session"]["p95_ms"]
    assert set(r["once_ms"]) == {"list_sessions", "session_overview", "usage", "file_sessions"}
