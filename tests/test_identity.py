"""Source identity (DESIGN.md "Identity", issue 16 item 4): a first line is not enough. Two
files that exist at the same time at different paths and open with the same line are two
sources, each restored byte for byte, nothing superseded; a moved or archived file, a copy
and clm's ``.bak`` still continue the source they came from."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore
from tests.vendor_home import vendor_env

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = [FIXTURES / "claude-code" / f"d-kimuson__claude-code-viewer__{s}.jsonl"
          for s in ("1af7fc5e-8455-4414-9ccd-011d40f70b2a", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7")]  # fmt: skip
CODEX = [FIXTURES / "codex" / "lanegrid__agtrace__codex_session.jsonl",
         FIXTURES / "codex" / "lanegrid__agtrace__rollout-parent-019b88e0.jsonl"]  # fmt: skip
# Claude Code writes summary records of earlier sessions at the top of a resumed one
SUMMARY = b'{"type":"summary","summary":"Fix the login flow","leafUuid":"0b6a9d4e-3d1c-4a8e-9a43-5f0c2f4e1a77"}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _claude_pair(home: Path) -> list[tuple[Path, bytes]]:
    out = []
    for f in CLAUDE:
        sid = orjson.loads(f.read_bytes().splitlines()[0])["sessionId"]
        path = home / ".claude" / "projects" / "-path-to-Demo" / f"{sid}.jsonl"
        out.append((path, SUMMARY + b"\n" + f.read_bytes()))
    return out


def _codex_pair(home: Path) -> list[tuple[Path, bytes]]:
    # both open with the same turn_context line (the one of the first fixture)
    context = next(line for line in CODEX[0].read_bytes().splitlines() if b'"type":"turn_context"' in line)
    out = []
    for f in CODEX:
        sid = orjson.loads(f.read_bytes().splitlines()[0])["payload"]["id"]
        path = home / ".codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
        out.append((path, context + b"\n" + f.read_bytes()))
    return out


def _ingest(db_path: Path, home: Path):
    db = open_db(db_path)
    s = ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9))
    assert s.failed == 0 and s.reports["adapter_error"] == 0
    return db


def _alone(tmp_path: Path, home: Path, path: Path, data: bytes) -> set[str]:
    """Message ids of the file ingested by itself."""
    alone = tmp_path / f"alone-{sha(data)[:8]}"
    target = alone / path.relative_to(home)
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return {r[0] for r in _ingest(alone.with_suffix(".db"), alone).execute("SELECT id FROM messages")}


def _check_two_sources(tmp_path: Path, home: Path, db, files: list[tuple[Path, bytes]]) -> None:
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM superseded_messages").fetchone()[0] == 0
    out = tmp_path / f"restored{len(list(tmp_path.glob('restored*')))}"
    restored = {f.path: f for f in restore(db, out)}
    for path, data in files:
        f = restored[out / str(path).lstrip("/")]
        assert f.sha256 == sha(data) and f.path.read_bytes() == data
    ids = {r[0] for r in db.execute("SELECT id FROM messages")}
    assert ids == set().union(*(_alone(tmp_path, home, p, d) for p, d in files))
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


@pytest.mark.parametrize("pair", [_claude_pair, _codex_pair], ids=["claude-code", "codex"])
@pytest.mark.parametrize("how", ["one run", "one after the other", "first read when it held only the shared line"])
def test_two_live_files_sharing_a_first_line_are_two_sources(tmp_path, pair, how):
    home = tmp_path / "home"
    files = pair(home)
    assert files[0][1].split(b"\n", 1)[0] == files[1][1].split(b"\n", 1)[0]
    for path, _ in files:
        path.parent.mkdir(parents=True, exist_ok=True)
    (a, data_a), (b, data_b) = files
    if how == "one run":
        a.write_bytes(data_a)
        b.write_bytes(data_b)
    elif how == "one after the other":
        a.write_bytes(data_a)
        _ingest(tmp_path / "x.db", home)
        b.write_bytes(data_b)
    else:
        a.write_bytes(data_a.split(b"\n", 1)[0] + b"\n")
        _ingest(tmp_path / "x.db", home)
        a.write_bytes(data_a)
        b.write_bytes(data_b)
    db = _ingest(tmp_path / "x.db", home)
    _check_two_sources(tmp_path, home, db, files)
    before = dump_tables(db)
    db = _ingest(tmp_path / "x.db", home)
    assert dump_tables(db) == before


def test_rollout_at_its_live_and_archived_path_at_once_is_one_source(tmp_path):
    """Codex archives a rollout by moving it; a run can find it in both places (the same
    file name) or only in the new one: either way one source, nothing read twice."""
    home = tmp_path / "home"
    ((live, data), _) = _codex_pair(home)
    live.parent.mkdir(parents=True)
    lines = data.splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:1]))  # only the first line so far
    db = _ingest(tmp_path / "x.db", home)
    live.write_bytes(data)
    archived = home / ".codex" / "archived_sessions" / live.name
    archived.parent.mkdir(parents=True)
    shutil.copy(live, archived)
    db = _ingest(tmp_path / "x.db", home)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM source_lines").fetchone()[0] == len(lines)
    live.unlink()
    before = dump_tables(db)["source_lines"]
    db = _ingest(tmp_path / "x.db", home)
    assert dump_tables(db)["source_lines"] == before
