#!/usr/bin/env python3
"""Record Gemini CLI 0.1.x and Qwen Code 0.1.x sessions through their terminal UI (under tmux)
against the mock model servers, offline.

    npm install --prefix DIR/gemini-cli-0.1.22 @google/gemini-cli@0.1.22
    npm install --prefix DIR/qwen-code-0.1.4 @qwen-code/qwen-code@0.1.4
    SESH_CLIENTS_OLD_DIR=DIR python scripts/record_old_sessions.py [gemini] [qwen] [gemini@0.19.4]

``VENDOR@VERSION`` records another release installed the same way (DIR/<package>-<version>).

Writes ``tests/fixtures/recorded/<vendor>-<version>/checkpoints/``: the files the client
wrote under ``~/.gemini/tmp/`` or ``~/.qwen/tmp/`` (relative to the home, so the folder names
say whose they are), ``steps.json`` (the lines typed; not ``scenario.json``, which names the
resumable recordings tests/test_clients.py replays) and a ``SOURCES.md``. The scenario is ``tests/clients/old_clients.old_scenario``.

Invariants: nothing outside /tmp/sesh-record/ and the output folder is written; the real
home is never read (the clients get an explicit environment).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients import old_clients as old  # noqa: E402
from clients import runner  # noqa: E402
from clients.mock_servers import ChatCompletionsMock, GeminiMock  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "recorded"
WORK = Path("/tmp/sesh-record")
LABELS = {"gemini": ("Gemini CLI", "@google/gemini-cli"), "qwen": ("Qwen Code", "@qwen-code/qwen-code")}


def record(spec: str) -> Path:
    vendor, _, wanted = spec.partition("@")
    package, pinned, name = old.OLD[vendor]
    exe = runner.find_old_bin(package, wanted or pinned, name)
    if exe is None:
        raise SystemExit(f"{vendor} {wanted or pinned} is not installed (see the docstring)")
    version = runner.client_version(exe)
    scenario = old.old_scenario(vendor)
    base = WORK / f"old-{vendor}"
    shutil.rmtree(base, ignore_errors=True)
    home, cwd = base / "home", base / "work"
    home.mkdir(parents=True)
    cwd.mkdir()
    mock_cls = GeminiMock if vendor == "gemini" else ChatCompletionsMock
    with mock_cls(scenario.script) as mock:
        old.run_tui(vendor, exe, home, cwd, mock.url, scenario.steps)
    out = OUT / f"{vendor}-{version}" / scenario.name
    shutil.rmtree(out, ignore_errors=True)
    files = old.written_files(vendor, home)
    for f in files:
        target = out / f.relative_to(home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    (out / "steps.json").write_text(json.dumps({
        "vendor": vendor, "version": version, "cwd": str(cwd), "covers": scenario.covers,
        "steps": [{"type": s.text, "until": s.until} for s in scenario.steps],
        "files": [str(f.relative_to(home)) for f in files],
    }, indent=1) + "\n")
    label, package = LABELS[vendor]
    (out.parent / "SOURCES.md").write_text(
        f"# {label} {version}\n\n"
        f"Recorded with the real client (npm `{package}@{version}`, installed pinned in a folder of its own) by\n"
        "`scripts/record_old_sessions.py`: its terminal UI driven under tmux (`tests/clients/tui_old.py`), offline\n"
        "against the mock model server in `tests/clients/mock_servers.py`, with a fresh HOME. The files are\n"
        f"byte-for-byte copies of what the client wrote under `~/.{'gemini' if vendor == 'gemini' else 'qwen'}/tmp/`, "
        "kept relative to the home.\n\n"
        f"- `{scenario.name}/`: {scenario.covers}. `steps.json` lists the lines typed.\n")
    return out


def main(argv: list[str]) -> None:
    for vendor in argv or ["gemini", "qwen"]:
        print(record(vendor))


if __name__ == "__main__":
    main(sys.argv[1:])
