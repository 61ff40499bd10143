"""Search by meaning (issue 40): chunk vectors of prompts, answers and reasoning, searched by brute force.

Invariants:

* **No network, ever.** The model is WordLlama's ``l2_supercat`` (256 dimensions, of which the
  first ``DIMS`` are used: its embeddings are Matryoshka-trained, and 128 halve the bytes a query
  reads for the same quality on the query set, docs/semantic.md), whose
  weights and tokenizer ship inside the ``wordllama`` wheel (the ``[semantic]`` extra). It is
  loaded from the package's own files only: ``WordLlama.load()`` is never called, because
  wordllama 0.4.0.post1 looks for its tokenizer under ``tokenizer/`` while the wheel ships
  ``tokenizers/``, and then downloads it. Without the package, ``ModelUnavailable`` says in
  one line how to get it; lexical search never needs it.
* **What is embedded.** ``text`` and ``reasoning`` blocks of user and assistant messages that
  the vendor did not inject; tool calls and output are not (docs/semantic.md: they did not help
  on the query set). A block is cut into chunks of at most ``CHUNK_CHARS`` characters at
  whitespace, at most ``MAX_CHUNKS`` per block (a pasted log is not embedded whole); each
  chunk keeps its block, message and character range, so a hit points to its message.
* **The model's own vectors, faster.** A text's vector is the mean of the token vectors its
  tokenizer gives; ``Model._tokens`` reaches the same ids by tokenizing each distinct
  space-delimited piece once per process, and the mean is a matrix product on one BLAS
  thread (tests compare both with the plain definition).
* **Incremental, crash-safe.** ``update`` embeds the blocks above the watermark
  (``semantic_state.embedded_upto``) in batches; a batch's vectors, chunk rows and watermark
  commit in one transaction. A block written again at or below the watermark (a rebuild, a
  message the vendor rewrote, ``forget``) is queued by a trigger (migration m100) and
  ``settle`` compares it with the digest its chunks were embedded from: the same text keeps
  its vectors (``rebuild`` leaves the index as it was), another text loses them at once and is
  embedded again; chunks whose block is gone are dropped. No stale vector, no chunk twice.
* **Dropped means gone.** A dropped chunk's row in its segment is overwritten with zeros
  (it never ranks, and ``forget``'s vacuum leaves no copy of what it encoded).
* **Rebuilt when the model changes.** ``semantic_state.model`` names the model (package
  version, weights file, dimensions used); another name or dimension (``DIMS`` changed is
  another model) drops every vector and starts again.
* **Read-only search.** ``search`` only reads (a read-only connection works); the matrix of
  all vectors and each row's message id (read in one transaction) are cached per process,
  keyed on the database file and ``semantic_state.version``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from itertools import chain
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .db import ArchiveError



DIMS = 128  # WordLlama's first 128 of 256 dimensions: the Matryoshka-trained 128-dimension model
CHUNK_CHARS = 1000
MAX_CHUNKS = 16
EMBED_STEP = 256  # texts per matrix product (token counts: 256 x the distinct tokens they use)
PIECE_CACHE = 200_000  # distinct pieces' token ids kept per process (~30 MB at most)
_PIECE = re.compile("\u2581*[^\u2581]+|\u2581+")  # a normalised text cut before each run of spaces
BATCH_BLOCKS = 500  # blocks per transaction: its texts, their pieces and vectors are the step's memory (2,000 held 30 MB more)
SEGMENT_ROWS = 4096  # vectors per segment blob (4096 x 128 x 2 bytes = 1 MiB)
EMBED_TYPES = ("text", "reasoning")
EMBED_ROLES = ("user", "assistant")
INSTALL_HINT = "search by meaning needs the semantic extra: pip install 'sesh-archive[semantic]'"


class ModelUnavailable(ArchiveError):
    """The embedding model's package is not installed."""


# ---------------------------------------------------------------- the model


class Model:
    """WordLlama's packaged model: token embeddings averaged, unit length (float32)."""

    def __init__(self) -> None:
        try:
            import numpy as np
            import wordllama
            from safetensors import safe_open
            import tokenizers  # noqa: F401  (reference_tokenizer's)
        except ImportError:
            raise ModelUnavailable(INSTALL_HINT) from None
        root = Path(wordllama.__file__).parent
        weights = root / "weights" / "l2_supercat_256.safetensors"
        tok = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
        if not weights.exists() or not tok.exists():
            raise ModelUnavailable(f"the wordllama package has no packaged model at {root}; {INSTALL_HINT}")
        with safe_open(str(weights), framework="np") as f:
            # the first DIMS columns, as WordLlama.load(dim=...) truncates: the mean of the
            # truncated token vectors is the truncated mean, normalised here as that model's.
            # Only those columns are read (the whole float16 tensor cost 31 MB of peak RSS).
            self.table = np.ascontiguousarray(f.get_slice("embedding.weight")[:, :DIMS], dtype=np.float32)
        # the tokenizer without its normaliser: ``_tokens`` gives it normalised pieces. One
        # copy only (a second, with the normaliser, held 27 MB for the tests' reference ids:
        # ``reference_tokenizer`` loads that one when asked)
        self.raw = reference_tokenizer(tok)
        self.raw.normalizer = None
        self.pieces: dict[str, int] = {}  # piece -> its tokens: _tok[_off[i]:_off[i + 1]]
        self._off = np.zeros(1, dtype=np.int64)
        self._tok = np.zeros(0, dtype=np.int64)
        try:  # the controller once: it finds the loaded BLAS libraries (~5 ms a time)
            from threadpoolctl import ThreadpoolController

            self._blas: Any = ThreadpoolController()
        except ImportError:  # an install without it: BLAS as it starts
            self._blas = None
        self.dim = int(self.table.shape[1])
        self.id = f"wordllama-{_version('wordllama')}/l2_supercat_{self.dim}"
        self.np = np

    def _tokens(self, texts: list[str]) -> tuple[Any, Any]:
        """Every text's token ids, one after the other, and how many each has: exactly as the
        tokenizer gives them, tokenizing each distinct piece once per process (``PIECE_CACHE``).

        The tokenizer's normaliser makes every space a ``\u2581`` and prepends one; its BPE
        never joins a piece ending in another character to the ``\u2581`` run after it (no
        token of the vocabulary has a ``\u2581`` after another character: tests check it), so
        cutting the normalised text before each run of them changes no token. Prose repeats its
        words: 8,346 chunks of the 1 GB corpus held 665,990 pieces, 14,965 distinct. The
        texts' tokens are then gathered from the pieces' in numpy, not a list per token."""
        np = self.np
        split = [_PIECE.findall("\u2581" + t.replace(" ", "\u2581")) if t else [] for t in texts]
        per_text = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        pieces = list(chain.from_iterable(split))
        cache = self.pieces
        new = [p for p in dict.fromkeys(pieces) if p not in cache]
        if len(cache) + len(new) > PIECE_CACHE:
            cache.clear()
            self._off, self._tok = self._off[:1], self._tok[:0]
            new = list(dict.fromkeys(pieces))
        if new:
            encode = getattr(self.raw, "encode_batch_fast", self.raw.encode_batch)  # tokenizers >= 0.20: no offsets
            ids = [e.ids for e in encode(new, add_special_tokens=False)]
            lens = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
            flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lens.sum()))
            cache.update(zip(new, range(len(cache), len(cache) + len(new))))
            self._tok = np.concatenate((self._tok, flat))
            self._off = np.concatenate((self._off, self._off[-1] + np.cumsum(lens)))
        which = np.fromiter(map(cache.__getitem__, pieces), dtype=np.int64, count=len(pieces))
        first, n = self._off[which], self._off[which + 1] - self._off[which]
        ends = np.cumsum(n)
        at = np.repeat(first - (ends - n), n) + np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
        tokens = self._tok[at]
        upto = np.concatenate(([0], ends))[np.cumsum(per_text)]  # tokens up to each text's end
        return tokens, np.diff(np.concatenate(([0], upto)))

    def _ids(self, texts: list[str]) -> list[list[int]]:
        tokens, lens = self._tokens(texts)
        ends = self.np.cumsum(lens)
        return [tokens[e - n:e].tolist() for e, n in zip(ends, lens)]

    def embed(self, texts: list[str]) -> Any:
        """``len(texts) x dim`` float32 rows of unit length (zero for a text without tokens).

        Mean of the token vectors, as WordLlama's own ``embed`` computes it, without padding
        every batch to its longest text. The sums are one matrix product per ``EMBED_STEP``
        texts: their token counts (texts x the distinct tokens they use) times those tokens'
        rows of the table. Gathering a row per token and summing with ``np.add.reduceat``
        gave the same vectors (within 1e-7) about ten times slower: it moved 1 KiB per token.
        The product runs on one BLAS thread: OpenBLAS's threads on a busy machine made it
        4-30x slower (docs/semantic.md, "Cost")."""
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        tokens, all_lens = self._tokens(texts)
        np.clip(tokens, 0, self.table.shape[0] - 1, out=tokens)
        bounds = np.concatenate(([0], np.cumsum(all_lens)))
        with self._blas.limit(limits=1, user_api="blas") if self._blas else nullcontext():
            for i in range(0, len(texts), EMBED_STEP):
                j = min(i + EMBED_STEP, len(texts))
                lens = all_lens[i:j]
                flat = tokens[bounds[i]:bounds[j]]
                if not len(flat):
                    continue
                vocab, col = np.unique(flat, return_inverse=True)
                rows = np.repeat(np.arange(j - i, dtype=np.int64), lens)
                counts = np.bincount(rows * len(vocab) + col, minlength=(j - i) * len(vocab))
                sums = counts.reshape(j - i, len(vocab)).astype(np.float32) @ self.table[vocab]
                has = lens > 0
                out[i:j][has] = sums[has] / lens[has, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def reference_tokenizer(path: Path | None = None) -> Any:
    """WordLlama's tokenizer as it ships (normaliser included, no padding or truncation): the
    ids ``Model`` must reproduce piece by piece."""
    from tokenizers import Tokenizer

    if path is None:
        import wordllama

        path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    t = Tokenizer.from_file(str(path))
    t.no_padding()
    t.no_truncation()
    return t


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


_MODEL: Model | None = None
_MODEL_LOCK = threading.Lock()


def model() -> Model:
    """The model, loaded once per process (the tokenizer's JSON and the weights: 0.25-0.4 s,
    imports included, on the 2026-12 host; 1-4 s on slower ones)."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            _MODEL = Model()
        return _MODEL


def available() -> bool:
    """Whether the model's packages are installed, found without importing them (wordllama
    brings numpy: about 0.16 s that a run with nothing to embed never needs)."""
    from importlib.util import find_spec

    return find_spec("tokenizers") is not None and find_spec("wordllama") is not None


# ---------------------------------------------------------------- chunks


def chunks(text: str, size: int = CHUNK_CHARS, most: int = MAX_CHUNKS) -> list[tuple[int, int]]:
    """``(start, length)`` character ranges covering ``text`` in pieces of at most ``size``,
    cut at the last whitespace of a piece when there is one; blank pieces left out."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n and len(out) < most:
        end = min(i + size, n)
        if end < n:
            cut = max(text.rfind(" ", i + size // 2, end), text.rfind("\n", i + size // 2, end))
            if cut > i:
                end = cut + 1
        if text[i:end].strip():
            out.append((i, end - i))
        i = end
    return out


# ---------------------------------------------------------------- writing


@dataclass
class Updated:
    model: str = ""
    blocks: int = 0
    chunks: int = 0
    dropped: int = 0
    rebuilt: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _drop(conn: sqlite3.Connection, pairs: Iterable[tuple[int, int]]) -> int:
    """Delete these (segment, row) chunks and zero their vectors (caller's transaction)."""
    by_segment: dict[int, list[int]] = {}
    for seg, row in pairs:
        by_segment.setdefault(seg, []).append(row)
    dim = conn.execute("SELECT dim FROM semantic_state").fetchone()[0] or 0
    n = 0
    for seg, rows in by_segment.items():
        got = conn.execute("SELECT vectors FROM semantic_segments WHERE id = ?", (seg,)).fetchone()
        if got is not None:
            data = bytearray(got[0])
            for r in rows:
                data[r * dim * 2:(r + 1) * dim * 2] = bytes(dim * 2)
            conn.execute("UPDATE semantic_segments SET vectors = ? WHERE id = ?", (bytes(data), seg))
        conn.executemany("DELETE FROM semantic_chunks WHERE segment = ? AND row = ?", [(seg, r) for r in rows])
        n += len(rows)
        if not conn.execute("SELECT 1 FROM semantic_chunks WHERE segment = ? LIMIT 1", (seg,)).fetchone():
            conn.execute("DELETE FROM semantic_segments WHERE id = ?", (seg,))
    if n:
        conn.execute("UPDATE semantic_state SET version = version + 1")
    return n


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_KIND = f"""b.type IN ({", ".join(repr(t) for t in EMBED_TYPES)})
      AND m.role IN ({", ".join(repr(r) for r in EMBED_ROLES)}) AND m.injected = 0
      AND b.text IS NOT NULL AND b.text != ''"""
_ELIGIBLE = f"""
    FROM blocks b JOIN messages m ON m.id = b.message_id
    WHERE b.id > ? AND b.id <= ? AND {_KIND}"""
# A batch walks the blocks in id order and stops at its LIMIT: ``+b.type`` keeps SQLite off
# blocks_type, whose range it read whole and sorted for every batch (all the text above the
# watermark, each time: two thirds of the 1 GB corpus's embedding step, docs/semantic.md)
_IN_ORDER = _ELIGIBLE.replace("b.type IN", "+b.type IN")


def settle(conn: sqlite3.Connection) -> int:
    """Drop the chunks whose block is gone, and check the blocks written again at or below the
    watermark: one whose message and text are as embedded is settled, any other loses its
    chunks at once (their vectors encoded the old text) and waits for ``update``. Needs no
    model; ``rebuild`` calls it (a rebuild that writes the same blocks leaves the index as it
    was). Returns the chunks dropped. Caller's transaction."""
    stale = conn.execute(
        "SELECT c.segment, c.row FROM semantic_chunks c LEFT JOIN blocks b ON b.id = c.block_id "
        "WHERE b.id IS NULL OR b.message_id != c.message_id"
    ).fetchall()
    n = _drop(conn, stale) if stale else 0
    settled: list[tuple[int]] = []
    for (bid,) in conn.execute("SELECT block_id FROM semantic_recheck ORDER BY block_id").fetchall():
        row = conn.execute(f"SELECT b.text FROM blocks b JOIN messages m ON m.id = b.message_id WHERE b.id = ? AND {_KIND}",
                           (bid,)).fetchone()  # fmt: skip
        had = conn.execute("SELECT segment, row, digest FROM semantic_chunks WHERE block_id = ?", (bid,)).fetchall()
        if row is not None and had and {d for _s, _r, d in had} == {digest(row[0])}:
            settled.append((bid,))  # the same text: its vectors hold
        elif row is not None and not had and not chunks(row[0]):
            settled.append((bid,))  # nothing to embed then or now
        else:
            n += _drop(conn, [(sg, r) for sg, r, _d in had]) if had else 0
            if row is None:
                settled.append((bid,))  # no longer embedded at all
    conn.executemany("DELETE FROM semantic_recheck WHERE block_id = ?", settled)
    return n


def pending(conn: sqlite3.Connection) -> int:
    """Blocks waiting to be embedded: written since the last update, or again since (changed)."""
    upto = conn.execute("SELECT embedded_upto FROM semantic_state").fetchone()[0]
    top = conn.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0]
    again = conn.execute("SELECT count(*) FROM semantic_recheck").fetchone()[0]
    return conn.execute(f"SELECT count(*) {_ELIGIBLE}", (upto, top)).fetchone()[0] + again


def _embed_rows(conn: sqlite3.Connection, m: Model, rows: list[tuple[int, str, str]]) -> int:
    """Embed these (block id, message id, text) rows into a new segment (caller's transaction)."""
    meta: list[tuple[int, str, int, int, str]] = []
    texts: list[str] = []
    for bid, mid, text in rows:
        d = digest(text)
        for start, length in chunks(text):
            meta.append((bid, mid, start, length, d))
            texts.append(text[start:start + length])
    if not texts:
        return 0
    vecs = m.embed(texts).astype("<f2")
    for s in range(0, len(meta), SEGMENT_ROWS):
        part = vecs[s:s + SEGMENT_ROWS]
        seg = conn.execute("INSERT INTO semantic_segments (rows, vectors) VALUES (?, ?)",
                           (len(part), part.tobytes())).lastrowid  # fmt: skip
        conn.executemany(
            "INSERT INTO semantic_chunks (segment, row, block_id, message_id, start, length, digest) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(seg, r, *meta[s + r]) for r in range(len(part))],
        )
    conn.execute("UPDATE semantic_state SET version = version + 1")
    return len(texts)


def update(db: Database, *, progress: Callable[[int, int], None] | None = None,
           batch: int = BATCH_BLOCKS) -> Updated:  # fmt: skip
    """Embed every block written since the last update, and those written again with another
    text (module docstring); ``progress(done, total)`` after each batch. Raises
    ``ModelUnavailable`` without the model's package."""
    import time

    t0 = time.perf_counter()
    conn = db.conn
    stored = conn.execute("SELECT model FROM semantic_state").fetchone()[0]
    # the model (``model()``) only for vectors of another model (rebuilt) or blocks to embed:
    # a nightly run that wrote no text never needs it
    m = None if stored is not None and stored == installed_model_id() else model()
    out = Updated(model=m.id if m is not None else stored)
    conn.execute("BEGIN IMMEDIATE")
    try:
        current, dim = conn.execute("SELECT model, dim FROM semantic_state").fetchone()
        if m is not None and (current != m.id or dim != m.dim):
            out.rebuilt = current is not None
            for table in ("semantic_chunks", "semantic_segments", "semantic_recheck"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("UPDATE semantic_state SET model = ?, dim = ?, embedded_upto = 0, version = version + 1",
                         (m.id, m.dim))  # fmt: skip
        out.dropped += settle(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    top = conn.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0]
    total = pending(conn)
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            again = conn.execute(
                # CROSS JOIN: from the queue (most often empty), not every text block through blocks_type
                f"SELECT r.block_id, m.id, b.text FROM semantic_recheck r CROSS JOIN blocks b ON b.id = r.block_id "
                f"CROSS JOIN messages m ON m.id = b.message_id WHERE {_KIND} ORDER BY r.block_id LIMIT ?", (batch,)
            ).fetchall()  # fmt: skip
            if again:  # settle dropped their old chunks
                conn.execute("DELETE FROM semantic_recheck WHERE block_id IN (SELECT value FROM json_each(?))",
                             (json.dumps([r[0] for r in again]),))  # fmt: skip
                rows = again
            else:
                conn.execute("DELETE FROM semantic_recheck")  # left: blocks no longer embedded
                upto = conn.execute("SELECT embedded_upto FROM semantic_state").fetchone()[0]
                rows = conn.execute(f"SELECT b.id, b.message_id, b.text {_IN_ORDER} ORDER BY b.id LIMIT ?",
                                    (upto, top, batch)).fetchall()  # fmt: skip
            if not rows:
                conn.execute("UPDATE semantic_state SET embedded_upto = max(embedded_upto, ?)", (top,))
                conn.execute("COMMIT")
                break
            if m is None:
                m = model()
            n = _embed_rows(conn, m, rows)
            if not again:
                last = rows[-1][0] if len(rows) == batch else top
                conn.execute("UPDATE semantic_state SET embedded_upto = ?", (last,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        out.blocks += len(rows)
        out.chunks += n
        if progress:
            progress(out.blocks, total)
    out.seconds = time.perf_counter() - t0
    return out


def installed_model_id() -> str | None:
    """The id ``Model`` would have, without loading it (None: the package is missing)."""
    return f"wordllama-{_version('wordllama')}/l2_supercat_{DIMS}" if available() else None


def state(conn: sqlite3.Connection) -> dict[str, Any]:
    """``status``: the model the vectors are from, how many, how many blocks wait (every
    block when the installed model is another one: the next ingest rebuilds)."""
    model_id, dim = conn.execute("SELECT model, dim FROM semantic_state").fetchone()
    vectors = conn.execute("SELECT count(*) FROM semantic_chunks").fetchone()[0]
    installed = installed_model_id()
    stale = installed is not None and model_id is not None and installed != model_id
    if stale:
        top = conn.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0]
        waiting = conn.execute(f"SELECT count(*) {_ELIGIBLE}", (0, top)).fetchone()[0]  # all: rebuilt
    else:
        waiting = pending(conn)
    return {"available": installed is not None, "installed_model": installed, "model": model_id, "dim": dim,
            "vectors": vectors, "pending": waiting, "model_changed": stale}

