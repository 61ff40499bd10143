"""Claude Code 2.0.x warmup sidechains (issue 33), recorded with the real 2.0.30
(tests/fixtures/claude-code/warmup-2.0/): each ``agent-<8hex>.jsonl`` beside a session is a
subagent child thread of that session (``<session>/agent-<id>``), never messages of the
session itself, the same whichever file arrives first; every file restores sha256-equal."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Text
from archive.projection import load_messages, load_threads
from tests.test_forks import order_free_dump

WARMUP = Path(__file__).parent / "fixtures" / "claude-code" / "warmup-2.0" / "2.0.30"


def _ingest(db_path: Path, home: Path, files: list[Path]):
    db = open_db(db_path)
    for f in files:  # one run per file: the order they arrive in
        target = home / ".claude" / f.relative_to(WARMUP)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        s = ingest_paths(db, [target], IngestOptions(idle_seconds=10**9))
        assert s.failed == 0 and s.reports["adapter_error"] == 0 and not s.reports.get("unexplained")
    return db


def test_warmup_sidechains_are_children_of_their_session(tmp_path: Path) -> None:
    sid = orjson.loads((WARMUP / "scenario.json").read_bytes())["session_id"]
    files = sorted((WARMUP / "projects").rglob("*.jsonl"))
    agents = [f for f in files if f.name.startswith("agent-")]
    assert len(agents) == 2 and len(files) == 3
    session = next(f for f in files if f.stem == sid)
    dumps = []
    for n, order in enumerate(([session, *agents], [*agents, session])):
        db = _ingest(tmp_path / f"{n}.db", tmp_path / f"home{n}", order)
        threads = {t.id: t for t in load_threads(db.conn, "provider = 'claude-code'")}
        assert set(threads) == {sid} | {f"{sid}/{a.stem}" for a in agents}
        for a in agents:
            t = threads[f"{sid}/{a.stem}"]
            assert t.parent_thread_id == sid
            msgs = load_messages(db.conn, "m.thread_id = ?", (t.id,))
            assert [m.role for m in msgs] == ["user", "assistant"]
            assert msgs[0].content[0].text == "Warmup"
            assert all((m.provenance.extra or {}).get("agentId") == a.stem[6:] for m in msgs)
        main = load_messages(db.conn, "m.thread_id = ?", (sid,))
        assert [b.text for m in main for b in m.content if isinstance(b, Text)] == ["[warmup] Run a command.", "It printed one."]
        restored = sorted(r.sha256 for r in restore(db, tmp_path / f"out{n}"))
        assert restored == sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
        dumps.append(order_free_dump(db))
        db.conn.close()
    assert dumps[0] == dumps[1]
