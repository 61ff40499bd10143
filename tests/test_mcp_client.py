"""A real agent using the archive as its memory (issue 39, marker ``clients``): Claude Code,
offline against the mock Anthropic server, started with ``--mcp-config`` naming
``sesh-archive mcp`` by full path. The mock asks for the archive's search tool; the call
must reach the server and its result (the session found, its secret masked) must reach
the model in the next request."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from clients import runner
from clients.mock_servers import AnthropicMock, Script, Text, Tool

from archive.db import open_db
from archive.ingest import ingest_paths

pytest.importorskip("mcp")
from test_mcp import AWS, SECRET_SESSION  # noqa: E402

pytestmark = pytest.mark.clients

TOOL = "mcp__sesh-archive__search"  # Claude Code names an MCP tool mcp__<server>__<tool>


def _command(db: Path) -> list[str]:
    """``sesh-archive mcp`` by full path (the script beside this Python), as the README says."""
    script = Path(sys.executable).parent / "sesh-archive"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "archive"]
    return [*head, "--db", str(db), "mcp"]


def test_claude_code_calls_the_archive_search_tool_and_the_model_gets_the_result(tmp_path: Path) -> None:
    exe = runner.find_client("claude")
    if exe is None:
        pytest.skip("Claude Code is not installed (set SESH_CLIENTS_DIR; scripts/install_clients.sh)")
    (tmp_path / "canon").mkdir()
    (tmp_path / "canon" / "secret.jsonl").write_bytes(SECRET_SESSION)
    db = open_db(tmp_path / "a.db")
    assert not ingest_paths(db, [tmp_path / "canon"]).failed
    db.conn.close()
    cmd = _command(tmp_path / "a.db")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"sesh-archive": {"command": cmd[0], "args": cmd[1:]}}}))
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    script = Script(turns={"[mcp-check]": [[Text("Searching the archive."), Tool(TOOL, {"query": "zebrafinch"})],
                                           [Text("Found it.")]]})  # fmt: skip
    with AnthropicMock(script) as mock:
        args = [*runner.node_argv(exe), "-p", "[mcp-check] how did we deploy last time?", "--mcp-config", str(config),
                "--strict-mcp-config", "--allowedTools", TOOL, "--output-format", "json", "--model", runner.CLAUDE_MODEL]
        res = runner._run(args, cwd, runner.claude_env(home, mock.url), timeout=180).check()
        requests = [r.body for r in mock.model_requests()]
    # the client announced the archive's tool to the model: in its tools, or (Claude Code
    # 2.1.332) by name among the deferred tools its ToolSearch loads
    assert TOOL in json.dumps(requests[0]), [t.get("name") for t in requests[0]["tools"]]
    # the model's second request carries the tool's result: the session, the snippet, masked
    results = [b for m in requests[-1]["messages"] if isinstance(m.get("content"), list) for b in m["content"]
               if b.get("type") == "tool_result"]  # fmt: skip
    assert results, requests[-1]["messages"]
    text = json.dumps(results[-1]["content"])
    assert "mcp-secret" in text and "zebrafinch" in text and "REDACTED" in text and AWS not in text
    assert json.loads(res.stdout)["result"] == "Found it."
    assert shutil.which("node") or runner.node22()  # ran on a real node
