"""Record the OpenClaw fixtures with the real client (tests/fixtures/openclaw, SOURCES.md).

    SESH_CLIENTS_DIR=... python scripts/record_openclaw.py VERSION [OUT]

Runs ``openclaw onboard`` for the chat-completions mock, then the scenario of
tests/clients/openclaw.py (one prompt with reasoning and an ``exec`` call, then a resume of
the same ``--session-id``) in a temp home, and writes the session as the archive reads it:
the JSONL file a release before the SQLite store wrote, or the documents of the store
(``openclaw-<version>-exec.jsonl`` and its ``.trajectory.jsonl``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archive.readonly import ReadOnlyDatabase  # noqa: E402
from archive.vendors import get  # noqa: E402
from tests.clients import openclaw as oc  # noqa: E402
from tests.clients.mock_servers import ChatCompletionsMock  # noqa: E402


def main() -> None:
    version = sys.argv[1]
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "tests" / "fixtures" / "openclaw"
    exe = oc.find_openclaw(version)
    if exe is None:
        sys.exit(f"openclaw {version} is not installed (scripts/install_clients.sh)")
    work = Path(tempfile.mkdtemp(prefix="openclaw-rec-"))
    home, cwd = work / "home", work / "work"
    home.mkdir()
    cwd.mkdir()
    with ChatCompletionsMock(oc.SCRIPT, max_seconds=3600) as mock:
        oc.onboard(exe, home, cwd, mock.url).check()
        oc.run_agent(exe, home, cwd, oc.PROMPT).check()
        oc.run_agent(exe, home, cwd, oc.RESUME).check()
    agents = oc.state_dir(home) / "agents"
    jsonl = agents / "main" / "sessions" / f"{oc.SESSION_ID}.jsonl"
    if jsonl.exists():
        shutil.copyfile(jsonl, out / f"openclaw-{version}-exec.jsonl")
    else:
        db = agents / "main" / "agent" / "openclaw-agent.sqlite"
        with ReadOnlyDatabase(db) as database:
            for doc in get("openclaw").documents(db, database.query):
                suffix = ".trajectory.jsonl" if doc.path.endswith(".trajectory.jsonl") else ".jsonl"
                (out / f"openclaw-{version}-exec{suffix}").write_bytes(doc.data)
    print(f"recorded in {work}")


if __name__ == "__main__":
    main()
