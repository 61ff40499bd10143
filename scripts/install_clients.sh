#!/usr/bin/env bash
# Install the real vendor CLIs (Claude Code, Codex, Gemini CLI, Qwen Code, pi, GitHub Copilot
# CLI, OpenCode) used by the `clients` tests and by scripts/record_sessions.py into a private folder,
# never globally.
#
#   scripts/install_clients.sh [DIR]      DIR defaults to $SESH_CLIENTS_DIR, then ./.clients
#
# Pin versions with CLAUDE_CODE_VERSION / CODEX_VERSION / GEMINI_CLI_VERSION /
# QWEN_CODE_VERSION / PI_VERSION / COPILOT_VERSION / OPENCODE_VERSION (default: latest), and the older
# releases in DIR/old/ with PI_OLD_VERSION / COPILOT_OLD_VERSION / CODEX_OLD_VERSION (below). The folder is
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
echo "old: pi $pi_old, copilot $copilot_old, codex $codex_old in $old"

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
gemini_old_version="${GEMINI_CLI_OLD_VERSION:-0.1.22}"
qwen_old_version="${QWEN_CODE_OLD_VERSION:-0.1.4}"
for spec in "gemini-cli @google/gemini-cli $gemini_old_version gemini" "qwen-code @qwen-code/qwen-code $qwen_old_version qwen"; do
    read -r folder package version bin <<< "$spec"
    prefix="$dir/old/$folder-$version"
    if [ ! -x "$prefix/node_modules/.bin/$bin" ]; then
        mkdir -p "$prefix"
        PATH="$(cd "$dir/node22/node_modules/.bin" && pwd):$PATH" npm install --prefix "$prefix" --no-fund --no-audit --no-save \
            "$package@$version"
    fi
    echo "$bin (old): $("$node22" "$prefix/node_modules/.bin/$bin" --version 2>&1)"
done
