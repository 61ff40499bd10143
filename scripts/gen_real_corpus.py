#!/usr/bin/env python3
"""A corpus of replicated real session files, for benchmarks (issue 24).

The real files are the test fixtures laid out as each vendor lays them out
(tests/vendor_home.py: Claude Code, Codex, clm, and the sessions recorded from Gemini CLI,
Qwen Code, pi, Copilot CLI, Cline CLI). Copy ``k`` of each file has every UUID in its bytes and
its path replaced by another UUID derived from (UUID, k), the same length, and so has every id
of Cline CLI's shape (``<epoch ms>_<5 or 6 characters>``: its session folders, transcripts and
manifests are named by it, and it is the thread id), so each copy is a session of its own (its own source, thread and message ids: nothing is deduplicated
across copies) and every line still parses exactly as the original did. Copies are added
until the corpus reaches ``--size``. OpenCode's database is left out (one database per
home: its sessions are not files to copy).

    python scripts/gen_real_corpus.py /tmp/corpus-real-300m --size 300MB
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from vendor_home import build_home  # noqa: E402

FIXED_NAMES = ("logs.json",)
# a folder named by the first 8 characters of its session's UUID, its files' names fixed
# (Mistral Vibe 2.x: logs/session/session_<YYYYMMDD_HHMMSS>_<id8>/messages.jsonl + meta.json)
SHORT_ID_FOLDER = re.compile(r"^(session_[0-9]{8}_[0-9]{6}_)([0-9a-f]{8})$")
UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Cline CLI 3.0.65's session and agent ids: 1796185298768_whbno, agent_1796185304894_0tbq3g
MS_ID = re.compile(rb"(?<![0-9A-Za-z])[0-9]{13}_[0-9a-z]{5,6}(?![0-9A-Za-z])")
_B36 = b"0123456789abcdefghijklmnopqrstuvwxyz"


def _variant(u: bytes, k: int) -> bytes:
    h = hashlib.sha256(u.lower() + b"/%d" % k).hexdigest().encode()
    out, i = bytearray(), 0
    for c in u:  # same shape: dashes where they were, hex elsewhere, case kept
        if c == 0x2D:
            out.append(c)
        else:
            d = h[i]
            out.append(d - 32 if 0x41 <= c <= 0x46 and d >= 0x61 else d)
            i += 1
    return bytes(out)


def _ms_id_variant(u: bytes, k: int) -> bytes:
    # the epoch milliseconds kept (they are a time), the characters after them replaced
    ms, _, tail = u.partition(b"_")
    h = int.from_bytes(hashlib.sha256(u + b"/%d" % k).digest()[:8], "big")
    return ms + b"_" + bytes(_B36[(h >> (6 * i)) % 36] for i in range(len(tail)))


def replicate(data: bytes, k: int) -> bytes:
    if k == 0:
        return data
    return MS_ID.sub(lambda m: _ms_id_variant(m.group(0), k), UUID.sub(lambda m: _variant(m.group(0), k), data))


def _short_folder(part: str, short: dict[str, bytes], k: int) -> str:
    m = SHORT_ID_FOLDER.match(part)
    if not k or m is None or m.group(2) not in short:
        return part
    return m.group(1) + _variant(short[m.group(2)], k)[:8].decode().lower()


def parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--size", default="300MB")
    args = ap.parse_args()
    target = parse_size(args.size)
    if args.out_dir.exists():
        raise SystemExit(f"{args.out_dir} exists")
    with tempfile.TemporaryDirectory() as d:
        base = Path(d) / "home"
        build_home(base)
        files = sorted(p for p in base.rglob("*") if p.is_file() and "opencode" not in p.parts)
        originals = [(p.relative_to(base), p.read_bytes()) for p in files]
    # short id -> the UUID it is the start of, so that copy k's folder is named by copy k's UUID
    uuids = {u.lower().decode(): u for _r, data in originals for u in UUID.findall(data)}
    short = {u[:8]: full for u, full in uuids.items()}
    total, k = 0, 0
    while total < target:
        for rel, data in originals:
            rel = Path(*(_short_folder(part, short, k) for part in rel.parts))
            path = args.out_dir / replicate(str(rel).encode(), k).decode()
            if k and path.exists() and path.name in FIXED_NAMES:
                # a name the vendor fixes (Gemini CLI's and Qwen Code's prompt log): copy k in a
                # project folder of its own beside the original's
                path = path.parent.with_name(f"{path.parent.name}-r{k}") / path.name
            elif k and path.exists():  # a name without a UUID: copy k beside it, named so that
                # the vendor's own pattern (rollout-*.jsonl, session-*.json, agent-*.jsonl) still finds it
                stem, dot, ext = path.name.partition(".")
                path = path.with_name(f"{stem}-r{k}{dot}{ext}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(replicate(data, k))
            total += len(data)
        k += 1
    print(f"wrote {total / 1e6:.1f} MB: {k} copies of {len(originals)} real files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
