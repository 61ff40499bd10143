"""What each store idea of issue 37 would save, measured on a copy of an ingested archive.

Each variant is made from ``DB`` with ``VACUUM INTO`` (so free pages do not count) and then
changed in place; the report gives its size against the plain vacuumed copy and the
corpus. Nothing here changes the project's code paths: it measures candidates.

    python scripts/bench_store.py ARCHIVE.db --corpus-bytes N [--work DIR] [--only-chunks]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import time
from pathlib import Path

import zstandard


def size(path: Path) -> int:
    return path.stat().st_size


def copy(src: Path, dst: Path, page_size: int = 4096) -> float:
    """``src`` vacuumed into ``dst``, with ``page_size`` bytes a page; the seconds it took."""
    dst.unlink(missing_ok=True)
    started = time.perf_counter()
    conn = sqlite3.connect(src)
    conn.execute("VACUUM INTO ?", (str(dst),))
    conn.close()
    if page_size != 4096:  # VACUUM INTO keeps the page size: a VACUUM of the copy changes it
        c2 = sqlite3.connect(dst)
        c2.execute("PRAGMA journal_mode = DELETE")
        c2.execute(f"PRAGMA page_size = {page_size}")
        c2.execute("VACUUM")
        c2.close()
    return time.perf_counter() - started


def chunk_codecs(path: Path) -> dict[str, dict]:
    """The raw-line chunks packed again: zstd levels, and a dictionary per provider trained
    on the chunks of half the sources and measured on the other half (sources split by a
    hash of their path with ids taken out, so copies of one file fall in one half)."""
    conn = sqlite3.connect(path)
    d = zstandard.ZstdDecompressor()
    dicts = {i: zstandard.ZstdCompressionDict(bytes(b)) for i, b in conn.execute("SELECT id, data FROM source_dicts")} \
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'source_dicts'").fetchone() else {}
    ids = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9]{13}_[0-9a-z]{5,6}")
    halves: dict[str, tuple[list, list]] = {}
    raws = []
    for provider, fpath, codec, data in conn.execute(
        "SELECT s.provider, s.first_path, k.codec, k.data FROM source_chunks k JOIN sources s ON s.id = k.source_id ORDER BY k.id"
    ):
        if codec == 3:
            raw = zstandard.ZstdDecompressor(dict_data=dicts[zstandard.get_frame_parameters(data[:18]).dict_id]).decompress(data)
        else:
            raw = d.decompress(data) if codec == 2 else bytes(data)
        raws.append((raw, len(data)))
        half = hashlib.sha1(ids.sub("", fpath or "").encode()).digest()[0] & 1
        halves.setdefault(provider, ([], []))[half].append((raw, len(data)))
    out: dict[str, dict] = {"stored": {"bytes": sum(n for _r, n in raws)}}
    for level in (1, 3, 6, 9):
        z = zstandard.ZstdCompressor(level=level)
        started = time.perf_counter()
        out[f"zstd level {level}"] = {"bytes": sum(len(z.compress(r)) for r, _n in raws),
                                      "seconds": round(time.perf_counter() - started, 2)}
    plain = trained = 0
    z3 = zstandard.ZstdCompressor(level=3)
    for train, test in halves.values():
        samples, total = [], 0
        for raw, _n in train:
            samples.append(raw[: 32 << 10])
            total += len(samples[-1])
            if total >= 1 << 20:
                break
        try:
            zd = zstandard.ZstdCompressor(level=3, dict_data=zstandard.train_dictionary(64 << 10, samples))
        except zstandard.ZstdError:
            zd = z3
        plain += sum(len(z3.compress(r)) for r, _n in test)
        trained += sum(min(len(zd.compress(r)), len(z3.compress(r))) for r, _n in test)
    out["dictionary per provider, held-out half"] = {"plain": plain, "with dictionary": trained,
                                                     "saved": round(1 - trained / max(plain, 1), 3)}
    return out


def rebuild_fts(path: Path, options: str, split: bool = False) -> float:
    """The index made again with ``options``; ``split``: tool results in an index of their own."""
    conn = sqlite3.connect(path, isolation_level=None)
    started = time.perf_counter()
    conn.execute("BEGIN")
    for t in ("blocks_ad", "blocks_ai", "blocks_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {t}")
    conn.execute("DROP TABLE blocks_fts")
    conn.execute(f"CREATE VIRTUAL TABLE blocks_fts USING fts5(text, content='blocks', content_rowid='id'{options})")
    if split:
        conn.execute(f"CREATE VIRTUAL TABLE tool_fts USING fts5(text, content='blocks', content_rowid='id'{options})")
        conn.execute("INSERT INTO blocks_fts(rowid, text) SELECT id, text FROM blocks WHERE type <> 'tool_result'")
        conn.execute("INSERT INTO tool_fts(rowid, text) SELECT id, text FROM blocks WHERE type = 'tool_result'")
    else:
        conn.execute("INSERT INTO blocks_fts(rowid, text) SELECT id, text FROM blocks")
    conn.execute("COMMIT")
    took = time.perf_counter() - started
    conn.execute("VACUUM")
    conn.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("db", type=Path)
    ap.add_argument("--corpus-bytes", type=int, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-store"))
    ap.add_argument("--only-chunks", action="store_true", help="only the raw-line chunks' codecs")
    args = ap.parse_args()
    if args.only_chunks:
        print(json.dumps(chunk_codecs(args.db), indent=1))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    base = args.work / "base.db"
    copy(args.db, base)
    b = size(base)
    out["as ingested"] = {"bytes": size(args.db)}
    out["vacuumed"] = {"bytes": b}

    conn = sqlite3.connect(base)
    shares = conn.execute(
        "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
    ).fetchall()
    out["shares"] = {n: s for n, s in shares}
    # text kept twice: what compressing large block texts, or not storing them, would save
    zc = zstandard.ZstdCompressor(level=3)
    for threshold in (1024, 4096):
        raw = packed = 0
        for (text,) in conn.execute(
            "SELECT text FROM blocks WHERE type = 'tool_result' AND length(text) >= ?", (threshold,)
        ):
            data = text.encode()
            raw += len(data)
            packed += len(zc.compress(data))
        out[f"tool_result text >= {threshold} chars zstd-3"] = {"saved": raw - packed, "raw": raw}
    t = conn.execute("SELECT sum(length(CAST(text AS BLOB))) FROM blocks WHERE type = 'tool_result'").fetchone()[0]
    out["tool_result text not stored (derived from the raw line)"] = {"saved": t or 0}
    s = conn.execute("SELECT sum(length(extra)) FROM blocks WHERE type = 'reasoning'").fetchone()[0]
    out["reasoning extra (signatures) not stored"] = {"saved": s or 0}
    conn.close()

    for page in (8192, 16384):
        p = args.work / f"page{page}.db"
        took = copy(args.db, p, page)
        out[f"page_size {page}"] = {"bytes": size(p), "seconds": round(took, 2)}
        p.unlink()
    for name, opts, split in (
        ("fts detail=full rebuilt once", "", False),
        ("fts detail=column", ", detail=column", False),
        ("fts detail=none", ", detail=none", False),
        ("fts split: tool results apart (detail=full)", "", True),
        ("fts split, columnsize=0", ", columnsize=0", True),
    ):
        p = args.work / "fts.db"
        copy(base, p)
        took = rebuild_fts(p, opts, split)
        out[name] = {"bytes": size(p), "build_seconds": round(took, 2)}
        p.unlink()
    p = args.work / "opt.db"
    copy(base, p)
    conn = sqlite3.connect(p, isolation_level=None)
    started = time.perf_counter()
    conn.execute("INSERT INTO blocks_fts(blocks_fts) VALUES ('optimize')")
    took = time.perf_counter() - started
    conn.execute("VACUUM")
    conn.close()
    out["fts optimize after ingest"] = {"bytes": size(p), "seconds": round(took, 2)}
    p.unlink()
    out["raw-line chunks"] = chunk_codecs(base)
    base.unlink()

    cb = args.corpus_bytes
    for k, v in out.items():
        if k in ("shares", "raw-line chunks"):
            continue
        if "bytes" in v:
            v["ratio"] = round(v["bytes"] / cb, 3)
            v["vs_vacuumed"] = round(v["bytes"] / b - 1, 4)
        else:
            v["ratio_if_applied"] = round((b - v["saved"]) / cb, 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
