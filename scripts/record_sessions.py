#!/usr/bin/env python3
"""Record real Claude Code, Codex, Gemini CLI and Qwen Code sessions against the scripted mock model servers.

    scripts/install_clients.sh            # once: puts the CLIs in ./.clients
    python scripts/record_sessions.py     # writes tests/fixtures/recorded/<vendor>-<version>/

Each scenario (tests/clients/scenarios.py) runs in a fresh home and working folder under
/tmp/sesh-record/, offline: the clients talk only to a mock on 127.0.0.1. The session
files the client wrote are copied, relative to the vendor home (``projects/...`` for
Claude Code, ``sessions/...`` for Codex), into ``<scenario>/``, next to ``scenario.json``:
the session id, the prompts, and the conversation the client sent in its last request plus
the scripted reply to it (what a resume must send again).

Re-running this on a new client version writes a new ``<vendor>-<version>/`` folder; the
diff against the previous version's files is the format drift to look at, and
``pytest -m clients`` checks the new version against every recording.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the real
home is never read (the clients get an explicit environment); recordings stay under
200 KB per scenario (checked).
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
MAX_BYTES = 200_000

VENDORS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "qwen": "qwen"}
MOCKS = {"claude-code": AnthropicMock, "codex": ResponsesMock, "gemini": GeminiMock, "qwen": ChatCompletionsMock}
READERS = {"claude-code": conv.from_anthropic, "codex": conv.from_responses, "gemini": conv.from_gemini,
           "qwen": conv.from_chat}
# the vendor home (under HOME), the folder of it whose session files are kept, and which files
HOMES = {"claude-code": (".claude", "projects", "*"), "codex": (".codex", "sessions", "*"),
         "gemini": (".gemini", "tmp", "chats/**/*.json*"), "qwen": (".qwen", "projects", "chats/*.jsonl")}
LABELS = {
    "claude-code": ("Claude Code", "@anthropic-ai/claude-code", "Anthropic Messages API, streaming"),
    "codex": ("Codex CLI", "@openai/codex", "OpenAI Responses API, SSE; config.toml model_provider \"mock\""),
    "gemini": ("Gemini CLI", "@google/gemini-cli", "Gemini API streamGenerateContent, SSE; GOOGLE_GEMINI_BASE_URL"),
    "qwen": ("Qwen Code", "@qwen-code/qwen-code", "OpenAI chat completions, streamed; --auth-type openai, run on Node 22"),
}


def run_prompt(vendor: str, exe: Path, home: Path, cwd: Path, url: str, prompt: str, session_id: str | None,
               fork: bool = False) -> str:
    """Run one prompt (resuming ``session_id``, or forking it into a new session); the
    session id the prompt ran in."""
    if vendor == "claude-code":
        return runner.run_claude(exe, home, cwd, url, prompt, resume=session_id, fork=fork).check().json()["session_id"]
    if vendor == "codex":
        before = set(runner.codex_sessions(home))
        runner.run_codex(exe, home, cwd, url, prompt, resume=session_id, fork=fork).check()
        new = sorted(set(runner.codex_sessions(home)) - before)
        return runner.codex_session_id(new[0]) if new else (session_id or runner.codex_session_id(runner.codex_sessions(home)[0]))
    assert not fork, f"{vendor}: no fork scenario"
    if vendor == "gemini":
        return runner.run_gemini(exe, home, cwd, url, prompt, resume=session_id).check().json()["session_id"]
    return runner.qwen_session_id(runner.run_qwen(exe, home, cwd, url, prompt, resume=session_id).check())


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
    t0 = time.time()
    with MOCKS[vendor](sc.script) as mock:
        for i, prompt in enumerate(sc.prompts):
            action = sc.action(i)
            resume = sessions[0] if action in ("fork", "original") else session_id
            session_id = run_prompt(vendor, exe, home, cwd, mock.url, prompt, resume, fork=action == "fork")
            if session_id not in sessions:
                sessions.append(session_id)
        session_id = sessions[0]
        conversations = final_conversations(vendor, mock)
        n_requests = len(mock.requests)
    home_dir, sub, pattern = HOMES[vendor]
    vendor_home = home / home_dir
    target = dest / sc.name
    shutil.rmtree(target, ignore_errors=True)
    files = []
    for project in sorted((vendor_home / sub).glob("*")) if pattern != "*" else [vendor_home / sub]:
        for f in sorted(project.glob(pattern) if pattern != "*" else project.rglob("*")):
            if f.is_file():
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
