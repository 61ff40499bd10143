"""The SQL views (m002): usage in four disjoint buckets, thread summaries, tool calls paired."""

from __future__ import annotations

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from tests.vendor_home import build_home, vendor_env

AGTRACE = "019b04ae-b1c6-7c72-a134-a4c2de66058c"  # Codex 0.66 fixture
CC_RECORDED = "7767af10-96b1-4f0a-b48d-8e085110fdc1"  # Claude Code 2.1.197 bash + resume


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    build_home(home)
    db = open_db(home / "a.db")
    ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9))
    return db


def test_codex_cached_input_is_not_counted_twice(db):
    # Codex reports input 26740 of which 22912 were cached, output 408 (128 of it reasoning):
    # the buckets are 26740 - 22912 = 3828 fresh input, 22912 cache reads, 408 output; the
    # adapter keeps Codex's own figure beside them.
    row = db.execute(
        "SELECT sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), "
        "sum(reasoning_tokens), sum(json_extract(vendor_usage, '$.vendor.input_tokens')) "
        "FROM usage_responses WHERE thread_id = ?", (AGTRACE,)
    ).fetchone()  # fmt: skip
    assert row == (3828, 22912, 0, 408, 128, 26740)
    tokens = db.execute("SELECT tokens FROM thread_summary WHERE id = ?", (AGTRACE,)).fetchone()[0]
    assert tokens == 3828 + 22912 + 408


def test_claude_cache_tokens_are_separate_from_input(db):
    # Claude's input_tokens exclude the cache: 330 input, 30000 cache reads, 150 cache writes, 90 output,
    # one row per API response although each response is split over several lines.
    row = db.execute(
        "SELECT sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens) "
        "FROM usage_responses WHERE thread_id = ?", (CC_RECORDED,)
    ).fetchone()  # fmt: skip
    assert row == (330, 30000, 150, 90)
    assert db.execute("SELECT tokens FROM thread_summary WHERE id = ?", (CC_RECORDED,)).fetchone()[0] == 30570
    daily = db.execute("SELECT sum(input_tokens) FROM usage_daily WHERE provider = 'claude-code'").fetchone()[0]
    by_model = db.execute("SELECT sum(input_tokens) FROM usage_by_model WHERE provider = 'claude-code'").fetchone()[0]
    assert daily == by_model


def test_thread_summary_counts(db):
    row = db.execute(
        "SELECT messages, user_turns, tool_calls, children FROM thread_summary WHERE id = ?", (CC_RECORDED,)
    ).fetchone()
    assert row[0] > 0 and row[1] == 2 and row[2] >= 1 and row[3] == 0
    parents = db.execute("SELECT count(*) FROM thread_summary WHERE children > 0").fetchone()[0]
    assert parents >= 2


def test_every_tool_call_with_a_result_is_paired_in_its_thread(db):
    unpaired = db.execute(
        "SELECT count(*) FROM tool_calls c WHERE c.result_block_id IS NULL AND EXISTS ("
        "SELECT 1 FROM blocks r JOIN messages m ON m.id = r.message_id WHERE r.type = 'tool_result' "
        "AND r.call_id = c.call_id AND m.thread_id = c.thread_id)"
    ).fetchone()[0]
    assert unpaired == 0
    assert db.execute("SELECT count(*) FROM tool_calls WHERE result_block_id IS NOT NULL").fetchone()[0] > 50
