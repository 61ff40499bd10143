#!/usr/bin/env bash
# Install the real vendor CLIs (Claude Code, Codex, pi, GitHub Copilot CLI) used by the
# `clients` tests and by scripts/record_sessions.py into a private folder, never globally.
#
#   scripts/install_clients.sh [DIR]      DIR defaults to $SESH_CLIENTS_DIR, then ./.clients
#
# Pin versions with CLAUDE_CODE_VERSION / CODEX_VERSION / PI_VERSION / COPILOT_VERSION
# (default: latest). The folder is gitignored; the tests look for
# DIR/node_modules/.bin/{claude,codex,pi,copilot}. pi's branch scenario also runs `node`.
set -euo pipefail

dir="${1:-${SESH_CLIENTS_DIR:-./.clients}}"
claude_version="${CLAUDE_CODE_VERSION:-latest}"
codex_version="${CODEX_VERSION:-latest}"
pi_version="${PI_VERSION:-latest}"
copilot_version="${COPILOT_VERSION:-latest}"

mkdir -p "$dir"
# --no-fund/--no-audit: fewer network calls; the packages fetch their own platform binaries
# through optional dependencies, so those must not be omitted.
npm install --prefix "$dir" --no-fund --no-audit --no-save \
    "@anthropic-ai/claude-code@${claude_version}" \
    "@openai/codex@${codex_version}" \
    "@mariozechner/pi-coding-agent@${pi_version}" \
    "@github/copilot@${copilot_version}"

for bin in claude codex pi copilot; do
    "$dir/node_modules/.bin/$bin" --version
done
