#!/usr/bin/env python3
"""Record Codex CLI 0.20 - 0.47 sessions (JSONL rollouts before ``cli_version`` and token
counts settled) with the real releases, offline against the Responses mock (issue 33).

    npm install --prefix DIR/codex-0.20.0 @openai/codex@0.20.0   # and 0.47.0
    SESH_CLIENTS_OLD_DIR=DIR python scripts/record_codex_old.py [0.20.0 0.47.0]

Writes ``tests/fixtures/recorded/codex-<version>/resume/``: the rollout (relative to
``~/.codex``), ``steps.json`` (not ``scenario.json``: tests/test_clients.py replays those with
the newest client) and the folder's ``SOURCES.md``. The scenario is
tests/clients/codex_old.py.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the
client never sees the real home (tests/clients/runner.py builds its environment).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients import codex_old  # noqa: E402
from clients import runner  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "recorded"
WORK = Path("/tmp/sesh-record")


def record(version: str) -> Path:
    exe = codex_old.find(version)
    if exe is None:
        raise SystemExit(f"codex {version} is not installed (see the docstring)")
    assert runner.client_version(exe) == version
    base = WORK / f"codex-{version}-resume"
    shutil.rmtree(base, ignore_errors=True)
    home, cwd = base / "home", base / "work"
    cwd.mkdir(parents=True)
    got = codex_old.run(exe, version, home, cwd)
    out = OUT / f"codex-{version}" / "resume"
    shutil.rmtree(out, ignore_errors=True)
    files = []
    for f in got["files"]:
        rel = f.relative_to(runner.codex_home(home))
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, out / rel)
        files.append(str(rel))
    (out / "steps.json").write_text(json.dumps({
        "vendor": "codex", "version": version, "scenario": "resume", "covers": codex_old.COVERS,
        "session_id": got["session_id"], "cwd": str(cwd), "home": str(home), "prompts": list(codex_old.PROMPTS),
        "files": files, "requests": got["requests"]}, indent=1) + "\n")
    resume = ("`-c experimental_resume=<rollout>`" if codex_old._version_tuple(version) < (0, 35)
              else "`codex exec resume <id> PROMPT`")
    (out.parent / "SOURCES.md").write_text(
        f"# Recorded with the real client: Codex CLI {version}\n\n"
        f"Recorded by `scripts/record_codex_old.py` with npm `@openai/codex@{version}` (installed pinned with\n"
        f"`npm install --prefix <dir>/codex-{version}`), offline: the client talked only to the scripted\n"
        "Responses mock in `tests/clients/mock_servers.py` on 127.0.0.1 (config.toml `model_provider = \"mock\"`,\n"
        f"`tests/clients/runner.py`). Fresh HOME={home}, cwd {cwd}. The rollout is copied byte for\n"
        "byte from `~/.codex`, keeping its path relative to it.\n\n"
        f"- `resume/`: {codex_old.COVERS} ({resume}). `steps.json` (not `scenario.json`, which names the\n"
        "  recordings tests/test_clients.py replays with the newest client) holds the prompts and session id.\n")
    return out


def main(argv: list[str]) -> None:
    for version in argv or list(codex_old.RELEASES):
        print(record(version))


if __name__ == "__main__":
    main(sys.argv[1:])
