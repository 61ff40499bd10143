#!/usr/bin/env bash
# Install the real vendor CLIs (Claude Code, Codex, Gemini CLI, Qwen Code, pi, GitHub Copilot
# CLI, OpenCode) used by the `clients` tests and by scripts/record_sessions.py into a private folder,
# never globally.
#
#   scripts/install_clients.sh [DIR]      DIR defaults to $SESH_CLIENTS_DIR, then ./.clients
#
# Pin versions with CLAUDE_CODE_VERSION / CODEX_VERSION / GEMINI_CLI_VERSION /
# QWEN_CODE_VERSION / PI_VERSION / COPILOT_VERSION / OPENCODE_VERSION (default: latest). The folder is
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
