"""Run the old OpenCode releases (JSON ``storage/``, before 1.2) offline, against the mock.

Invariants:

* One pinned release per layout, each in its own prefix (``$SESH_CLIENTS_DIR`` may list
  several folders; ``scripts/install_clients.sh`` installs ``opencode-legacy-<version>``
  beside the newest clients), so the newest OpenCode stays the default ``opencode``.
* A run never reaches the network: the provider package the release loads with Bun
  (``@ai-sdk/openai-compatible``, the release named in ``CACHE_PACKAGE``) is installed from
  npm once and copied into the temp home's ``~/.cache/opencode`` with the ``package.json``
  the release would have written, so it finds it and installs nothing.
* ``opencode run`` of these releases does not exit after the answer (0.1.174, 0.5.29): the
  run is stopped (its own process group only) once the mock has answered every scripted
  step and the storage folder has not changed for ``SETTLE`` seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import runner

# release -> (layout, the @ai-sdk/openai-compatible release its cache is seeded with, the
# CACHE_VERSION it writes to ~/.cache/opencode/version: a cache with another one is wiped and
# the provider fetched again with `bun add`, 0.5.29 and 1.1.65; None: 0.1.174 keeps no version)
RELEASES = {"0.1.174": ("0.1", "0.2.16", None), "0.5.29": ("0.5", "1.0.13", "9"), "1.0.0": ("1.0", "1.0.13", "9"),
            "1.1.65": ("1.0", "1.0.13", "21")}
CI = ("0.1.174", "0.5.29", "1.1.65")  # one release per layout, installed by scripts/install_clients.sh
SETTLE = 2.0


def find_legacy(version: str) -> Path | None:
    """The ``opencode`` native binary of a pinned old release, from the clients folders
    (``<dir>/opencode-legacy-<version>``, as scripts/install_clients.sh installs it, or
    ``<dir>/opencode-ai-<version>``)."""
    for d in runner.client_dirs():
        base = d.parent.parent
        for prefix in (base / f"opencode-legacy-{version}", base / f"opencode-ai-{version}"):
            exe = prefix / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
            if exe.exists() and os.access(exe, os.X_OK):
                return exe
    return None


def cache_package(version: str) -> Path | None:
    """The installed ``@ai-sdk/openai-compatible`` release a legacy OpenCode loads."""
    pkg = RELEASES[version][1]
    for d in runner.client_dirs():
        base = d.parent.parent
        for prefix in (base / f"opencode-legacy-cache-{pkg}", base / f"oc-cache-{pkg}"):
            if (prefix / "node_modules" / "@ai-sdk" / "openai-compatible").is_dir():
                return prefix
    return None


def prepare_home(version: str, home: Path, base_url: str) -> None:
    """The config (``config.json`` for 0.1.x, ``opencode.json`` later) and the seeded cache."""
    conf = home / ".config" / "opencode"
    conf.mkdir(parents=True, exist_ok=True)
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-mock-key"},
                "models": {runner.OPENCODE_MODEL: {"name": "Mock", "reasoning": True,
                                                   "cost": {"input": 3, "output": 15, "cache_read": 0.3,
                                                            "cache_write": 3.75},
                                                   "limit": {"context": 128000, "output": 8000}}}}
    config = {"provider": {runner.OPENCODE_PROVIDER: provider},
              "model": f"{runner.OPENCODE_PROVIDER}/{runner.OPENCODE_MODEL}", "autoupdate": False}
    name = "config.json" if RELEASES[version][0] == "0.1" else "opencode.json"
    (conf / name).write_text(json.dumps(config, indent=1))
    seed = cache_package(version)
    if seed is None:
        raise FileNotFoundError(f"@ai-sdk/openai-compatible@{RELEASES[version][1]} is not installed")
    cache = home / ".cache" / "opencode"
    if not (cache / "node_modules").exists():
        cache.mkdir(parents=True, exist_ok=True)
        shutil.copytree(seed / "node_modules", cache / "node_modules", symlinks=True)
        (cache / "package.json").write_text(json.dumps({"dependencies": {"@ai-sdk/openai-compatible": "latest"}}))
        if RELEASES[version][2] is not None:
            (cache / "version").write_text(RELEASES[version][2])


def storage_root(home: Path) -> Path:
    return runner.opencode_data(home)


def _snapshot(root: Path) -> tuple:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            try:
                st = os.stat(os.path.join(dirpath, f))
            except OSError:
                continue
            out.append((dirpath, f, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def run_legacy(exe: Path, version: str, home: Path, cwd: Path, mock, prompt: str, steps: int,
               session: str | None = None, timeout: float = 120) -> runner.RunResult:
    """``opencode run PROMPT`` (``--session`` to continue one), stopped once the mock
    answered ``steps`` agent-loop requests for it and the storage settled."""
    prepare_home(version, home, mock.url)
    env = runner.opencode_env(home)
    env["PATH"] = os.pathsep.join([str(Path(shutil.which("rg") or "/usr/bin/rg").parent), env["PATH"]])
    args = [str(exe), "run"]
    if session:
        args += ["--session", session]
    if RELEASES[version][0] == "1.0":
        # one argument per word: 1.1.65 joins its arguments and quotes one holding a space
        # (the recording keeps the quotes it wrote: "\"[bash] Run a command.\"")
        args += prompt.split(" ")
    else:
        args.append(prompt)
    before = len(mock.model_requests())
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.25)
            snap = _snapshot(storage_root(home))
            if snap != last:
                last, since = snap, time.monotonic()
            done = len(mock.model_requests()) - before >= steps
            if done and time.monotonic() - since >= SETTLE:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the client's own group, nothing else
        out, err = proc.communicate()
    return runner.RunResult(args, 0 if len(mock.model_requests()) - before >= steps else 1, out, err)


def sessions(home: Path) -> list[str]:
    """The session ids the storage holds (any layout), oldest first."""
    ids = sorted({p.stem for p in storage_root(home).rglob("ses_*.json") if p.parent.name != "message"
                  and "part" not in p.parts})
    return ids
