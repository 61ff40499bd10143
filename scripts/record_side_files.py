#!/usr/bin/env python3
"""Record Claude Code's side files (issue 38) in its terminal UI against the mock model server.

    python scripts/record_side_files.py [--claude PATH]   # default: the newest installed client

Writes tests/fixtures/side-files/claude-code-<version>/: the client's config folder as it
left it (history, file backups, tasks or todos, plans, ``.claude.json``, the transcript),
without the ``.claude.json`` backups and caches. Needs tmux. Invariants as
scripts/record_sessions.py: nothing outside /tmp/sesh-record-side/ and the output folder is
written; the real home is never read.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients import runner  # noqa: E402
from clients.tui import run_tui, side_script  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "side-files"
WORK = Path("/tmp/sesh-record-side")
PROMPTS = ["[side] Track a task and edit hello.py.", "[plan] Plan the next step.", "[again] Edit it again."]
KEEP = ("history.jsonl", ".claude.json", "file-history", "todos", "tasks", "plans", "paste-cache", "projects")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--claude", type=Path, help="the claude executable (default: the installed one)")
    args = ap.parse_args()
    exe = args.claude or runner.find_client("claude")
    if exe is None:
        print("claude not found (scripts/install_clients.sh)", file=sys.stderr)
        return 1
    version = runner.client_version(exe)
    shutil.rmtree(WORK, ignore_errors=True)
    major = version.split(".")[0]
    run = run_tui(exe, WORK, PROMPTS if major != "1" else PROMPTS[:1], side_script(WORK / "proj", tasks=major != "1"))
    out = OUT / f"claude-code-{version}"
    shutil.rmtree(out, ignore_errors=True)
    config = run.home / ".claude"
    for name in KEEP:
        src = config / name
        if src.is_dir():
            shutil.copytree(src, out / ".claude" / name, ignore=shutil.ignore_patterns(".lock", ".highwatermark"))
        elif src.is_file():
            (out / ".claude").mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / ".claude" / name)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
