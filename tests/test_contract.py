"""The adapter contract, checked for every registered vendor on every file of its fixture
folder (``tests/fixtures/<adapter name>/``, recursively): a new vendor gets all of it by
registering its adapter and adding fixtures.

Parser level: every line explained, ids deterministic and unique, the golden canonical dump
(``tests/golden/<name>/<file stem>.jsonl``, ``--update-golden`` rewrites it), resumable from
its JSON state after any line, small state. Archive level: rerun changes nothing, rebuild
equals ingest, restore is byte-exact, incremental (random byte cuts while the file grows)
equals whole. Emit level: archive -> the vendor's own format built from the canonical model
-> archive keeps roles, texts, tool calls and results and each response's usage, and the
emitted file is one the vendor's parser reads without a parse error or an unexplained line
(the real clients resume them in ``test_clients.py``).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive.db import dump_tables, open_db
from archive.emit import INSTALLABLE, emit_thread, write_files
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore
from archive.projection import load_messages
from archive.thread_view import MessagePages
from archive.vendors import VENDORS
from archive.vendors.base import INVALID, LINES, PARSE_ERROR, SNAPSHOT, Adapter
from helpers import (
    assert_same_conversation,
    check_golden,
    parse_bytes,
    rows_dump,
    source_for,
    unexplained_offsets,
)
from ingest_helpers import NEVER_IDLE, portable_dump

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
STATE_LIMIT = 16_000  # bytes of JSON state a parser may carry between lines


# vendors whose sessions are JSON documents rewritten whole (SNAPSHOT sources): their ``.json``
# fixtures are cases too, each document fed as one line at offset 0 as ingest feeds it
# (Gemini CLI's public chat documents and checkpoint, issue 33)
DOCUMENT_VENDORS = ("cline", "gemini")


def fixture_files(adapter: Adapter) -> list[Path]:
    folder = FIXTURES / adapter.name
    # a project-local file (issue 36) is named as the vendor writes it, after a fixture prefix
    # (``recorded-0.86.2.aider.chat.history.md``): golden names stay unique
    names = tuple(adapter.project_patterns)
    suffixes = (".jsonl", ".json") if adapter.name in DOCUMENT_VENDORS else (".jsonl",)
    return sorted(p for p in folder.rglob("*") if p.is_file() and (p.suffix in suffixes or (names and p.name.endswith(names)))) if folder.is_dir() else []


def kind_of(adapter: Adapter, path: Path) -> str:
    # a fixture is a file given by hand: read as ingest reads one (Adapter.given_kind)
    head = path.read_bytes()[: 64 << 10]
    return SNAPSHOT if adapter.name in DOCUMENT_VENDORS and adapter.given_kind(path, head) == SNAPSHOT else LINES


CASES = [pytest.param(a, p, id=f"{a.name}:{p.relative_to(FIXTURES / a.name)}") for a in VENDORS for p in fixture_files(a)]


def parse(adapter: Adapter, path: Path, resume_every: int | None = None) -> list:
    return parse_bytes(adapter, path.read_bytes(), source_for(path, adapter.name, kind_of(adapter, path)),
                       resume_every=resume_every)


@pytest.mark.parametrize("adapter", VENDORS, ids=lambda a: a.name)
def test_every_vendor_has_fixtures(adapter: Adapter) -> None:
    assert fixture_files(adapter), f"add real session files of {adapter.name} under {FIXTURES / adapter.name}"


# ---------------------------------------------------------------- the parser


@pytest.mark.parametrize("adapter,path", CASES)
def test_golden(adapter: Adapter, path: Path, update_golden: bool) -> None:
    check_golden(GOLDEN / adapter.name / (path.stem + ".jsonl"), rows_dump(parse(adapter, path)), update_golden)


@pytest.mark.parametrize("adapter,path", CASES)
def test_every_line_explained_and_ids_deterministic(adapter: Adapter, path: Path) -> None:
    rows = parse(adapter, path)
    data = path.read_bytes()
    assert unexplained_offsets(data if kind_of(adapter, path) == LINES else data.replace(b"\n", b" "), rows) == []
    assert rows_dump(parse(adapter, path)) == rows_dump(rows)
    # a message id repeats only as a revision (an upsert: the later version replaces it)
    seen: set[str] = set()
    for _, r in rows:
        if hasattr(r, "message"):
            assert r.revises or r.message.id not in seen, r.message.id
            seen.add(r.message.id)


@pytest.mark.parametrize("adapter,path", CASES)
def test_resumable_after_any_line(adapter: Adapter, path: Path) -> None:
    whole = rows_dump(parse(adapter, path))
    for every in (1, 3):
        assert rows_dump(parse(adapter, path, resume_every=every)) == whole


@pytest.mark.parametrize("adapter,path", CASES)
def test_state_stays_small(adapter: Adapter, path: Path) -> None:
    parser = adapter.parser(source_for(path, adapter.name, kind_of(adapter, path)))
    lines = path.read_bytes().splitlines() if kind_of(adapter, path) == LINES else [path.read_bytes()]
    for offset, line in enumerate(lines):
        list(parser.feed(offset, line))
        assert len(orjson.dumps(parser.state())) < STATE_LIMIT


# ---------------------------------------------------------------- the archive


def ingest_copy(adapter: Adapter, path: Path, folder: Path, db_name: str = "a.db"):
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / path.name
    shutil.copyfile(path, copy)
    db = open_db(folder / db_name)
    summary = ingest_paths(db, [copy], NEVER_IDLE)
    return db, summary, copy


@pytest.mark.parametrize("adapter,path", CASES)
def test_rerun_rebuild_and_restore(adapter: Adapter, path: Path, tmp_path: Path) -> None:
    db, summary, copy = ingest_copy(adapter, path, tmp_path / "in")
    assert summary.failed == 0
    assert not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    assert {r[0] for r in db.execute("SELECT provider FROM sources")} == {adapter.name}
    before = dump_tables(db)
    assert ingest_paths(db, [copy], NEVER_IDLE).files_changed == 0 and dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before
    (restored,) = restore(db, tmp_path / "out")
    assert restored.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("adapter,path", CASES)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_incremental_equals_whole(tmp_path_factory, adapter: Adapter, path: Path, cuts: list[float]) -> None:
    if kind_of(adapter, path) == SNAPSHOT:
        pytest.skip("a document rewritten whole never grows: its generations are tested per vendor (test_cline.py)")
    data = path.read_bytes()
    tmp = tmp_path_factory.mktemp("cuts")
    db_whole, _, _ = ingest_copy(adapter, path, tmp / "whole")
    growing = tmp / "grow" / path.name
    growing.parent.mkdir(parents=True)
    growing.write_bytes(b"")
    written = 0
    for pos in sorted({int(c * len(data)) for c in cuts} | {len(data)}):
        with open(growing, "ab") as f:
            f.write(data[written:pos])
        written = pos
        db_inc = open_db(tmp / "inc.db")
        ingest_paths(db_inc, [growing], IngestOptions(idle_seconds=10**9, batch_lines=5))
    assert portable_dump(db_inc) == portable_dump(db_whole)


# ---------------------------------------------------------------- emit and parse again

BUCKETS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def own_usage(db, thread_ids: list[str]) -> tuple[int, ...]:
    marks = ", ".join("?" * len(thread_ids))
    row = db.execute(f"SELECT {', '.join(f'coalesce(sum({b}), 0)' for b in BUCKETS)} FROM usage "
                     f"WHERE thread_id IN ({marks})", thread_ids).fetchone()  # fmt: skip
    return tuple(row)


def view_usage(db, thread_id: str, view: list) -> tuple[int, ...]:
    """The thread's own usage and that of the responses it inherited (a fork's emit carries
    them into a session of its own)."""
    ids = [m.id for m in view]
    row = db.execute(f"SELECT {', '.join(f'coalesce(sum({b}), 0)' for b in BUCKETS)} FROM usage "
                     f"WHERE thread_id = ? OR message_id IN (SELECT value FROM json_each(?))",
                     (thread_id, orjson.dumps(ids).decode())).fetchone()  # fmt: skip
    return tuple(row)


def roots(db) -> list[str]:
    """Threads with messages whose parent is not in the archive (a subagent file alone is a
    root), and forks (a session of their own, emitted with the history they inherit)."""
    return [r[0] for r in db.execute(
        "SELECT t.id FROM threads t WHERE (t.parent_thread_id IS NULL OR NOT EXISTS "
        "(SELECT 1 FROM threads p WHERE p.id = t.parent_thread_id) "
        "OR json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id) "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.id) ORDER BY t.id"
    )]  # fmt: skip


@pytest.mark.parametrize("adapter,path", [c for c in CASES if c.values[0].emits])
def test_parse_emit_parse_keeps_the_conversation_and_its_usage(adapter: Adapter, path: Path, tmp_path: Path) -> None:
    db, _, _ = ingest_copy(adapter, path, tmp_path / "in")
    for tid in roots(db):
        messages = list(MessagePages(db, tid, full_outputs=False))  # a fork's inherited history first
        out = emit_thread(db, tid, adapter.name, exact=False)
        assert not out.exact
        dest = tmp_path / "emitted" / hashlib.sha256(tid.encode()).hexdigest()[:12]
        write_files(out, dest)
        db2 = open_db(dest / "again.db")
        summary = ingest_paths(db2, [dest], NEVER_IDLE)
        assert summary.failed == 0 and summary.files_changed >= 1, (tid, summary.to_dict())
        # structurally sound for the vendor's own parser: every line read as the vendor's
        bad = db2.execute("SELECT kind, reason FROM reports WHERE kind IN (?, ?, 'unexplained', 'adapter_error')",
                          (PARSE_ERROR, INVALID)).fetchall()  # fmt: skip
        assert bad == [], (tid, bad)
        assert {r[0] for r in db2.execute("SELECT provider FROM sources")} == {adapter.name}
        again_roots = roots(db2)
        again = [m for t in again_roots for m in load_messages(db2.conn, "m.thread_id = ?", (t,))]
        assert_same_conversation(messages, again, adapter.name, tid)
        dropped = any(k.startswith("usage") and "dropped" in k for k in out.counts)
        if not dropped:
            assert own_usage(db2, again_roots) == view_usage(db, tid, messages), tid


def test_canonical_round_trip_keeps_stats_totals(tmp_path: Path) -> None:
    """Every vendor's threads emitted as canonical JSONL and ingested into a new archive give
    the same token totals and response counts as the archive they came from."""
    from archive.pricing import load_prices
    from archive.queries import stats

    db, _, _ = ingest_copy(VENDORS[0], next(iter(fixture_files(VENDORS[0]))), tmp_path / "in")
    for adapter in VENDORS:
        for path in fixture_files(adapter):
            shutil.copyfile(path, tmp_path / "in" / f"{adapter.name}-{path.name}")
    ingest_paths(db, [tmp_path / "in"], NEVER_IDLE)
    out_dir = tmp_path / "canonical"
    for tid in roots(db):
        out = emit_thread(db, tid, "canonical")
        write_files(out, out_dir / hashlib.sha256(tid.encode()).hexdigest()[:12])
    db2 = open_db(tmp_path / "again.db")
    assert ingest_paths(db2, [out_dir], NEVER_IDLE).failed == 0
    prices = load_prices()
    totals = [stats(d, "provider", prices)["total"] for d in (db, db2)]
    assert totals[0]["responses"] > 0 and totals[0]["input_tokens"] > 0
    assert totals[1] == totals[0]
    # the same canonical files read into the archive they came from count nothing twice
    ingest_paths(db, [out_dir], NEVER_IDLE)
    assert stats(db, "provider", prices)["total"] == totals[0]


def test_installable_targets_are_the_vendors_with_a_home() -> None:
    assert set(INSTALLABLE) == {a.name for a in VENDORS if a.emits and a.default_roots({}, Path("/"))}
