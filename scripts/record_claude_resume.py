#!/usr/bin/env python3
"""Record a Claude Code 1.0.x ``--resume`` with the real client (issue 33).

    npm install --prefix /work/clients-old/claude-code-1.0.56 @anthropic-ai/claude-code@1.0.56
    python scripts/record_claude_resume.py /work/clients-old/claude-code-1.0.56

Before 1.0.128, ``claude -p --resume ID`` writes a new session file that repeats the resumed
turns under new uuids (formats/old-versions.md). One session (a Bash call, its result, an
answer), then a resume with a second prompt, against the scripted Anthropic mock on
127.0.0.1, in a fresh home under /tmp/sesh-record/. Both files are copied, relative to
``~/.claude``, into ``tests/fixtures/claude-code/resume-1.0/<version>/``.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the
client gets an explicit environment (tests/clients/runner.py), never the real home.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.clients.mock_servers import AnthropicMock, Script, Text, Tool  # noqa: E402
from tests.clients.runner import claude_sessions, client_version, run_claude  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "claude-code" / "resume-1.0"
WORK = Path("/tmp/sesh-record")
PROMPTS = ("[resume-a] Run a command.", "[resume-b] Say what it printed.")
SCRIPT = Script(turns={
    "[resume-a]": [[Tool("Bash", {"command": "echo one", "description": "Print one"})], [Text("It printed one.")]],
    "[resume-b]": [[Text("It printed the word one.")]],
})  # fmt: skip


def record(prefix: Path, out: Path) -> Path:
    exe = prefix / "node_modules" / ".bin" / "claude"
    version = client_version(exe)
    # --permission-mode came after 1.0.3; -p with --allowedTools needs no prompt either way
    modern = tuple(int(x) for x in version.split(".")[:3]) > (1, 0, 3)
    base = WORK / f"claude-code-{version}-resume"
    shutil.rmtree(base, ignore_errors=True)
    home, cwd = base / "home", base / "work"
    cwd.mkdir(parents=True)
    with AnthropicMock(SCRIPT) as mock:
        first = run_claude(exe, home, cwd, mock.url, PROMPTS[0], timeout=180, permission_mode=modern).check()
        sid = first.json()["session_id"]
        run_claude(exe, home, cwd, mock.url, PROMPTS[1], resume=sid, timeout=180, permission_mode=modern).check()
    target = out / version
    shutil.rmtree(target, ignore_errors=True)
    for f in claude_sessions(home):
        dest = target / f.relative_to(home / ".claude")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
    (target / "scenario.json").write_text(json.dumps({"version": version, "session_id": sid, "prompts": PROMPTS}, indent=1) + "\n")
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", type=Path, nargs="+", help="npm --prefix folders of @anthropic-ai/claude-code 1.0.x")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    for prefix in args.prefix:
        print(record(prefix, args.out))


if __name__ == "__main__":
    main()
