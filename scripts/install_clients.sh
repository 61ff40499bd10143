#!/usr/bin/env bash
# Install the real vendor CLIs (Claude Code, Codex, Gemini CLI, Qwen Code, pi, GitHub Copilot
# CLI, OpenCode, Cline CLI; Aider from PyPI) used by the `clients` tests and by scripts/record_sessions.py into a private folder,
# never globally.
#
#   scripts/install_clients.sh [DIR]      DIR defaults to $SESH_CLIENTS_DIR, then ./.clients
#
# Pin versions with CLAUDE_CODE_VERSION / CODEX_VERSION / GEMINI_CLI_VERSION /
# QWEN_CODE_VERSION / PI_VERSION / COPILOT_VERSION / OPENCODE_VERSION (default: latest), and the older
# releases in DIR/old/ with PI_OLD_VERSION / COPILOT_OLD_VERSION / CODEX_OLD_VERSION / CODEX_RUST_OLD_VERSIONS /
# CLAUDE_CODE_OLD_VERSIONS (below). The folder is
# gitignored; the tests look for DIR/node_modules/.bin/{claude,codex,gemini,qwen,pi,copilot,opencode}.
# Qwen Code needs Node 22 (on an older node, npm resolves an old release): the npm package
# node@22 puts a Node 22 binary in DIR/node22/node_modules/.bin/node, and the node clients
# are installed and run with it. pi's branch scenario also runs `node`.
set -euo pipefail

dir="${1:-${SESH_CLIENTS_DIR:-./.clients}}"
claude_version="${CLAUDE_CODE_VERSION:-latest}"
codex_version="${CODEX_VERSION:-latest}"
gemini_version="${GEMINI_CLI_VERSION:-latest}"
qwen_version="${QWEN_CODE_VERSION:-latest}"
node22_version="${NODE22_VERSION:-22}"
pi_version="${PI_VERSION:-latest}"
copilot_version="${COPILOT_VERSION:-latest}"
opencode_version="${OPENCODE_VERSION:-latest}"

mkdir -p "$dir/node22"
# --no-fund/--no-audit: fewer network calls; the packages fetch their own platform binaries
# through optional dependencies, so those must not be omitted.
npm install --prefix "$dir/node22" --no-fund --no-audit --no-save "node@${node22_version}"
node22="$dir/node22/node_modules/.bin/node"
"$node22" --version

# one install, run with Node 22 on PATH so that every engine check sees it
PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$dir" --no-fund --no-audit --no-save \
    "@anthropic-ai/claude-code@${claude_version}" \
    "@openai/codex@${codex_version}" \
    "@google/gemini-cli@${gemini_version}" \
    "@qwen-code/qwen-code@${qwen_version}" \
    "@mariozechner/pi-coding-agent@${pi_version}" \
    "@github/copilot@${copilot_version}" \
    "opencode-ai@${opencode_version}"

# each prints its version (pi 0.73.1 on stderr); a native binary is run as it is
for bin in claude codex gemini qwen pi copilot opencode; do
    version="$("$node22" "$dir/node_modules/.bin/$bin" --version 2>&1)" || version="$("$dir/node_modules/.bin/$bin" --version 2>&1)"
    echo "$bin: $version"
done

# OpenCode before 1.2 (JSON storage), one pinned release per layout, each in its own prefix
# so the newest stays the default `opencode`; with the provider package each release loads
# from ~/.cache/opencode (tests/clients/opencode_legacy.py seeds a temp home from these).
# OPENCODE_LEGACY="" skips them.
for pin in ${OPENCODE_LEGACY-0.1.174 0.5.29 1.1.65}; do
    [ -x "$dir/opencode-legacy-$pin/node_modules/opencode-linux-x64/bin/opencode" ] ||
        npm install --prefix "$dir/opencode-legacy-$pin" --no-fund --no-audit --no-save "opencode-ai@$pin"
    echo "opencode $pin: $("$dir/opencode-legacy-$pin/node_modules/opencode-linux-x64/bin/opencode" --version 2>&1 | head -n 1)"
done
for pkg in ${OPENCODE_LEGACY_PROVIDERS-0.2.16 1.0.13}; do
    [ -d "$dir/opencode-legacy-cache-$pkg/node_modules/@ai-sdk/openai-compatible" ] ||
        npm install --prefix "$dir/opencode-legacy-cache-$pkg" --no-fund --no-audit --no-save "@ai-sdk/openai-compatible@$pkg"
done

# Older releases whose session layouts the archive still reads (issue 33), each pinned in
# its own prefix DIR/old/<name>-<version> (tests/clients/runner.py find_old_client), installed
# once: pi 0.27.9 (session format v1), GitHub Copilot CLI 0.0.370 (the flat
# session-state/<uuid>.jsonl) and the TypeScript Codex CLI 0.1.2505172129 (rollout-*.json). `npm install` of Copilot 0.0.3xx fails (its dependency
# keytar-forked-forked is gone from the registry) and its index.js is self-contained, so its
# package is unpacked from `npm pack`.
pi_old="${PI_OLD_VERSION:-0.27.9}"
copilot_old="${COPILOT_OLD_VERSION:-0.0.370}"
codex_old="${CODEX_OLD_VERSION:-0.1.2505172129}"
old="$dir/old"
mkdir -p "$old"
if [ ! -f "$old/pi-coding-agent-$pi_old/node_modules/@mariozechner/pi-coding-agent/dist/cli.js" ]; then
    PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$old/pi-coding-agent-$pi_old" \
        --no-fund --no-audit --no-save "@mariozechner/pi-coding-agent@$pi_old"
fi
if [ ! -f "$old/codex-$codex_old/node_modules/@openai/codex/dist/cli.js" ]; then
    PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$old/codex-$codex_old" \
        --no-fund --no-audit --no-save "@openai/codex@$codex_old"
fi
copilot_pkg="$old/copilot-$copilot_old/node_modules/@github/copilot"
if [ ! -f "$copilot_pkg/index.js" ]; then
    tmp_pack="$(mktemp -d)"
    (cd "$tmp_pack" && npm pack --silent "@github/copilot@$copilot_old" >/dev/null)
    mkdir -p "$copilot_pkg"
    tar -xzf "$tmp_pack"/github-copilot-"$copilot_old".tgz -C "$copilot_pkg" --strip-components=1
    rm -rf "$tmp_pack"
fi
# Claude Code 1.0.56 (before 1.0.128 a --resume writes a new file repeating the resumed
# turns; tests/test_clients_claude_1_0.py) and 2.0.30 (warmup sidechains as agent-<8hex>.jsonl;
# tests/test_clients_claude_warmup.py): one package each, ~8 s each here
for pin in ${CLAUDE_CODE_OLD_VERSIONS-1.0.56 2.0.30}; do
    [ -f "$old/claude-code-$pin/node_modules/@anthropic-ai/claude-code/cli.js" ] ||
        PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$old/claude-code-$pin" \
            --no-fund --no-audit --no-save "@anthropic-ai/claude-code@$pin"
done
# Codex 0.20.0 and 0.47.0, the first JSONL rollout layouts (tests/test_clients_codex_old.py),
# each in its own prefix DIR/old/codex-<version> (npm bin): ~8 s and ~13 s here
for pin in ${CODEX_RUST_OLD_VERSIONS-0.20.0 0.47.0}; do
    [ -x "$old/codex-$pin/node_modules/.bin/codex" ] ||
        PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$old/codex-$pin" \
            --no-fund --no-audit --no-save "@openai/codex@$pin"
done
echo "old: pi $pi_old, copilot $copilot_old, codex $codex_old ${CODEX_RUST_OLD_VERSIONS-0.20.0 0.47.0}, claude ${CLAUDE_CODE_OLD_VERSIONS-1.0.56 2.0.30} in $old"

# OpenClaw (issue 35) needs Node >= 24.16: the npm package node@24 puts one in DIR/node24.
# Each release in a prefix of its own, DIR/old/openclaw-<version> (tests/clients/openclaw.py):
# the newest (its sessions in SQLite) and 2026.7.1, the last release that wrote JSONL
# transcripts. Installed once: an existing prefix is kept.
node24_version="${NODE24_VERSION:-24}"
if [ ! -x "$dir/node24/node_modules/.bin/node" ]; then
    mkdir -p "$dir/node24"
    npm install --prefix "$dir/node24" --no-fund --no-audit --no-save "node@${node24_version}"
fi
for pin in "${OPENCLAW_VERSION:-latest}" "${OPENCLAW_OLD_VERSION:-2026.7.1}"; do
    prefix="$old/openclaw-$pin"
    if [ ! -f "$prefix/node_modules/openclaw/openclaw.mjs" ]; then
        PATH="$(cd "$dir/node24/node_modules/.bin" && pwd):$PATH" npm install --prefix "$prefix" --no-fund --no-audit --no-save \
            "openclaw@$pin"
    fi
    echo "openclaw $pin: $("$dir/node24/node_modules/.bin/node" "$prefix/node_modules/openclaw/openclaw.mjs" --version 2>&1)"
done

# Older releases whose layouts no newer release writes (issue 33), each pinned in a prefix of
# its own, DIR/old/<package>-<version> (tests/clients/old_clients.py looks there): Gemini CLI
# 0.1.x (checkpoints and logs.json only) and Qwen Code 0.1.x (~/.qwen/tmp/<hash>/...). Their
# tests drive the terminal UI under tmux. Installed once: an existing prefix is kept.
# Gemini CLI 0.10.0 too: the chats/session-*.json documents of 0.4-0.19
# (tests/test_clients_gemini_session_doc.py).
gemini_old_version="${GEMINI_CLI_OLD_VERSION:-0.1.22}"
gemini_doc_version="${GEMINI_CLI_DOC_VERSION:-0.10.0}"
qwen_old_version="${QWEN_CODE_OLD_VERSION:-0.1.4}"
for spec in "gemini-cli @google/gemini-cli $gemini_old_version gemini" "gemini-cli @google/gemini-cli $gemini_doc_version gemini" \
            "qwen-code @qwen-code/qwen-code $qwen_old_version qwen"; do
    read -r folder package version bin <<< "$spec"
    prefix="$dir/old/$folder-$version"
    if [ ! -x "$prefix/node_modules/.bin/$bin" ]; then
        mkdir -p "$prefix"
        PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$prefix" --no-fund --no-audit --no-save \
            "$package@$version"
    fi
    echo "$bin (old): $("$node22" "$prefix/node_modules/.bin/$bin" --version 2>&1)"
done

# Aider (PyPI aider-chat, issue 36) in a virtualenv of its own, DIR/old/aider-<version>
# (tests/clients/aider_client.py looks there), installed once: it pins every dependency to
# exact versions, so it never shares the archive's environment (nor a machine-wide pip
# constraints file). aider-chat 0.86.2 needs Python 3.10-3.12: AIDER_PYTHON names another
# interpreter. AIDER_VERSION="" skips it.
aider_version="${AIDER_VERSION-0.86.2}"
if [ -n "$aider_version" ]; then
    aider_venv="$dir/old/aider-$aider_version"
    if [ ! -x "$aider_venv/bin/aider" ]; then
        "${AIDER_PYTHON:-python3}" -m venv "$aider_venv"
        PIP_CONSTRAINT="" "$aider_venv/bin/pip" install --quiet --disable-pip-version-check "aider-chat==$aider_version"
    fi
    echo "aider: $("$aider_venv/bin/aider" --version 2>&1)"
fi

# Hermes Agent (issue 35), a Python client (PyPI hermes-agent), pinned in a venv of its own,
# DIR/old/hermes-<version> (tests/clients/hermes_client.py looks there), installed once. It
# needs Python 3.11 or newer ($HERMES_PYTHON, default python3). About 5 minutes here (2 cores).
hermes_version="${HERMES_VERSION:-0.19.0}"
hermes_prefix="$dir/old/hermes-$hermes_version"
if [ ! -x "$hermes_prefix/bin/hermes" ]; then
    "${HERMES_PYTHON:-python3}" -m venv "$hermes_prefix"
    "$hermes_prefix/bin/pip" install --quiet --disable-pip-version-check "hermes-agent==$hermes_version"
fi
echo "hermes: $("$hermes_prefix/bin/hermes" --version 2>&1 | head -n 1)"

# Mistral Vibe (PyPI mistral-vibe; tests/clients/vibe_client.py), a Python >= 3.12 package with a
# Rust CLI, in a virtual environment of its own, DIR/old/vibe-<version>. 3.0.3 pins a certifi
# release the registry here lacks: 3.0.2 first (its dependencies), then 3.0.3 without its own,
# then 3.0.3's other requirements. Skipped, with a message, when no Python >= 3.12 is found
# ($VIBE_PYTHON, python3.12/python3.13 on PATH, or pyenv's 3.12+ versions).
vibe_version="${VIBE_VERSION:-3.0.3}"
vibe_prefix="$dir/old/vibe-$vibe_version"
vibe_python="${VIBE_PYTHON:-}"
if [ -z "$vibe_python" ]; then
    for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python /root/.pyenv/versions/3.1[2-9]*/bin/python; do
        if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            vibe_python="$candidate"
            break
        fi
    done
fi
if [ -x "$vibe_prefix/bin/vibe" ]; then
    echo "vibe: $("$vibe_prefix/bin/vibe" --version 2>&1 | tail -1)"
elif [ -z "$vibe_python" ]; then
    echo "vibe: skipped (no Python >= 3.12; set VIBE_PYTHON): the Mistral Vibe client tests will skip"
else
    "$vibe_python" -m venv "$vibe_prefix"
    if [ "$vibe_version" = "3.0.3" ]; then
        "$vibe_prefix/bin/pip" install --quiet "mistral-vibe==3.0.2"
        "$vibe_prefix/bin/pip" install --quiet --no-deps "mistral-vibe==3.0.3"
        "$vibe_prefix/bin/python" - > "$vibe_prefix/requirements.txt" <<'PY'
from importlib.metadata import requires
from packaging.requirements import Requirement
for r in requires("mistral-vibe"):
    req = Requirement(r)
    if (req.marker and not req.marker.evaluate({"extra": ""})) or req.name == "certifi":
        continue
    req.marker = None
    print(req)
PY
        "$vibe_prefix/bin/pip" install --quiet -r "$vibe_prefix/requirements.txt"
    else
        "$vibe_prefix/bin/pip" install --quiet "mistral-vibe==$vibe_version"
    fi
    echo "vibe: $("$vibe_prefix/bin/vibe" --version 2>&1 | tail -1)"
fi

# Kilo Code CLI (issue 36), pinned in its own prefix DIR/old/kilocode-cli-<version>
# (tests/clients/kilo.py find_kilo), installed once. 7.7.7: the registry here holds no linux
# binary of 7.8.1. Its postinstall fetches the platform package from the registry.
kilo_version="${KILO_VERSION:-7.7.7}"
prefix="$dir/old/kilocode-cli-$kilo_version"
if [ ! -x "$prefix/node_modules/.bin/kilo" ]; then
    mkdir -p "$prefix"
    PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$prefix" --no-fund --no-audit --no-save \
        "@kilocode/cli@$kilo_version"
fi
echo "kilo: $("$prefix/node_modules/.bin/kilo" --version 2>&1 | tail -n 1)"

# Cline CLI (npm ``cline``: a bundled Bun binary in @cline/cli-linux-x64, no node needed to run
# it), pinned, in a prefix of its own, DIR/cline (tests/clients/cline.py looks there), installed
# once: an existing install of the pinned version is kept. CLINE_VERSION="" skips it.
cline_version="${CLINE_VERSION-3.0.65}"
if [ -n "$cline_version" ]; then
    cline_bin="$dir/cline/node_modules/@cline/cli-linux-x64/bin/cline"
    if [ ! -x "$cline_bin" ] || [ "$("$cline_bin" --version 2>/dev/null)" != "$cline_version" ]; then
        PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$dir/cline" --no-fund --no-audit \
            --no-save "cline@$cline_version"
    fi
    echo "cline: $("$cline_bin" --version 2>&1)"
fi
# Kimi CLI (issue 35; PyPI kimi-cli; tests/clients/kimi_client.py), a Python >= 3.12 package,
# in a virtual environment of its own, DIR/old/kimi-cli-<version>, installed once. 1.51.0: the
# last release that runs (1.52.0 only prints that kimi-cli is no longer maintained). Under
# pyenv's 3.12.1 it fails at its start (TypeError in a slots dataclass, utils/slashcmd.py):
# Python 3.13 ($KIMI_PYTHON, python3.13 on PATH, or pyenv's 3.13+). Skipped, with a message,
# when none is found.
kimi_version="${KIMI_VERSION:-1.51.0}"
kimi_prefix="$dir/old/kimi-cli-$kimi_version"
kimi_python="${KIMI_PYTHON:-}"
if [ -z "$kimi_python" ]; then
    for candidate in python3.13 python3.14 "$HOME"/.pyenv/versions/3.1[3-9]*/bin/python /root/.pyenv/versions/3.1[3-9]*/bin/python; do
        if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
            kimi_python="$candidate"
            break
        fi
    done
fi
if [ -x "$kimi_prefix/bin/kimi" ]; then
    echo "kimi: $kimi_version"
elif [ -z "$kimi_python" ]; then
    echo "kimi: skipped (no Python >= 3.13; set KIMI_PYTHON): the Kimi CLI client tests will skip"
else
    "$kimi_python" -m venv "$kimi_prefix"
    "$kimi_prefix/bin/pip" install --quiet "kimi-cli==$kimi_version"
    echo "kimi: $kimi_version"
fi
