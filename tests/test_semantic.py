"""Search by meaning (issue 40): the packaged model, chunks, the incremental index, forget,
and the modes of search on the CLI, the MCP tools and the web page."""

from __future__ import annotations

import sys

import asyncio
import shutil
import socket
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive import semantic, semantic_search
from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths

FIX = Path(__file__).parent / "fixtures"
HELPER = FIX / "recorded" / "claude-code-2.1.332" / "agent"  # "[agent] Ask a helper to count." (a subagent)
MIXED = [FIX / "claude-code" / "recorded", FIX / "codex" / "recorded", FIX / "pi"]


def _chunk_rows(db) -> list[tuple]:
    return sorted(db.conn.execute(
        "SELECT c.message_id, b.position, c.start, c.length, s.vectors, c.row FROM semantic_chunks c "
        "JOIN blocks b ON b.id = c.block_id JOIN semantic_segments s ON s.id = c.segment").fetchall())  # fmt: skip


def _vectors(db) -> dict[tuple, bytes]:
    """(message, block position, start) -> the chunk's float16 vector bytes."""
    dim = db.conn.execute("SELECT dim FROM semantic_state").fetchone()[0]
    return {(m, p, s): v[r * dim * 2:(r + 1) * dim * 2] for m, p, s, _n, v, r in _chunk_rows(db)}


def _eligible(db) -> int:
    return db.conn.execute(
        "SELECT count(*) FROM blocks b JOIN messages m ON m.id = b.message_id WHERE b.type IN ('text', 'reasoning') "
        "AND m.role IN ('user', 'assistant') AND m.injected = 0 AND coalesce(b.text, '') != ''").fetchone()[0]  # fmt: skip


def test_chunks_cover_the_text_at_whitespace_and_are_capped() -> None:
    text = ("word " * 700).strip()
    parts = semantic.chunks(text, size=1000)
    assert [s for s, _n in parts][0] == 0 and all(n <= 1000 for _s, n in parts)
    assert "".join(text[s:s + n] for s, n in parts) == text  # nothing lost between chunks
    assert all(text[s + n - 1] == " " for s, n in parts[:-1])  # cut after a space, not inside a word
    assert semantic.chunks("   \n ") == []
    assert len(semantic.chunks("x" * 100_000)) == semantic.MAX_CHUNKS


def test_the_model_is_packaged_and_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*a, **k):
        raise AssertionError("the model tried the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(semantic, "_MODEL", None)
    m = semantic.model()
    assert m.id.startswith("wordllama-") and m.id.endswith("/l2_supercat_128") and m.dim == semantic.DIMS == 128
    v = m.embed(["count the files with a helper", "a helper counted the files", "the weather in Lisbon", ""])
    assert abs(float((v[0] ** 2).sum()) - 1) < 1e-4 and not v[3].any()  # unit length; no tokens: zero
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_embed_is_the_mean_of_the_token_vectors() -> None:
    """The pooled matrix product equals WordLlama's definition, token by token, across steps."""
    import numpy as np

    m = semantic.model()
    ref = semantic.reference_tokenizer()
    texts = ["count the files with a helper", "", "   ", "a helper counted the files " * 40] * (semantic.EMBED_STEP // 2 + 3)
    got = m.embed(texts)
    for i, t in enumerate(texts[:8]):
        ids = ref.encode(t, add_special_tokens=False).ids
        want = m.table[ids].mean(axis=0) if ids else np.zeros(m.dim, np.float32)
        norm = float(np.linalg.norm(want))
        assert np.allclose(got[i], want / norm if norm else want, atol=1e-6)
    assert np.allclose(got[:4], got[-4:], atol=1e-6)  # the same text in another step: the same vector


def test_token_ids_from_cached_pieces_are_the_tokenizers() -> None:
    """``_ids`` cuts the normalised text before each run of spaces and tokenizes each piece
    once: exact only because no token holds a space after another character."""
    m = semantic.Model()  # its own cache
    ref = semantic.reference_tokenizer()
    assert not [t for t in ref.get_vocab() if "\u2581" in t.lstrip("\u2581")]
    texts = ["count the files with a helper", "", " ", "   leading and trailing   ", "tab\tand\nnew  lines",
             "def f(x):\n    return  x  +  1\n\n        indented", "naïve café 東京 🙂 \u2581 ▁▁x", "a" * 3000,
             (FIX.parent.parent / "archive" / "semantic.py").read_text()[:5000]]  # fmt: skip
    want = [ref.encode(t, add_special_tokens=False).ids for t in texts]
    for _ in range(2):  # tokenized, then from the cache
        assert m._ids(texts) == want
    assert m._ids(texts[::-1]) == want[::-1] and m._ids([]) == [] and m._ids(["", ""]) == [[], []]
    monkey = semantic.PIECE_CACHE
    try:  # a full cache starts again
        semantic.PIECE_CACHE = 5
        assert m._ids(texts) == want and len(m.pieces) > 5
    finally:
        semantic.PIECE_CACHE = monkey


def test_update_is_incremental_and_equals_a_whole_run(tmp_path: Path) -> None:
    a = open_db(tmp_path / "a.db")
    ingest_paths(a, MIXED[:1])
    first = semantic.update(a)
    assert first.blocks == _eligible(a) > 0 and semantic.pending(a.conn) == 0
    assert semantic.update(a).blocks == 0  # nothing new: nothing embedded
    ingest_paths(a, MIXED[1:])
    second = semantic.update(a)
    assert second.blocks == _eligible(a) - first.blocks > 0
    b = open_db(tmp_path / "b.db")
    ingest_paths(b, MIXED)
    semantic.update(b, batch=7)  # small batches: many transactions, same index
    assert _vectors(a) == _vectors(b)
    assert len(_vectors(a)) == a.conn.execute("SELECT count(*) FROM semantic_chunks").fetchone()[0]


def test_a_run_with_nothing_to_embed_loads_no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A nightly ingest that wrote no new text neither imports the model's packages nor loads
    the model (about 0.3 s of every such run): ``update`` settles and moves its watermark
    without it, and loads it once there is something to embed."""
    import subprocess

    db = open_db(tmp_path / "a.db")
    ingest_paths(db, MIXED[:1])
    first = semantic.update(db)
    loaded = []

    def counted() -> semantic.Model:
        loaded.append(1)
        return real()

    real = semantic.model
    monkeypatch.setattr(semantic, "model", counted)
    again = semantic.update(db)
    assert again.blocks == 0 and again.model == first.model and not loaded
    ingest_paths(db, MIXED[1:])
    assert semantic.update(db).blocks > 0 and loaded == [1]
    probe = ("import sys; from archive import semantic; assert semantic.available(); "
             "assert 'wordllama' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=Path(__file__).parent.parent)


def test_rebuild_and_a_model_change_leave_no_stale_or_double_chunks(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, MIXED)
    semantic.update(db)
    before = _vectors(db)
    tables = ("semantic_state", "semantic_segments", "semantic_chunks", "semantic_recheck")
    dump = {t: db.conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    r = CliRunner().invoke(cli, ["rebuild", "--db", str(tmp_path / "a.db")], catch_exceptions=False)
    assert r.exit_code == 0
    # the blocks were written again as they were: the index is as it was, nothing pending
    assert {t: db.conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables} == dump
    assert semantic.pending(db.conn) == 0 and semantic.update(db).blocks == 0
    assert not db.conn.execute(
        "SELECT 1 FROM semantic_chunks c LEFT JOIN blocks b ON b.id = c.block_id WHERE b.id IS NULL").fetchone()
    db.conn.execute("UPDATE semantic_state SET model = 'some-older-model'")
    u = semantic.update(db)
    assert u.rebuilt and u.blocks == _eligible(db) and _vectors(db) == before


def test_a_block_written_again_with_another_text_loses_its_vectors_at_once(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [HELPER])
    semantic.update(db)
    bid, text = db.conn.execute("SELECT b.id, b.text FROM blocks b JOIN semantic_chunks c ON c.block_id = b.id "
                                "ORDER BY b.id LIMIT 1").fetchone()  # fmt: skip
    rows = db.conn.execute("SELECT segment, row FROM semantic_chunks WHERE block_id = ?", (bid,)).fetchall()
    db.conn.execute("UPDATE blocks SET text = ? WHERE id = ?", ("something else entirely", bid))
    db.conn.execute("UPDATE blocks SET text = text WHERE id = (SELECT max(block_id) FROM semantic_chunks)")
    assert semantic.pending(db.conn) == 2
    db.conn.execute("BEGIN")
    assert semantic.settle(db.conn) == len(rows) > 0  # the unchanged one keeps its vectors
    db.conn.execute("COMMIT")
    dim = db.conn.execute("SELECT dim FROM semantic_state").fetchone()[0]
    assert dim == semantic.DIMS
    for seg, r in rows:  # the dropped rows hold nothing
        v = db.conn.execute("SELECT vectors FROM semantic_segments WHERE id = ?", (seg,)).fetchone()
        assert v is None or v[0][r * dim * 2:(r + 1) * dim * 2] == bytes(dim * 2)
    assert semantic.pending(db.conn) == 1
    u = semantic.update(db)
    assert u.blocks == 1 and semantic.pending(db.conn) == 0
    assert db.conn.execute("SELECT length FROM semantic_chunks WHERE block_id = ?", (bid,)).fetchall() == [(23,)]
    assert text != "something else entirely"


def test_forget_command_drops_the_secrets_vectors(tmp_path: Path) -> None:
    """The real ``forget``: the message holding the secret is embedded again from its masked text."""
    from archive.forget import forget

    src = tmp_path / "home" / "s.jsonl"
    src.parent.mkdir()
    shutil.copy(HELPER / "projects" / "-tmp-sesh-record-claude-code-agent-work" /
                "0a3fcd61-2420-44c7-aca3-1786e3592e0b.jsonl", src)  # fmt: skip
    key = "AKIAIOSFODNN7EXAMPLQ"
    data = src.read_bytes().replace(b"Ask a helper to count.", f"Ask a helper to count. aws_key = {key}".encode())
    src.write_bytes(data)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [src])
    semantic.update(db)
    finding = db.conn.execute("SELECT id FROM secret_findings LIMIT 1").fetchone()
    assert finding, "the scan should find the key"
    before = semantic_search.semantic_search(db, f"aws_key {key}", limit=1)[0]
    assert key in before["snippet"]
    forget(db, finding=finding[0], vacuum=False)
    semantic.update(db)
    hits = semantic_search.semantic_search(db, f"aws_key {key}", limit=50)
    assert hits and not any(key in h["snippet"] for h in hits)
    assert not db.conn.execute(
        "SELECT 1 FROM semantic_chunks c LEFT JOIN blocks b ON b.id = c.block_id WHERE b.id IS NULL").fetchone()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sem") / "archive.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(path), str(FIX / "recorded"), str(FIX / "codex")],
                           catch_exceptions=False)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "semantic:" in r.stderr and "blocks embedded" in r.stderr  # the step the run starts
    return path


def test_search_modes_on_the_cli(archive: Path) -> None:
    q = "delegate the counting to a subagent"
    run = CliRunner().invoke
    lexical = run(cli, ["search", "--db", str(archive), q, "--json"], catch_exceptions=False)
    assert lexical.exit_code == 0 and orjson.loads(lexical.stdout) == []  # no word in common
    for mode in ("--semantic", "--hybrid"):
        r = run(cli, ["search", "--db", str(archive), q, mode, "--json", "--limit", "3"], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        hits = orjson.loads(r.stdout)
        assert hits and any("count" in h["snippet"].lower() for h in hits), (mode, hits)
        assert {"thread_id", "message_id", "snippet", "score", "role"} <= set(hits[0])
    r = run(cli, ["search", "--db", str(archive), q, "--semantic", "--provider", "codex", "--json"])
    assert all(h["provider"] == "codex" for h in orjson.loads(r.stdout))
    text = run(cli, ["search", "--db", str(archive), q, "--semantic", "--limit", "2"]).output
    assert "count" in text.lower()


def test_status_shows_model_vectors_and_pending(archive: Path) -> None:
    r = CliRunner().invoke(cli, ["status", "--db", str(archive)], catch_exceptions=False)
    line = next(x for x in r.stdout.splitlines() if x.startswith("semantic:"))
    assert "wordllama-" in line and "0 blocks pending" in line
    info = orjson.loads(CliRunner().invoke(cli, ["status", "--db", str(archive), "--json"]).stdout)["semantic"]
    assert info["vectors"] > 0 and info["pending"] == 0 and info["model"].startswith("wordllama-")


def test_without_the_extra_semantic_says_how_to_get_it(archive: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    def missing() -> None:
        raise semantic.ModelUnavailable(semantic.INSTALL_HINT)

    monkeypatch.setattr(semantic, "available", lambda: False)
    monkeypatch.setattr(semantic, "model", missing)
    monkeypatch.setitem(sys.modules, "numpy", None)  # the extra brings numpy: without it, import fails
    for mode in ("--semantic", "--hybrid"):
        r = CliRunner().invoke(cli, ["search", "--db", str(archive), "hello", mode])
        assert r.exit_code == 1 and "pip install 'sesh-archive[semantic]'" in r.output, r.output
    assert len([x for x in r.output.splitlines() if x.strip()]) == 1
    assert CliRunner().invoke(cli, ["search", "--db", str(archive), "hello"]).exit_code == 0  # lexical needs no model
    fresh = tmp_path / "fresh.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(fresh), str(HELPER)], catch_exceptions=False)
    assert r.exit_code == 0 and "semantic:" not in r.stderr
    status = CliRunner().invoke(cli, ["status", "--db", str(fresh)]).stdout
    assert "semantic: not installed" in status


def test_mcp_search_tool_modes(archive: Path) -> None:
    from archive import agent_tools
    from archive.db import open_readonly

    db = open_readonly(archive)
    out = agent_tools.search_sessions(db, "delegate the counting to a subagent", mode="semantic")
    assert out["mode"] == "semantic" and out["results"]
    assert any("count" in s["text"].lower() for g in out["results"] for s in g["snippets"])
    assert agent_tools.search_sessions(db, "delegate the counting to a subagent", mode="hybrid")["results"]
    assert not agent_tools.search_sessions(db, "delegate the counting to a subagent", mode="lexical")["results"]
    with pytest.raises(Exception, match="lexical, semantic, hybrid"):
        agent_tools.search_sessions(db, "x", mode="vector")


def test_web_search_page_offers_meaning(archive: Path) -> None:
    from archive.serve import make_datasette

    ds = make_datasette(archive)

    async def get(url: str) -> str:
        r = await ds.client.get(url)
        assert r.status_code == 200, r.text
        return r.text

    page = asyncio.run(get("/-/sesh/search?q=delegate+the+counting+to+a+subagent&mode=semantic"))
    assert "count" in page.lower() and 'value="semantic" selected' in page
    assert 'name="mode"' in asyncio.run(get("/-/sesh/search"))
    bad = asyncio.run(ds.client.get("/-/sesh/search?q=x&mode=vector"))
    assert bad.status_code == 400


def test_hybrid_reads_the_snippets_of_the_hits_it_keeps_only(archive: Path) -> None:
    """Both legs rank without snippets; the fused hits kept are those ``search`` and
    ``semantic_search`` give, field for field (the lexical leg's 300 snippets were most of a
    hybrid query on 1 GB: seconds for a common word)."""
    from archive.db import open_readonly
    from archive.queries import search

    db = open_readonly(archive)
    q = "files"  # 77 messages hold it
    lexical = search(db, q, limit=300)
    first: dict = {}
    for h in lexical:
        first.setdefault(h["message_id"], h)
    assert len(first) > 4
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    hits = semantic_search.hybrid_search(db, q, limit=5)
    db.conn.set_trace_callback(None)
    snippets = [s for s in seen if "snippet(blocks_fts" in s]
    assert snippets and all("blocks_fts.rowid =" in s for s in snippets) and len(snippets) <= 5, snippets
    meaning = {h["message_id"]: h for h in semantic_search.semantic_search(db, q, limit=semantic_search.FUSE_DEPTH)}
    assert len(hits) == 5 and any(h["message_id"] in first for h in hits)
    for h in hits:
        want = dict(first.get(h["message_id"]) or meaning[h["message_id"]], score=h["score"])
        assert h == want and list(h) == list(want)


def test_semantic_reads_the_rows_of_its_hits_only(archive: Path) -> None:
    """Without filters, the rows' message ids (cached with the matrix) pick each message's best
    chunk: the SQL reads ``limit`` chunks, not ``4 * limit + 50``; with filters, all of them.
    The hits are the same as the filtered path's (a filter that keeps everything)."""
    from archive.db import open_readonly
    from archive.queries import Filters

    db = open_readonly(archive)
    q = "delegate the counting to a subagent"
    seen: list[tuple] = []

    class Recording:  # the connection, noting what each statement is given
        def __init__(self, conn) -> None:
            self.conn = conn

        def execute(self, sql: str, params: tuple = ()):
            seen.append((sql, params))
            return self.conn.execute(sql, params)

        def __getattr__(self, name: str):
            return getattr(self.conn, name)

    real = db.conn
    db.conn = Recording(real)
    try:
        hits = semantic_search.semantic_search(db, q, limit=3)
    finally:
        db.conn = real
    reads = [orjson.loads(p[0]) for s, p in seen if "JOIN semantic_chunks c" in s]
    assert len(reads) == 1 and len(reads[0]) == 3, reads  # three chunks asked for
    # every chunk is of an embedded kind: a filter that keeps everything (a date filter drops
    # the hits of messages without a time, such as Kimi's subagent's)
    every = semantic_search.semantic_search(db, q, Filters(), limit=3, kinds=semantic.EMBED_TYPES)
    assert len(hits) == 3 and hits == every


def test_hybrid_fuses_ranks() -> None:
    assert semantic_search.lexical_any("count the files, with a helper!") == '"count" OR "the" OR "files" OR "with" OR "helper"'
    assert semantic_search.lexical_any("a") == ""


def test_the_query_set_measures_what_the_docs_say(tmp_path: Path) -> None:
    """scripts/semantic_eval.py on tests/fixtures: the numbers in README and docs/semantic.md."""
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
    import semantic_eval

    queries = json.loads(semantic_eval.QUERIES.read_text())["queries"]
    assert len(queries) >= 40 and len({q["query"] for q in queries}) == len(queries)
    db = semantic_eval.fixture_archive(tmp_path)
    roots = set(semantic_eval._roots(db).values())
    assert all(q["sessions"] and set(q["sessions"]) <= roots for q in queries)  # every answer is archived
    res = semantic_eval.evaluate(db, queries)
    # as published, give or take a tie a float16 rounding may break
    for mode, (recall, mrr) in {"semantic": (0.612, 0.586), "hybrid": (0.612, 0.586), "lexical": (0.0, 0.0),
                                "lexical-any": (0.478, 0.405), "hybrid-any": (0.559, 0.523)}.items():
        assert abs(res[mode]["recall@5"] - recall) <= 0.02 and abs(res[mode]["mrr"] - mrr) <= 0.02, (mode, res[mode])
