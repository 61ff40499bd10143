#!/usr/bin/env python3
"""Record Claude Code 2.0.x warmup sidechains (``projects/<slug>/agent-<8hex>.jsonl``) with
the real client, offline against the Anthropic mock (issue 33).

    npm install --prefix DIR/claude-code-2.0.30 @anthropic-ai/claude-code@2.0.30
    SESH_CLIENTS_OLD_DIR=DIR python scripts/record_claude_warmup.py

Writes ``tests/fixtures/claude-code/warmup-2.0/<version>/``: the transcripts under
``projects/`` (relative to ``~/.claude``) and ``scenario.json``. The scenario is
tests/clients/claude_warmup.py.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the client
never sees the real home.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients import claude_warmup, runner  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "claude-code" / "warmup-2.0"
WORK = Path("/tmp/sesh-record")


def main(argv: list[str]) -> None:
    version = argv[0] if argv else claude_warmup.RELEASE
    exe = claude_warmup.find(version)
    if exe is None:
        raise SystemExit(f"Claude Code {version} is not installed (see the docstring)")
    base = WORK / f"claude-code-{version}-warmup"
    shutil.rmtree(base, ignore_errors=True)
    home, cwd = base / "home", base / "work"
    cwd.mkdir(parents=True)
    sid = claude_warmup.run(exe, home, cwd)
    out = OUT / version
    shutil.rmtree(out, ignore_errors=True)
    files = [f for f in runner.claude_sessions(home)]
    for f in files:
        dest = out / f.relative_to(home / ".claude")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
    (out / "scenario.json").write_text(json.dumps({
        "version": version, "session_id": sid, "prompt": claude_warmup.PROMPT, "cwd": str(cwd),
        "files": [str(f.relative_to(home / ".claude")) for f in files]}, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main(sys.argv[1:])
