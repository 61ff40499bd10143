#!/usr/bin/env python3
"""Record real Claude Code, Codex, Gemini CLI, Qwen Code, pi and Copilot CLI sessions against the scripted mock model servers.

    scripts/install_clients.sh            # once: puts the CLIs in ./.clients
    python scripts/record_sessions.py     # writes tests/fixtures/recorded/<vendor>-<version>/

Each scenario (tests/clients/scenarios.py) runs in a fresh home and working folder under
/tmp/sesh-record/, offline: the clients talk only to a mock on 127.0.0.1. The session
files the client wrote are copied, relative to the vendor home (``projects/...`` for
Claude Code, ``sessions/...`` for Codex and pi, ``session-state/...`` for Copilot CLI), into ``<scenario>/``, next to ``scenario.json``:
the session id, the prompts, and the conversation the client sent in its last request plus
the scripted reply to it (what a resume must send again).

Re-running this on a new client version writes a new ``<vendor>-<version>/`` folder; the
diff against the previous version's files is the format drift to look at, and
``pytest -m clients`` checks the new version against every recording.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the real
home is never read (the clients get an explicit environment); recordings stay under
600 KB per scenario (checked).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from clients import conversation as conv  # noqa: E402
from clients import runner  # noqa: E402
from clients.mock_servers import AnthropicMock, ChatCompletionsMock, GeminiMock, MockServer, ResponsesMock  # noqa: E402
from clients.scenarios import Scenario, scenarios  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "recorded"
WORK = Path("/tmp/sesh-record")
# Claude Code 2.1.332 writes the whole prompt it sent beside the transcript (attachment
# prompt_snapshot, api-request-shape: ~100-200 KB per request), so one short scenario is
# 250-450 KB; 200 KB held every scenario of the older clients
MAX_BYTES = 600_000

VENDORS = runner.EXES
MOCKS = {"claude-code": AnthropicMock, "codex": ResponsesMock, "gemini": GeminiMock, "qwen": ChatCompletionsMock,
         "pi": ChatCompletionsMock, "copilot": ChatCompletionsMock, "opencode": ChatCompletionsMock}
READERS = {"claude-code": conv.from_anthropic, "codex": conv.from_responses, "gemini": conv.from_gemini,
           "qwen": conv.from_chat, "pi": conv.from_chat, "copilot": conv.from_chat, "opencode": conv.from_chat}
# the vendor home (under HOME) and the folder of it whose session files are kept
HOMES = runner.HOMES
# which files below each project folder of that folder are kept (default: all, at any depth)
PATTERNS = {"gemini": "chats/**/*.json*", "qwen": "chats/*.jsonl"}
LABELS = {
    "claude-code": ("Claude Code", "@anthropic-ai/claude-code", "Anthropic Messages API, streaming"),
    "codex": ("Codex CLI", "@openai/codex", "OpenAI Responses API, SSE; config.toml model_provider \"mock\""),
    "gemini": ("Gemini CLI", "@google/gemini-cli", "Gemini API streamGenerateContent, SSE; GOOGLE_GEMINI_BASE_URL"),
    "qwen": ("Qwen Code", "@qwen-code/qwen-code", "OpenAI chat completions, streamed; --auth-type openai, run on Node 22"),
    "pi": ("pi", "@mariozechner/pi-coding-agent", "OpenAI Chat Completions, streamed; ~/.pi/agent/models.json provider \"mock\""),
    "copilot": ("GitHub Copilot CLI", "@github/copilot", "OpenAI Chat Completions, streamed; COPILOT_OFFLINE with COPILOT_PROVIDER_*"),
    "opencode": ("OpenCode", "opencode-ai", "OpenAI Chat Completions, streamed; opencode.json provider \"mock\" (@ai-sdk/openai-compatible)"),
}


def opencode_documents(home: Path) -> dict[str, bytes]:
    """OpenCode keeps its sessions in a SQLite database: what is recorded is what the archive
    stores from it, the adapter's per-session documents of event rows (byte-exact JSON
    lines, read through archive.readonly), named ``opencode/opencode.db#<session>.jsonl``."""
    from archive.readonly import ReadOnlyDatabase
    from archive.vendors.opencode import ADAPTER

    db = runner.opencode_db(home)
    if not db.exists():
        return {}
    with ReadOnlyDatabase(db) as database:
        return {"opencode/" + Path(d.path).name: d.data for d in ADAPTER.documents(db, database.query)}
# Copilot CLI files that are its own bookkeeping, not the session: locks, the rewind
# tracking and the (empty) checkpoint index; events.jsonl and workspace.yaml are kept
COPILOT_SKIP = (".lock",)
COPILOT_SKIP_DIRS = ("rewind-file-snapshots", "checkpoints")


def final_conversations(vendor: str, mock: MockServer) -> dict[str, list[list]]:
    """Per prompt key, the conversation of the last request with that key plus its reply.
    The key "" holds the whole session (the last request of all)."""
    read = READERS[vendor]
    out: dict[str, list[list]] = {}
    reqs = mock.model_requests()
    for i, req in enumerate(reqs):
        key, _prompt, _step, reply = mock.reply_for(req.body)  # type: ignore[attr-defined]
        c = conv.to_json(read(req.body) + conv.reply_turns(reply))
        out[key] = c
        if i == len(reqs) - 1:
            out[""] = c
    return out


def record(vendor: str, exe: Path, version: str, sc: Scenario, dest: Path) -> dict:
    root = WORK / f"{vendor}-{sc.name}"
    shutil.rmtree(root, ignore_errors=True)
    home, cwd = root / "home", root / "work"
    home.mkdir(parents=True)
    cwd.mkdir()
    sc = next(s for s in scenarios(vendor, cwd) if s.name == sc.name)  # paths for this cwd
    session_id: str | None = None
    sessions: list[str] = []  # every session id the scenario made, in order
    steps: list[dict[str, int]] = []
    t0 = time.time()
    sc.write_files(cwd)
    with MOCKS[vendor](sc.script) as mock:
        for i, prompt in enumerate(sc.prompts):
            session_id = runner.run_step(vendor, exe, home, cwd, mock.url, prompt, sc.action(i), session_id,
                                         sessions[0] if sessions else None)
            if session_id not in sessions:
                sessions.append(session_id)
            if vendor == "opencode":  # lines of each document after this step (the db grows in place)
                steps.append({k: v.count(b"\n") for k, v in opencode_documents(home).items()})
        # the recording resumes the session the last prompt ran in (the original one after
        # "original", the new one after a pi fork)
        conversations = final_conversations(vendor, mock)
        n_requests = len(mock.requests)
    home_dir, sub = HOMES[vendor]
    pattern = PATTERNS.get(vendor, "*")
    vendor_home = home / home_dir
    target = dest / sc.name
    shutil.rmtree(target, ignore_errors=True)
    files = []
    if vendor == "opencode":
        for rel, data in opencode_documents(home).items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_bytes(data)
            files.append(rel)
        # and each session as the client itself exports it: what `opencode import` reads,
        # so the clients tests can give a recording back to a real client
        for sid in sessions:
            res = runner.opencode_export(exe, home, cwd, sid)
            rel = f"export/{sid}.json"
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(res)
            files.append(rel)
        pattern = "none"
    for project in [] if vendor == "opencode" else sorted((vendor_home / sub).glob("*")) if pattern != "*" else [vendor_home / sub]:
        for f in sorted(project.glob(pattern) if pattern != "*" else project.rglob("*")):
            if f.is_file() and not (vendor == "copilot" and (f.name.endswith(COPILOT_SKIP) or f.parent.name in COPILOT_SKIP_DIRS)):
                rel = f.relative_to(vendor_home)
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target / rel)
                files.append(str(rel))
    meta = {
        "vendor": vendor,
        "version": version,
        "scenario": sc.name,
        "covers": sc.covers,
        "session_id": session_id,
        "sessions": sessions,
        "actions": [sc.action(i) for i in range(len(sc.prompts))],
        "cwd": str(cwd),
        "home": str(home),
        "prompts": sc.prompts,
        "files": files,
        "requests": n_requests,
        **({"lines_after_step": steps} if steps else {}),
        "conversation": conversations[""],
        "conversations_by_prompt": {k: v for k, v in conversations.items() if k},
    }
    (target / "scenario.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    if size > MAX_BYTES:
        raise SystemExit(f"{target}: {size} bytes, over the {MAX_BYTES} limit; shorten the scenario")
    shutil.rmtree(root, ignore_errors=True)
    print(f"  {sc.name}: {len(files)} files, {size} bytes, {n_requests} requests, {time.time() - t0:.1f}s", file=sys.stderr)
    return meta


SOURCES = """# Recorded with the real client: {label} {version}

Recorded by `scripts/record_sessions.py` with {label} {version} (npm `{package}`, installed by
`scripts/install_clients.sh`), offline: the client talked only to the scripted mock model
server in `tests/clients/mock_servers.py` on 127.0.0.1 ({api}). Each scenario ran in a fresh
HOME=/tmp/sesh-record/{vendor}-<scenario>/home, cwd /tmp/sesh-record/{vendor}-<scenario>/work,
with the command lines in `tests/clients/runner.py`. The files are copied byte for byte from
the vendor home ({vhome}), keeping their paths relative to it. `scenario.json` holds the
session id, the prompts (the second and later ones were sent with resume) and the
conversation the client sent in its last request plus the mock's reply
(`tests/clients/conversation.py` format).

| scenario | covers | files |
|---|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vendor", choices=sorted(VENDORS), action="append", help="default: all")
    ap.add_argument("--scenario", action="append", help="record only these scenario names")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for vendor in args.vendor or sorted(VENDORS):
        exe = runner.find_client(VENDORS[vendor])
        if exe is None:
            print(f"{vendor}: client not installed (run scripts/install_clients.sh); skipped", file=sys.stderr)
            continue
        version = runner.client_version(exe)
        dest = args.out / f"{vendor}-{version}"
        dest.mkdir(parents=True, exist_ok=True)
        print(f"{vendor} {version} -> {dest}", file=sys.stderr)
        for sc in scenarios(vendor, WORK):
            if args.scenario and sc.name not in args.scenario:
                continue
            record(vendor, exe, version, sc, dest)
        rows = []
        for meta_path in sorted(dest.glob("*/scenario.json")):
            meta = json.loads(meta_path.read_text())
            rows.append(f"| `{meta['scenario']}` | {meta['covers']} | {', '.join('`' + f + '`' for f in meta['files'])} |")
        label, package, api = LABELS[vendor]
        (dest / "SOURCES.md").write_text(SOURCES.format(
            label=label, version=version, vendor=vendor, package=package, api=api,
            vhome=f"`~/{HOMES[vendor][0]}`", rows="\n".join(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
