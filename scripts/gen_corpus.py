#!/usr/bin/env python3
"""Deterministic synthetic "home folder" of AI coding agent session logs, for benchmarks.

    python scripts/gen_corpus.py OUT_DIR --size 1GB [--seed N] [--big-file-mb 600]
    python scripts/gen_corpus.py OUT_DIR --append-mb 1 --append-files 10

Guarantees:

* **Deterministic.** The output is a pure function of ``(--seed, --size, --big-file-mb)``:
  two runs write byte-identical files (and identical file mtimes). Nothing reads the clock
  (the elapsed time printed on stderr is the only exception and never reaches a file), and
  every random choice comes from ``random.Random`` instances seeded with strings derived
  from the seed (string seeds are hashed with SHA-512, so ``PYTHONHASHSEED`` plays no role).
  Set iteration is never used to order anything.
* **Valid, vendor-shaped lines.** Every line of every ``.jsonl`` / ``.jsonl.bak`` is one
  complete JSON object followed by ``\\n``. Shapes follow the vendors' formats (docs/vendors.md, tests/fixtures): Claude Code
  2.1.x (``~/.claude/projects``, subagents, compaction), Codex rollouts G2 (0.66) and G3
  (0.171) including ``archived_sessions/``, clm logs (``~/.local/state/clm``, with
  ``.jsonl.bak`` companions for compacted sessions), Gemini CLI 0.61 operation logs
  (``~/.gemini/tmp/<project>/chats``: upserts, rewrites with tool calls, ``$set``
  patches, resume snapshots), Qwen Code 0.24 records (``~/.qwen/projects/<slug>/chats``,
  ``ui_telemetry`` usage, helper calls), pi 0.73.1 sessions (``~/.pi/agent/sessions``,
  with branches in place) and Copilot CLI 1.0.102 ``events.jsonl`` + ``workspace.yaml``
  (``~/.copilot/session-state``), Cline CLI 3.0.65 transcripts and manifests
  (``~/.cline/data/sessions``, JSON documents), and OpenCode 1.18.33's SQLite database
  (``~/.local/share/opencode/opencode.db``: events and the rows they update; its lines are
  not counted), and Hermes Agent 0.19.0's ``~/.hermes/state.db`` (sessions, message rows,
  per-model totals; no lines either), OpenClaw 2026.7.1 JSONL files and 2026.9.6's
  ``openclaw-agent.sqlite`` rows (``~/.openclaw/agents/main``), Mistral Vibe 3.0.3's unified
  journal and 2.x's ``messages.jsonl`` (``~/.vibe/logs/session``), Factory Droid 0.225.2
  (``~/.factory/sessions``) and Kimi CLI 1.51.0 (``~/.kimi/sessions``: context, wire, state).
  Files of the vendors after clm get no markers and are not append targets. Shares of the
  size (``SHARES``): Claude Code 36 %, Codex 21 %, clm 11 %, Gemini CLI 6 %, Qwen Code 4 %,
  pi 5 %, Copilot 4 %, OpenCode 3 %, Cline 2 %, Hermes 2 %, OpenClaw 2 %, Vibe 2 %, Droid 1 %,
  Kimi 1 %.
* **Approximately the requested size.** Sessions are generated until each vendor's byte
  budget is reached, so the total overshoots the request by at most about one session.
  When ``--size >= 1GB`` (or ``--big-file-mb`` is given) one Claude Code session file of at
  least ``--big-file-mb`` (default 600) MiB is written, streamed line by line.
* **Known search hits.** Text is drawn from a fixed vocabulary that does not contain the
  marker words (``zanzibar``, ``xylophone``, ``quokka`` and the phrase ``velvet thunder``).
  Markers are inserted only into text that appears exactly once in the corpus (Claude trunk
  assistant text, Codex G2 shell output, Codex G3 reasoning summaries, clm assistant text of
  uncompacted sessions), so their raw occurrence counts in ``corpus-manifest.json`` equal
  both ``grep -o`` counts and the number of canonical text blocks that contain them.
* **Append mode** adds about ``--append-mb`` MiB of complete, valid, chain-consistent lines
  to ``--append-files`` existing session files, chosen and filled deterministically from the
  seed and the files' current sizes, and updates the manifest's byte and line totals (Claude
  Code, Codex and clm files only).

Units: MB/GB are binary (MiB/GiB). Timestamps lie in the 365 days before 2026-11-01T00:00Z.
"""

from __future__ import annotations

import argparse
import base64
from array import array
import datetime as _dt
import os
import re
import sqlite3
import struct
import sys
import time
import zlib
from pathlib import Path
from random import Random
from typing import Any, Iterator

import orjson

MiB = 1 << 20
GiB = 1 << 30
# Fixed reference date: every timestamp lies before it, so "last 30 days" stats are stable.
END_MS = int(_dt.datetime(2026, 11, 1, tzinfo=_dt.timezone.utc).timestamp()) * 1000
DAY_MS = 86_400_000
MANIFEST = "corpus-manifest.json"
_NL = orjson.OPT_APPEND_NEWLINE

# Marker words and their probability per eligible text block. The first eligible blocks of
# the corpus get one of each, so even a 2 MB corpus has every marker at least once.
MARKERS: tuple[tuple[str, float], ...] = (
    ("zanzibar", 1 / 300),
    ("velvet thunder", 1 / 1500),
    ("xylophone", 1 / 6000),
    ("quokka", 1 / 60000),
)

# ---------------------------------------------------------------------------------------
# Fixed vocabulary. Plain words are mixed with a few non-ASCII ones so UTF-8 handling and
# the FTS tokenizer get exercised; compounds are derived with a fixed seed so the
# vocabulary never depends on --seed.
_BASE_WORDS = """
the a of to and in is it that for on with as this be are by not or from at we can if
but you your will should would could when then than which there their they them have has
had was were been do does did done make makes made use used using get gets set sets add
adds added remove removed update updated check checks checked run runs running ran test
tests testing build builds built fix fixes fixed error errors warning warnings fail fails
failed failure pass passes passed success file files path paths directory folder module
modules package packages import imports export function functions method methods class
classes object objects value values type types string strings number numbers list lists
array arrays map maps dict key keys index indexes table tables column columns row rows
query queries database schema migration migrations record records field fields parser
parse parsing token tokens line lines offset offsets byte bytes buffer buffers stream
streams read reads write writes writer reader open close closed handle handler handlers
request requests response responses server client service services api endpoint route
routes router config configuration settings option options flag flags default defaults
environment variable variables shell command commands output input argument arguments
return returns result results exception exceptions raise raises retry timeout cache
cached caching memory disk network socket thread threads process processes worker workers
queue queues task tasks job jobs event events message messages session sessions user
users agent agents model models prompt prompts context window summary summaries tool tools
call calls callback plugin plugins hook hooks lint linter format formatter style docs
documentation comment comments readme changelog version versions release branch branches
commit commits merge rebase diff patch patches review reviewer pull issue issues bug bugs
feature features refactor cleanup rename move copy delete create insert select join where
order group limit count sum average metric metrics log logs logging trace debug info
level levels status state states snapshot snapshots archive archives backup restore
compress decompress encode decode json yaml toml csv sqlite postgres redis docker
container image images layout render template templates component components view views
page pages widget widgets button form input validation validator schema auth login logout
token secret permission permissions role roles admin account accounts billing invoice
payment order orders cart product products price prices search index ranking score
vector embedding cluster node nodes graph edge edges tree trees root leaf parent child
children sibling depth width height size sizes total partial complete incomplete ready
pending running stopped started finished after before during between inside outside
first last next previous current new old same different other another each every all
some none any many few more most less least very quite really just only also still
already again always never often sometimes maybe probably likely simple complex fast slow
small large big tiny huge short long early late quick careful safe unsafe stable flaky
looks like seems works broken correct wrong better worse good bad fine okay sure right
let me now first look at the see how why what which where who whose whom here there
naïve café résumé Größe straße façade déjà über niño señor 日本語 测试 données κόσμος
"""


def _build_vocab() -> list[str]:
    base = _BASE_WORDS.split()
    seen: dict[str, None] = dict.fromkeys(base)
    rng = Random("sesh-archive-corpus-vocab-v1")
    plain = [w for w in base if w.isascii()]
    while len(seen) < 3000:
        a, b = rng.choice(plain), rng.choice(plain)
        style = rng.random()
        if style < 0.5:
            w = f"{a}_{b}"
        elif style < 0.8:
            w = a + b.capitalize()
        else:
            w = f"{a}{rng.randint(1, 99)}"
        seen.setdefault(w, None)
    vocab = list(seen)
    for marker, _ in MARKERS:
        for part in marker.split():
            bad = [w for w in vocab if part in w.lower()]
            assert not bad, f"vocabulary word {bad[0]!r} contains marker {part!r}"
    return vocab


VOCAB = _build_vocab()

PROJECTS = (
    "/home/dev/projects/webshop",
    "/home/dev/projects/sesh-archive",
    "/home/dev/projects/ml-pipeline",
    "/home/dev/projects/infra-terraform",
    "/home/dev/projects/mobile_app",
    "/home/dev/work/payments-api",
    "/home/dev/work/data warehouse",
    "/home/dev/.config/nvim",
    "/home/dev/src/rust-parser",
    "/home/dev/src/docs-site",
    "/srv/repos/monorepo/services/auth",
    "/home/dev/hello-app",
)
BRANCHES = ("main", "main", "main", "master", "feature/search", "fix/flaky-tests", "", "HEAD", "release/2.4")
CLAUDE_VERSIONS = ("2.1.38", "2.1.39", "2.1.81", "2.1.120", "2.1.197")
CLAUDE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-8")
CODEX_MODELS = ("gpt-5.1-codex-max", "gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.1-codex-mini")
CLM_MODELS = (("claude-sonnet-5", "anthropic"), ("gpt-5.1", "openai"), ("qwen3-coder-30b", "ollama"))
GEMINI_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview")
QWEN_MODELS = ("qwen3-coder-plus", "qwen3-coder-flash")
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
COMPACT_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention "
    "to the user's explicit requests and your previous actions.\nThis summary should be thorough in "
    "capturing technical details, code patterns, and architectural decisions that would be essential "
    "for continuing development work without losing context."
)
CODEX_BASE_INSTRUCTIONS = (
    "You are a coding agent running in the Codex CLI, a terminal-based coding assistant. "
    "You are expected to be precise, safe, and helpful.\n\n"
    + "\n".join(f"- {w} guideline: keep changes minimal and explain them." for w in VOCAB[40:100])
)
CLM_SYSTEM_PROMPT = "You are clm, a terminal coding agent. Use shell_exec to run commands.\n" + " ".join(VOCAB[100:180])


# ---------------------------------------------------------------------------------------
# Small deterministic helpers.

_DAY_CACHE: dict[int, str] = {}
_EPOCH_ORD = _dt.date(1970, 1, 1).toordinal()


def iso_ms(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, computed arithmetically (no clock, and fast)."""
    d, r = divmod(ms, DAY_MS)
    day = _DAY_CACHE.get(d)
    if day is None:
        day = _DAY_CACHE[d] = _dt.date.fromordinal(_EPOCH_ORD + d).isoformat()
    h, r = divmod(r, 3_600_000)
    m, r = divmod(r, 60_000)
    s, f = divmod(r, 1000)
    return f"{day}T{h:02d}:{m:02d}:{s:02d}.{f:03d}Z"


def uuid4(rng: Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def uuid7(rng: Random, ms: int) -> str:
    """UUIDv7 layout (time-ordered), the id style of Codex since late 2025."""
    h = "%012x" % ms + "%020x" % rng.getrandbits(80)
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def hexs(rng: Random, n: int) -> str:
    return "%0*x" % (n, rng.getrandbits(4 * n))


def alnum(rng: Random, n: int) -> str:
    return "".join(rng.choices(ALNUM, k=n))


def slugify(cwd: str) -> str:
    # Claude Code maps every non-alphanumeric character to "-", one for one.
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def fnv1a64(text: str) -> str:
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def lognormal_bytes(rng: Random, median: int, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(median * rng.lognormvariate(0.0, sigma))))


def _png(rng: Random, w: int, h: int) -> bytes:
    """A valid RGB PNG. The zlib stream is written by hand with stored blocks, so the bytes
    do not depend on the zlib build (zlib-ng and zlib compress differently)."""
    rows = []
    base = rng.randbytes(w * 3)
    for y in range(h):
        # Mostly-repeated rows with some noise: looks like a screenshot, not pure static.
        rows.append(b"\x00" + (rng.randbytes(w * 3) if y % 7 == 0 else base))
    raw = b"".join(rows)
    blocks = []
    for i in range(0, len(raw), 65535):
        chunk = raw[i : i + 65535]
        final = 1 if i + 65535 >= len(raw) else 0
        blocks.append(struct.pack("<BHH", final, len(chunk), len(chunk) ^ 0xFFFF) + chunk)
    data = b"\x78\x01" + b"".join(blocks) + struct.pack(">I", zlib.adler32(raw))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def _scrub(text: str) -> str:
    """Break any accidental marker spelled by random base64 (case-insensitive, like FTS)."""
    for marker, _ in MARKERS:
        for part in marker.split():
            text = re.sub(re.escape(part), lambda m: m.group(0)[:2] + "9" + m.group(0)[3:], text, flags=re.I)
    return text


# ---------------------------------------------------------------------------------------
# Output files and statistics.


class Stats:
    """Per-vendor totals, mergeable so a worker process can hand its share back."""

    def __init__(self) -> None:
        self.v: dict[str, dict[str, int]] = {}
        self.markers: dict[str, dict[str, Any]] = {
            m: {"occurrences": 0, "by_vendor": {}, "files": []} for m, _ in MARKERS
        }
        self.largest: tuple[int, str] = (0, "")
        self.sessions_30d: dict[str, int] = {}
        self.first_ms = END_MS
        self.last_ms = 0
        self.models: dict[str, None] = {}
        self.projects: dict[str, None] = {}

    def vendor(self, name: str) -> dict[str, int]:
        return self.v.setdefault(name, {"files": 0, "bytes": 0, "lines": 0, "sessions": 0})

    def bump(self, vendor: str, key: str, n: int = 1) -> None:
        d = self.vendor(vendor)
        d[key] = d.get(key, 0) + n

    def session(self, vendor: str, start_ms: int, model: str, project: str | None) -> None:
        self.bump(vendor, "sessions")
        if start_ms >= END_MS - 30 * DAY_MS:
            self.sessions_30d[vendor] = self.sessions_30d.get(vendor, 0) + 1
        self.first_ms = min(self.first_ms, start_ms)
        self.models.setdefault(model, None)
        if project:
            self.projects.setdefault(project, None)

    def merge(self, other: "Stats") -> None:
        for vendor, d in other.v.items():
            for k, n in d.items():
                self.bump(vendor, k, n)
        for m, d in other.markers.items():
            mine = self.markers[m]
            mine["occurrences"] += d["occurrences"]
            for vendor, n in d["by_vendor"].items():
                mine["by_vendor"][vendor] = mine["by_vendor"].get(vendor, 0) + n
            for f in d["files"]:
                if f not in mine["files"]:
                    mine["files"].append(f)
        self.largest = max(self.largest, other.largest)
        for vendor, n in other.sessions_30d.items():
            self.sessions_30d[vendor] = self.sessions_30d.get(vendor, 0) + n
        self.first_ms = min(self.first_ms, other.first_ms)
        self.last_ms = max(self.last_ms, other.last_ms)
        self.models.update(other.models)
        self.projects.update(other.projects)


class Out:
    """One output file: buffered, streamed, counted. Never holds a file in memory."""

    __slots__ = ("root", "path", "f", "bytes", "lines", "vendor", "stats", "last_ms")

    def __init__(self, stats: Stats, root: Path, path: Path, vendor: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.root, self.path, self.vendor, self.stats = root, path, vendor, stats
        self.f = open(path, "wb", buffering=MiB)
        self.bytes = 0
        self.lines = 0
        self.last_ms = 0

    @property
    def rel(self) -> str:
        return self.path.relative_to(self.root).as_posix()

    def w(self, obj: Any) -> bytes:
        b = orjson.dumps(obj, option=_NL)
        self.f.write(b)
        self.bytes += len(b)
        self.lines += 1
        return b

    def raw(self, b: bytes) -> None:
        self.f.write(b)
        self.bytes += len(b)
        self.lines += b.count(b"\n")

    def close(self, mtime_ms: int) -> None:
        self.f.close()
        # A deterministic mtime (the last timestamp written) keeps "newest first" listings and
        # mtime-based retention meaningful in benchmarks.
        os.utime(self.path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        d = self.stats.vendor(self.vendor)
        d["files"] += 1
        d["bytes"] += self.bytes
        d["lines"] += self.lines
        self.stats.largest = max(self.stats.largest, (self.bytes, self.rel))
        self.stats.last_ms = max(self.stats.last_ms, mtime_ms)


def write_json_file(stats: Stats, root: Path, path: Path, vendor: str, obj: Any, mtime_ms: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    b = orjson.dumps(obj)
    path.write_bytes(b)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    stats.bump(vendor, "files")
    stats.bump(vendor, "bytes", len(b))
    stats.bump(vendor, "json_files")


# ---------------------------------------------------------------------------------------
# Text pools: built once per run from the seed, then sliced, which is what makes this fast.


def _draw(rng: Random, population: list[str], k: int) -> list[str]:
    """k uniform draws from population, from one block of random bytes (fast, seeded)."""
    n = len(population)
    return [population[i % n] for i in array("I", rng.randbytes(4 * k))]


class Pools:
    def __init__(self, seed: int, small: bool) -> None:
        rng = Random(f"{seed}:pools")
        n_prose = 256 * 1024 if small else 3 * MiB
        n_code = 384 * 1024 if small else 4 * MiB
        # Zipf-like frequencies via an expanded population (rank r appears ~K/(r+3) times):
        # unweighted choices over it are several times faster than cum_weights bisection.
        reps = [max(1, round(60_000 / (i + 3))) for i in range(len(VOCAB))]
        # Plain words rank above derived compounds, so text reads like text ("the", "file"
        # frequent, "token_lines" rare); the seed only permutes within each group.
        n_base = len(dict.fromkeys(_BASE_WORDS.split()))
        base, compounds = VOCAB[:n_base], VOCAB[n_base:]
        rng.shuffle(base)
        rng.shuffle(compounds)
        order = base + compounds
        population = [w for w, k in zip(order, reps) for _ in range(k)]
        self.prose = self._prose(rng, population, n_prose)
        self.code = self._code(rng, population, n_code)
        self.b64 = _scrub(base64.b64encode(rng.randbytes(600 * 1024)).decode())
        self.b64url = self.b64.replace("+", "-").replace("/", "_")
        self.images = [
            base64.b64encode(_png(rng, w, h)).decode() for w, h in ((48, 32), (120, 80), (240, 160), (400, 260), (520, 330))
        ]

    @staticmethod
    def _prose(rng: Random, population: list[str], n: int) -> str:
        words = _draw(rng, population, n // 6)
        parts: list[str] = []
        i = 0
        size = 0
        while size < n and i < len(words):
            k = rng.randint(5, 22)
            s = " ".join(words[i : i + k])
            i += k
            s = s[:1].upper() + s[1:] + rng.choice((". ", ". ", ". ", "? ", ": ", ".\n\n", ". `x` "))
            parts.append(s)
            size += len(s)
        text = "".join(parts)
        while len(text) < n:  # vocabulary ran short: repeat (still deterministic)
            text += text
        return text[:n]

    @staticmethod
    def _code(rng: Random, population: list[str], n: int) -> str:
        words = _draw(rng, population, n // 12)
        ascii_words = [w for w in words if w.isascii() and w.isidentifier()] or ["value"]
        wi = 0
        # Numbers come from one block of random bytes: per-number randint calls dominated.
        ints = array("I", rng.randbytes(4 * (n // 8)))
        ii = 0

        def w() -> str:
            nonlocal wi
            wi = (wi + 1) % len(ascii_words)
            return ascii_words[wi]

        class _R:
            @staticmethod
            def randint(lo: int, hi: int) -> int:
                nonlocal ii
                ii = (ii + 1) % len(ints)
                return lo + ints[ii] % (hi - lo + 1)

            @staticmethod
            def choice(seq: Any) -> Any:
                return seq[_R.randint(0, len(seq) - 1)]

        rng = _R  # type: ignore[assignment]  # templates below draw from the byte block

        templates = (
            lambda: f"    {w()}_{w()} = {w()}({w()}, {w()}={rng.randint(0, 999)})",
            lambda: f"def {w()}_{w()}(self, {w()}: str, {w()}: int = {rng.randint(0, 9)}) -> {w().capitalize()}:",
            lambda: f"        return self.{w()}.{w()}({w()})",
            lambda: f"src/{w()}/{w()}.py:{rng.randint(1, 2000)}:{rng.randint(1, 80)}: E{rng.randint(100, 999)} {w()} {w()} {w()}",
            lambda: f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 1{rng.randint(0, 9)}:{rng.randint(10, 59)}:{rng.randint(10, 59)} INFO [{w()}] {w()} {w()} {w()} took {rng.randint(1, 5000)}ms",
            lambda: f'  File "/home/dev/projects/{w()}/{w()}.py", line {rng.randint(1, 900)}, in {w()}_{w()}',
            lambda: f"tests/test_{w()}.py::test_{w()}_{w()} {rng.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'))}",
            lambda: f"-rw-r--r--  1 dev dev {rng.randint(100, 99999):>6} Oct {rng.randint(1, 31):>2} 1{rng.randint(0, 9)}:{rng.randint(10, 59)} {w()}_{w()}.py",
            lambda: f"    // {w()} {w()} {w()} {w()} {w()}",
            lambda: "",
            lambda: f"+    {w()} = {w()}.{w()}()",
            lambda: f'  "{w()}": "{w()}-{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",',
        )
        lines: list[str] = []
        size = 0
        while size < n:
            s = rng.choice(templates)()
            lines.append(s)
            size += len(s) + 1
        return "\n".join(lines)

    # -- slicing helpers (rng is the caller's, so every session stays independent) --------

    @staticmethod
    def _slice(pool: str, rng: Random, n: int, sep: str) -> str:
        if n >= len(pool) - 2:
            reps = n // len(pool) + 2
            pool = (pool + sep) * reps
        start = rng.randrange(0, len(pool) - n - 1)
        j = pool.find(sep, start, start + 200)
        if j >= 0:
            start = j + 1
        return pool[start : start + n]

    def text(self, rng: Random, lo: int, hi: int) -> str:
        return self._slice(self.prose, rng, rng.randint(lo, hi), " ").strip() or "ok"

    def code_text(self, rng: Random, n: int) -> str:
        return self._slice(self.code, rng, n, "\n")

    def sig(self, rng: Random, lo: int = 200, hi: int = 1400) -> str:
        n = rng.randint(lo, hi) // 4 * 4
        start = rng.randrange(0, len(self.b64) - n) // 4 * 4
        return self.b64[start : start + n]


def output_size(rng: Random, cap: int) -> int:
    """Tool output sizes: mostly small, some medium, rare large, very rare multi-megabyte."""
    r = rng.random()
    if r < 0.0006:
        n = rng.randint(MiB // 2, 3 * MiB)
    elif r < 0.006:
        n = rng.randint(40_000, 300_000)
    elif r < 0.15:
        n = rng.randint(2_000, 20_000)
    else:
        n = rng.randint(20, 2_000)
    return max(20, min(n, cap))


# ---------------------------------------------------------------------------------------
# Markers.


class Marker:
    def __init__(self, seed: int | str, stats: Stats, force_first: bool) -> None:
        self.rng = Random(f"{seed}:markers")
        self.stats = stats
        self.pending = [m for m, _ in MARKERS] if force_first else []

    def __call__(self, text: str, out: Out) -> str:
        r = self.rng.random()
        marker = None
        if self.pending:
            marker = self.pending.pop(0)
        else:
            acc = 0.0
            for m, p in MARKERS:
                acc += p
                if r < acc:
                    marker = m
                    break
        if marker is None:
            return text
        i = text.find(" ", len(text) // 2)
        text = f"{text} {marker}." if i < 0 else f"{text[:i]} {marker}{text[i:]}"
        d = self.stats.markers[marker]
        d["occurrences"] += 1
        d["by_vendor"][out.vendor] = d["by_vendor"].get(out.vendor, 0) + 1
        if not d["files"] or d["files"][-1] != out.rel:
            if out.rel not in d["files"]:
                d["files"].append(out.rel)
        return text


# ---------------------------------------------------------------------------------------
# Claude Code.

_CLAUDE_TOOLS = (
    ("Bash", 30), ("Read", 25), ("Edit", 12), ("Grep", 8), ("Glob", 5), ("Write", 4),
    ("TodoWrite", 4), ("Task", 3), ("WebSearch", 2), ("mcp__github__get_issue", 3), ("WebFetch", 2),
)
_CLAUDE_TOOL_NAMES = [t for t, _ in _CLAUDE_TOOLS]
_CLAUDE_TOOL_CUM: list[int] = []
for _t, _wt in _CLAUDE_TOOLS:
    _CLAUDE_TOOL_CUM.append((_CLAUDE_TOOL_CUM[-1] if _CLAUDE_TOOL_CUM else 0) + _wt)


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


class ClaudeSession:
    """Writes one Claude Code transcript (trunk or subagent) line by line."""

    def __init__(
        self,
        pools: Pools,
        rng: Random,
        out: Out,
        *,
        sid: str,
        cwd: str,
        version: str,
        branch: str,
        model: str,
        t_ms: int,
        slug: str | None,
        session_dir: Path,
        agent_id: str | None = None,
        mark: Marker | None = None,
        allow_sub: bool = True,
        allow_compact: bool = True,
        image_rate: float = 0.0,
        cap: int = 3 * MiB,
    ) -> None:
        self.p, self.rng, self.out = pools, rng, out
        self.sid, self.cwd, self.version, self.model = sid, cwd, version, model
        self.t = t_ms
        self.session_dir = session_dir  # <project>/<sessionId>/ for subagents
        self.agent_id = agent_id
        self.mark = mark
        self.allow_sub, self.allow_compact = allow_sub, allow_compact
        self.image_rate = image_rate
        self.image_next = False  # set by the caller to force an image into the next prompt
        self.cap = cap
        v = _ver(version)
        self.new_order = v >= (2, 1, 79)  # key order changed around 2.1.7x-2.1.8x
        self.new_msg = v >= (2, 1, 150)
        self.mid: dict[str, Any] = {"userType": "external"}
        if self.new_order:
            self.mid["entrypoint"] = "cli"
        self.mid.update(cwd=cwd, sessionId=sid, version=version, gitBranch=branch)
        if agent_id:
            self.mid["agentId"] = agent_id
        if slug:
            self.mid["slug"] = slug
        self.last: str | None = None
        self.ctx = rng.randint(9_000, 22_000)  # context tokens, drives compaction
        self.last_prompt = ""
        self.sub_files: list[Out] = []

    # -- envelope -----------------------------------------------------------------------

    def tick(self, lo: int, hi: int) -> str:
        self.t += self.rng.randint(lo, hi)
        self.out.last_ms = self.t
        return iso_ms(self.t)

    def emit(self, type_: str, body: dict[str, Any], tail: dict[str, Any] | None = None,
             parent: Any = ..., ts: str | None = None, head: dict[str, Any] | None = None) -> str:
        u = uuid4(self.rng)
        d: dict[str, Any] = {"parentUuid": self.last if parent is ... else parent}
        if head:
            d.update(head)
        d["isSidechain"] = self.agent_id is not None
        if ts is None:
            ts = self.tick(40, 2500)
        if self.new_order:
            if type_ == "user":
                d["type"] = type_
                d.update(body)
            else:
                d.update(body)
                d["type"] = type_
            d["uuid"] = u
            d["timestamp"] = ts
            if tail:
                d.update(tail)
            d.update(self.mid)
        else:
            d.update(self.mid)
            d["type"] = type_
            d.update(body)
            d["uuid"] = u
            d["timestamp"] = ts
            if tail:
                d.update(tail)
        self.out.w(d)
        self.last = u
        return u

    def progress(self, event: str, name: str, tool_id: str) -> None:
        body = {"data": {"type": "hook_progress", "hookEvent": event, "hookName": name,
                         "command": f"$HOME/.claude/hooks/{event.lower()}.sh"},
                "parentToolUseID": tool_id, "toolUseID": tool_id}
        self.emit("progress", body)

    # -- user side ----------------------------------------------------------------------

    def prompt(self) -> str:
        rng, p = self.rng, self.p
        text = p.text(rng, 15, 700)
        if rng.random() < 0.05:
            text = f"<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>{text[:80]}</command-args>"
        self.last_prompt = text
        if rng.random() < 0.1 and not self.agent_id:
            ts = self.tick(1000, 60_000)
            self.out.w({"type": "queue-operation", "operation": "enqueue", "timestamp": ts, "sessionId": self.sid, "content": text})
            self.out.w({"type": "queue-operation", "operation": "dequeue", "timestamp": self.tick(1, 3), "sessionId": self.sid})
        content: Any = text
        if self.image_next or (self.image_rate and rng.random() < self.image_rate):
            self.image_next = False
            img = rng.choice(p.images[: max(1, min(len(p.images), self.cap // 150_000 + 1))])
            content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img}},
                       {"type": "text", "text": text}]
        head = {"promptId": uuid4(rng)} if self.new_order and not self.agent_id else None
        if self.new_order:
            tail = {"permissionMode": rng.choice(("default", "acceptEdits", "bypassPermissions"))}
        else:
            tail = {"thinkingMetadata": {"maxThinkingTokens": 31999}, "todos": [], "permissionMode": "default"}
        u = self.emit("user", {"message": {"role": "user", "content": content}}, tail, ts=self.tick(2_000, 400_000), head=head)
        if not self.agent_id:
            files: dict[str, Any] = {}
            for _ in range(rng.randint(0, 3)):
                files[f"src/{rng.choice(VOCAB[:200])}.py"] = {
                    "backupFileName": f"{hexs(rng, 16)}@v{rng.randint(1, 9)}", "version": rng.randint(1, 9), "backupTime": iso_ms(self.t)}
            self.out.w({"type": "file-history-snapshot", "messageId": u,
                        "snapshot": {"messageId": u, "trackedFileBackups": files, "timestamp": iso_ms(self.t)},
                        "isSnapshotUpdate": False})
        self.ctx += len(text) // 4 + 10
        return u

    # -- assistant side -----------------------------------------------------------------

    def assistant(self, final: bool, force: str | None = None) -> list[tuple[str, str, str, dict[str, Any]]]:
        rng, p = self.rng, self.p
        mid = "msg_01" + alnum(rng, 22)
        req = "req_011C" + alnum(rng, 18)
        cc = rng.randint(0, 4000)
        usage: dict[str, Any] = {
            "input_tokens": rng.randint(1, 12), "cache_creation_input_tokens": cc, "cache_read_input_tokens": self.ctx,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cc},
            "output_tokens": rng.choice((1, 3, 8, 13, 29, 472)), "service_tier": "standard", "inference_geo": "not_available",
        }
        if self.new_msg:
            usage.update(server_tool_use={"web_search_requests": 0, "web_fetch_requests": 0}, iterations=[], speed="standard")
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.08:
            blocks.append({"type": "text", "text": "\n\n"})
        if rng.random() < 0.45:
            blocks.append({"type": "thinking", "thinking": p.text(rng, 60, 2500), "signature": "E" + p.sig(rng)})
        if final or rng.random() < 0.7:
            text = p.text(rng, 30, 1800)
            if self.mark is not None:
                text = self.mark(text, self.out)
            blocks.append({"type": "text", "text": text})
        tools: list[tuple[str, str, str, dict[str, Any]]] = []
        if not final:
            n = 1 + (rng.random() < 0.3) + (rng.random() < 0.1)
            for k in range(n):
                name = rng.choices(_CLAUDE_TOOL_NAMES, cum_weights=_CLAUDE_TOOL_CUM)[0]
                if force and k == 0:
                    name = force
                if name == "Task" and not self.allow_sub:
                    name = "Bash"
                tid = "toolu_01" + alnum(rng, 22)
                inp = self.tool_input(name)
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp, "caller": {"type": "direct"}})
        stop = ("end_turn" if final else "tool_use") if self.new_msg else None
        for b in blocks:
            if self.new_msg:
                msg = {"id": mid, "type": "message", "role": "assistant", "model": self.model, "content": [b],
                       "stop_reason": stop, "stop_sequence": None, "usage": usage, "stop_details": None}
            else:
                msg = {"model": self.model, "id": mid, "type": "message", "role": "assistant", "content": [b],
                       "stop_reason": stop, "stop_sequence": None, "usage": usage}
            u = self.emit("assistant", {"message": msg, "requestId": req})
            if b["type"] == "tool_use":
                tools.append((u, b["id"], b["name"], b["input"]))
        self.ctx += usage["output_tokens"] + cc // 4
        return tools

    def tool_input(self, name: str) -> dict[str, Any]:
        rng, p = self.rng, self.p
        path = f"{self.cwd}/src/{rng.choice(VOCAB[:300])}/{rng.choice(VOCAB[:300])}.py"
        if name == "Bash":
            return {"command": rng.choice(("pytest -q", "git status", "ls -la", "make build", "rg TODO", "npm test")) + f" {rng.choice(VOCAB[:200])}",
                    "description": p.text(rng, 10, 60)}
        if name in ("Read", "Write"):
            d: dict[str, Any] = {"file_path": path}
            if name == "Write":
                d["content"] = p.code_text(rng, rng.randint(200, 6000))
            return d
        if name == "Edit":
            return {"file_path": path, "old_string": p.code_text(rng, rng.randint(20, 400)),
                    "new_string": p.code_text(rng, rng.randint(20, 400)), "replace_all": False}
        if name == "Grep":
            return {"pattern": rng.choice(VOCAB[:300]), "path": self.cwd, "output_mode": "files_with_matches"}
        if name == "Glob":
            return {"pattern": f"**/*{rng.choice(('.py', '.ts', '.md', '.rs'))}", "path": self.cwd}
        if name == "TodoWrite":
            return {"todos": [{"content": p.text(rng, 10, 80), "status": rng.choice(("pending", "in_progress", "completed")),
                               "activeForm": p.text(rng, 10, 60)} for _ in range(rng.randint(1, 5))]}
        if name == "Task":
            return {"description": p.text(rng, 10, 40), "prompt": p.text(rng, 80, 1200),
                    "subagent_type": rng.choice(("general-purpose", "Explore", "Plan"))}
        if name == "WebSearch":
            return {"query": p.text(rng, 10, 60)}
        if name == "WebFetch":
            return {"url": f"https://docs.example.org/{rng.choice(VOCAB[:100])}", "prompt": p.text(rng, 20, 120)}
        return {"owner": "acme", "repo": rng.choice(VOCAB[:100]), "issue_number": rng.randint(1, 5000)}

    def tool_result(self, tu_uuid: str, tid: str, name: str, inp: dict[str, Any]) -> None:
        rng, p = self.rng, self.p
        if rng.random() < 0.3:
            self.progress("PreToolUse", f"PreToolUse:{name}", tid)
        is_error = rng.random() < 0.04
        n = output_size(rng, self.cap)
        content: Any
        tur: Any
        extra: dict[str, Any] = {}
        if is_error:
            msg = p.text(rng, 20, 300)
            content, tur = f"<tool_use_error>{msg}</tool_use_error>", f"Error: {msg}"
        elif name == "Bash":
            out = p.code_text(rng, n)
            content = out
            tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
        elif name == "Read":
            if rng.random() < 0.02:
                img = rng.choice(p.images[:3])
                content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img}}]
                tur = {"type": "image", "file": {"base64": img, "type": "image/png", "originalSize": len(img) * 3 // 4}}
            else:
                body = p.code_text(rng, n)
                lines = body.split("\n")
                content = "\n".join(f"{i:>6}\u2192{ln}" for i, ln in enumerate(lines, 1))
                tur = {"type": "text", "file": {"filePath": inp.get("file_path", ""), "content": body,
                                                "numLines": len(lines), "startLine": 1, "totalLines": len(lines)}}
        elif name == "Edit":
            fp = inp["file_path"]
            content = f"The file {fp} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" + p.code_text(rng, min(n, 3000))
            old_l, new_l = inp["old_string"].split("\n"), inp["new_string"].split("\n")
            tur = {"filePath": fp, "oldString": inp["old_string"], "newString": inp["new_string"],
                   "originalFile": p.code_text(rng, n), "structuredPatch": [
                       {"oldStart": rng.randint(1, 500), "oldLines": len(old_l), "newStart": rng.randint(1, 500),
                        "newLines": len(new_l), "lines": ["-" + x for x in old_l] + ["+" + x for x in new_l]}],
                   "userModified": False, "replaceAll": False}
        elif name == "Write":
            fp = inp["file_path"]
            content = f"File created successfully at: {fp}"
            tur = {"type": "create", "filePath": fp, "content": inp["content"], "structuredPatch": [], "originalFile": None}
        elif name in ("Grep", "Glob"):
            files = [f"{self.cwd}/src/{rng.choice(VOCAB[:300])}.py" for _ in range(rng.randint(0, 40))]
            content = (f"Found {len(files)} files\n" + "\n".join(files)) if name == "Grep" else ("\n".join(files) or "No files found")
            tur = ({"mode": "files_with_matches", "filenames": files, "numFiles": len(files)} if name == "Grep"
                   else {"filenames": files, "durationMs": rng.randint(1, 400), "numFiles": len(files), "truncated": False})
        elif name == "TodoWrite":
            content = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress."
            tur = {"oldTodos": [], "newTodos": inp["todos"]}
        elif name == "Task":
            agent_id, final, tokens, ntools, dur = self.subagent(tid, inp)
            meta = f"agentId: {agent_id} (for resuming to continue this agent's work if needed)\n<usage>total_tokens: {tokens}\ntool_uses: {ntools}\nduration_ms: {dur}</usage>"
            content = [{"type": "text", "text": final}, {"type": "text", "text": meta}]
            tur = {"status": "completed", "prompt": inp["prompt"], "agentId": agent_id, "content": [{"type": "text", "text": final}],
                   "totalDurationMs": dur, "totalTokens": tokens, "totalToolUseCount": ntools,
                   "usage": {"input_tokens": rng.randint(1, 50), "output_tokens": rng.randint(50, 3000)}}
            extra["agentId"] = agent_id
        elif name == "WebSearch":
            res = [{"title": p.text(rng, 10, 60), "url": f"https://example.org/{hexs(rng, 8)}"} for _ in range(rng.randint(3, 8))]
            content = f'Web search results for query: "{inp["query"]}"\n\nLinks: ' + orjson.dumps(res).decode() + "\n\n" + p.text(rng, 200, 2000)
            tur = {"query": inp["query"], "results": [{"tool_use_id": "srvtoolu_01" + alnum(rng, 22), "content": res}],
                   "durationSeconds": round(rng.uniform(1, 20), 3)}
        elif name == "WebFetch":
            body = p.text(rng, 100, max(200, min(n, 20_000)))
            content = body
            tur = {"url": inp["url"], "code": 200, "codeText": "OK", "bytes": len(body) * 3, "result": body,
                   "durationMs": rng.randint(100, 9000)}
        else:
            body = p.text(rng, 50, max(100, min(n, 8000)))
            content = [{"type": "text", "text": body}]
            tur = [{"type": "text", "text": body}]
        block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": content}
        if is_error or rng.random() < 0.5:
            block["is_error"] = is_error
        tail: dict[str, Any] = {"toolUseResult": tur, "sourceToolAssistantUUID": tu_uuid}
        tail.update(extra)
        self.emit("user", {"message": {"role": "user", "content": [block]}}, tail, parent=tu_uuid, ts=self.tick(30, 20_000))
        self.ctx += (n if isinstance(content, str) else 2000) // 4

    def subagent(self, tid: str, inp: dict[str, Any]) -> tuple[str, str, int, int, int]:
        rng = self.rng
        agent_id = "a" + (hexs(rng, 6) if not self.new_order else hexs(rng, 16))
        sub_dir = self.session_dir / "subagents"
        out = Out(self.out.stats, self.out.root, sub_dir / f"agent-{agent_id}.jsonl", self.out.vendor)
        sub = ClaudeSession(self.p, rng, out, sid=self.sid, cwd=self.cwd, version=self.version,
                            branch=self.mid["gitBranch"], model=rng.choice(CLAUDE_MODELS), t_ms=self.t,
                            slug=self.mid.get("slug"), session_dir=self.session_dir, agent_id=agent_id,
                            allow_sub=False, allow_compact=False, cap=min(self.cap, 200_000))
        sub.emit("user", {"message": {"role": "user", "content": inp["prompt"]}}, parent=None)
        ntools = 0
        for _ in range(rng.randint(1, 6)):
            for tu in sub.assistant(final=False):
                sub.tool_result(*tu)
                ntools += 1
        final = self.p.text(rng, 100, 2500)
        mid = "msg_01" + alnum(rng, 22)
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": sub.ctx,
                 "output_tokens": rng.randint(100, 2000), "service_tier": "standard"}
        sub.emit("assistant", {"message": {"model": sub.model, "id": mid, "type": "message", "role": "assistant",
                                           "content": [{"type": "text", "text": final}], "stop_reason": None,
                                           "stop_sequence": None, "usage": usage}, "requestId": "req_011C" + alnum(rng, 18)})
        dur = sub.t - self.t
        self.t = sub.t
        out.close(sub.t)
        self.out.stats.bump("claude_code", "subagent_files")
        write_json_file(self.out.stats, self.out.root, sub_dir / f"agent-{agent_id}.meta.json", self.out.vendor,
                        {"agentType": inp["subagent_type"], "description": inp["description"], "toolUseId": tid}, sub.t)
        return agent_id, final, sub.ctx, ntools, dur

    def compact(self) -> None:
        rng, p = self.rng, self.p
        pre = self.ctx
        logical = self.last
        hx = hexs(rng, 6)
        summary = "<analysis>\n" + p.text(rng, 2000, 12_000) + "\n</analysis>\n\n<summary>\n" + p.text(rng, 1500, 8000) + "\n</summary>"
        sub_dir = self.session_dir / "subagents"
        out = Out(self.out.stats, self.out.root, sub_dir / f"agent-acompact-{hx}.jsonl", self.out.vendor)
        sub = ClaudeSession(p, rng, out, sid=self.sid, cwd=self.cwd, version=self.version, branch=self.mid["gitBranch"],
                            model=self.model, t_ms=self.t, slug=self.mid.get("slug"), session_dir=self.session_dir,
                            agent_id=f"acompact-{hx}", allow_sub=False, allow_compact=False)
        # The summariser's root points into the trunk, not to null (spotter fixture).
        sub.emit("user", {"message": {"role": "user", "content": COMPACT_PROMPT}}, parent=logical)
        sub.emit("assistant", {"message": {"model": self.model, "id": "msg_01" + alnum(rng, 22), "type": "message",
                                           "role": "assistant", "content": [{"type": "text", "text": summary}],
                                           "stop_reason": None, "stop_sequence": None,
                                           "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0,
                                                     "cache_read_input_tokens": pre, "output_tokens": len(summary) // 4,
                                                     "service_tier": "standard"}},
                               "requestId": "req_011C" + alnum(rng, 18)})
        out.close(sub.t)
        self.out.stats.bump("claude_code", "compactions")  # each one also wrote an acompact file
        self.t = sub.t
        post = rng.randint(12_000, 30_000)
        self.emit("system", {"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False, "level": "info",
                             "compactMetadata": {"trigger": "auto", "preTokens": pre, "postTokens": post,
                                                 "durationMs": rng.randint(20_000, 120_000)}},
                  parent=None, head={"logicalParentUuid": logical})
        self.emit("user", {"message": {"role": "user", "content": COMPACT_PREFIX + summary}},
                  {"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
        self.progress("SessionStart", "SessionStart:compact", "toolu_" + hexs(rng, 24))
        self.ctx = post

    def turn(self) -> None:
        rng = self.rng
        self.prompt()
        if rng.random() < 0.3:
            self.progress("UserPromptSubmit", "UserPromptSubmit", uuid4(rng))
        rounds = 1 + min(int(rng.expovariate(0.4)), 14)
        for r in range(rounds):
            for tu in self.assistant(final=r == rounds - 1):
                self.tool_result(*tu)
        if rng.random() < 0.4:
            self.emit("system", {"subtype": "turn_duration", "durationMs": rng.randint(2_000, 600_000), "isMeta": False})
        if self.allow_compact and self.ctx > 160_000:
            self.compact()

    def finish(self) -> None:
        rng = self.rng
        if self.new_order and self.last:
            self.out.w({"type": "last-prompt", "lastPrompt": self.last_prompt[:200], "leafUuid": self.last, "sessionId": self.sid})
        if rng.random() < 0.05:
            self.out.w({"type": "custom-title", "customTitle": self.p.text(rng, 10, 50), "sessionId": self.sid})


def claude_session(pools: Pools, stats: Stats, root: Path, rng: Random, mark: Marker | None, *,
                   target: int, t0: int, force_sub: bool = False, force_compact: bool = False,
                   force_image: bool = False, trunk_only: bool = False) -> None:
    """target counts the trunk plus its subagent files, unless trunk_only (the big file,
    whose trunk alone must reach --big-file-mb)."""
    cwd = rng.choice(PROJECTS)
    sid = uuid4(rng)
    version = rng.choices(CLAUDE_VERSIONS, weights=(2, 2, 3, 3, 4))[0]
    model = rng.choice(CLAUDE_MODELS)
    proj = root / ".claude" / "projects" / slugify(cwd)
    out = Out(stats, root, proj / f"{sid}.jsonl", "claude_code")
    slug = "-".join(rng.choice(VOCAB[:400]) for _ in range(3)) if rng.random() < 0.8 else None
    image_rate = 0.08 if (force_image or rng.random() < 0.12) else 0.0
    s = ClaudeSession(pools, rng, out, sid=sid, cwd=cwd, version=version, branch=rng.choice(BRANCHES), model=model,
                      t_ms=t0, slug=slug, session_dir=proj / sid, mark=mark,
                      allow_sub=force_sub or rng.random() < 0.3, allow_compact=force_compact or rng.random() < 0.7,
                      image_rate=image_rate, cap=max(2_000, target // 3))
    s.image_next = force_image
    stats.session("claude_code", t0, model, cwd)
    # Session start hooks: progress lines form the root of the parentUuid chain.
    hook_id = uuid4(rng)
    for _ in range(rng.randint(0, 2)):
        s.progress("SessionStart", "SessionStart:startup", hook_id)
    if force_sub:
        s.prompt()
        for tu in s.assistant(final=False, force="Task"):
            s.tool_result(*tu)
    if force_compact:
        s.turn()
        s.compact()
    side0 = stats.vendor("claude_code")["bytes"]  # subagent files add here when they close
    while out.bytes + (0 if trunk_only else stats.vendor("claude_code")["bytes"] - side0) < target:
        s.turn()
    s.finish()
    out.close(s.t)


# ---------------------------------------------------------------------------------------
# Codex CLI rollouts.


class CodexSession:
    def __init__(self, pools: Pools, rng: Random, out: Out, *, g3: bool, sid: str, cwd: str, model: str, t_ms: int,
                 mark: Marker | None, cap: int, ordinal: int = 0, totals: list[int] | None = None) -> None:
        self.p, self.rng, self.out = pools, rng, out
        self.g3, self.sid, self.cwd, self.model = g3, sid, cwd, model
        self.t = t_ms
        self.mark = mark
        self.cap = cap
        self.ordinal = ordinal
        self.totals = totals or [0, 0, 0, 0]  # input, cached, output, reasoning (cumulative)
        self.turn_id = ""
        self.first_turn = True
        self.hist = 2

    def line(self, type_: str, payload: dict[str, Any], gap: tuple[int, int] = (1, 1500)) -> None:
        self.t += self.rng.randint(*gap)
        self.out.last_ms = self.t
        if self.g3:
            d = {"timestamp": iso_ms(self.t), "ordinal": self.ordinal, "type": type_, "payload": payload}
            self.ordinal += 1
        else:
            d = {"timestamp": iso_ms(self.t), "type": type_, "payload": payload}
        self.out.w(d)

    def header(self, branch: str) -> None:
        rng = self.rng
        git = {"commit_hash": hexs(rng, 40), "branch": branch or "main", "repository_url": f"git@github.com:acme/{Path(self.cwd).name}.git"}
        if self.g3:
            meta = {"session_id": self.sid, "id": self.sid, "timestamp": iso_ms(self.t), "cwd": self.cwd,
                    "runtime_workspace_roots": [self.cwd], "originator": rng.choice(("codex_cli_rs", "codex_exec")),
                    "cli_version": "0.171.0", "source": rng.choice(("cli", "exec")), "thread_source": "user",
                    "model_provider": "openai", "base_instructions": {"text": CODEX_BASE_INSTRUCTIONS}, "git": git}
        else:
            meta = {"id": self.sid, "timestamp": iso_ms(self.t), "cwd": self.cwd, "originator": "codex_cli_rs",
                    "cli_version": "0.66.0", "instructions": None, "source": "cli", "model_provider": "openai", "git": git}
        self.line("session_meta", meta, (20, 60))
        if not self.g3:
            env = (f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
                   "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
                   "  <shell>zsh</shell>\n</environment_context>")
            self.line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]}, (0, 2))

    def usage(self, inp: int, out: int) -> dict[str, Any]:
        t = self.totals
        cached = inp * 3 // 4
        reas = out // 3
        t[0] += inp
        t[1] += cached
        t[2] += out
        t[3] += reas
        total = {"input_tokens": t[0], "cached_input_tokens": t[1], "output_tokens": t[2], "reasoning_output_tokens": t[3], "total_tokens": t[0] + t[2]}
        last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": reas, "total_tokens": inp + out}
        if self.g3:
            total["cache_write_input_tokens"] = 0
            last["cache_write_input_tokens"] = 0
        return {"total_token_usage": total, "last_token_usage": last, "model_context_window": 258400}

    def token_count(self, info: dict[str, Any] | None) -> None:
        if self.g3:
            rl: dict[str, Any] = {"limit_id": "codex", "limit_name": None, "primary": None, "secondary": None, "credits": None, "plan_type": "plus"}
        else:
            rl = {"primary": {"used_percent": round(self.rng.uniform(0, 60), 1), "window_minutes": 300, "resets_at": self.t // 1000 + 9000},
                  "secondary": {"used_percent": round(self.rng.uniform(0, 60), 1), "window_minutes": 10080, "resets_at": self.t // 1000 + 400000},
                  "credits": {"has_credits": False, "unlimited": False, "balance": None}, "plan_type": None}
        self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": rl}, (1, 30))

    def meta3(self, **kw: Any) -> dict[str, Any]:
        self.hist += 1
        d = {"history_sequence": self.hist, "sampled_through_sequence": self.hist - 1, "client_authored": False, "model_search_state": "unused"}
        d.update(kw)
        return d

    def turn(self, branch: str = "main") -> None:
        rng, p = self.rng, self.p
        prompt = p.text(rng, 15, 600)
        content: list[dict[str, Any]] = [{"type": "input_text", "text": prompt}]
        images: list[str] = []
        if rng.random() < 0.04:
            url = "data:image/png;base64," + rng.choice(p.images[:3])
            content.append({"type": "input_image", "image_url": url})
            images.append(url)
        self.t += rng.randint(5_000, 600_000)
        if self.g3:
            self.turn_id = uuid7(rng, self.t)
            self.line("event_msg", {"type": "task_started", "turn_id": self.turn_id, "started_at": self.t // 1000,
                                    "model_context_window": 258400, "collaboration_mode_kind": "default"})
            if self.first_turn:
                self.line("response_item", {"type": "message", "id": "msg_" + uuid7(rng, self.t), "role": "developer",
                                            "content": [{"type": "input_text", "text": "<permissions instructions>\nApproval policy is currently never.\n</permissions instructions>"}]},
                          (0, 3))
                self.line("world_state", {"full": True, "state": {"environments": {"environments": {"local": {"cwd": self.cwd, "status": "available", "shell": "bash"}},
                                                                                   "current_date": iso_ms(self.t)[:10], "timezone": "Etc/UTC"}}}, (0, 3))
            self.line("turn_context", {"turn_id": self.turn_id, "cwd": self.cwd, "approval_policy": "never", "model": self.model,
                                       "summary": "none", "sandbox_policy": {"type": "danger-full-access"}, "multi_agent_version": "v1"}, (0, 3))
            mid = "msg_" + uuid7(rng, self.t)
            self.line("response_item", {"type": "message", "id": mid, "role": "user", "content": content,
                                        "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "create_time": self.t / 1000},
                                        "metadata": self.meta3(user_input_order=self.hist)},
                      (1, 20))
            self.line("event_msg", {"type": "item_completed", "thread_id": self.sid, "turn_id": self.turn_id,
                                    "item": {"type": "UserMessage", "id": uuid7(rng, self.t), "content": [{"type": "text", "text": prompt, "text_elements": []}]}})
        else:
            self.line("response_item", {"type": "message", "role": "user", "content": content}, (1, 20))
            self.line("event_msg", {"type": "user_message", "message": prompt, "images": images}, (0, 3))
            tc = {"cwd": self.cwd, "approval_policy": "on-request", "sandbox_policy": {"type": "workspace-write", "network_access": False,
                  "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False}, "model": self.model, "effort": "medium", "summary": "auto"}
            self.line("turn_context", tc, (5, 30))
            if rng.random() < 0.3:
                self.line("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": hexs(rng, 40), "parent": hexs(rng, 40),
                                            "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}})
            if self.first_turn:
                self.token_count(None)
        self.first_turn = False
        rounds = 1 + min(int(rng.expovariate(0.35)), 16)
        for _ in range(rounds):
            self.step()
        final = p.text(rng, 30, 1500)
        if self.g3:
            fid = "msg_" + hexs(rng, 16)
            self.line("event_msg", {"type": "item_completed", "thread_id": self.sid, "turn_id": self.turn_id,
                                    "item": {"type": "AgentMessage", "id": fid, "content": [{"type": "Text", "text": final}]}})
            self.line("response_item", {"type": "message", "status": "completed", "id": fid, "role": "assistant", "phase": "final_answer",
                                        "content": [{"type": "output_text", "text": final, "annotations": []}],
                                        "metadata": self.meta3()}, (0, 3))
            info = self.usage(rng.randint(2000, 30000), rng.randint(20, 800))
            self.line("token_usage_record", {"thread_id": self.sid, "turn_id": self.turn_id, "response_id": "resp_" + hexs(rng, 24),
                                             "usage": info["last_token_usage"], "thread_token_usage": info["total_token_usage"]})
            self.token_count(info)
            self.line("event_msg", {"type": "task_complete", "turn_id": self.turn_id, "last_agent_message": final[:400],
                                    "duration_ms": rng.randint(1000, 600_000)})
        else:
            self.line("event_msg", {"type": "agent_message", "message": final})
            self.line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": final}]}, (0, 2))
            self.token_count(self.usage(rng.randint(2000, 30000), rng.randint(20, 800)))

    def step(self) -> None:
        rng, p = self.rng, self.p
        summary = p.text(rng, 20, 600)
        enc = "gAAAAAB" + p.sig(rng, 400, 2400).replace("+", "-").replace("/", "_")
        if self.g3:
            if self.mark is not None:
                summary = self.mark(summary, self.out)
            self.line("response_item", {"type": "reasoning", "id": "rs_" + hexs(rng, 32),
                                        "summary": [{"type": "summary_text", "text": summary}], "content": None, "encrypted_content": enc})
        else:
            self.line("event_msg", {"type": "agent_reasoning", "text": summary})
            self.line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                                        "content": None, "encrypted_content": enc}, (0, 2))
        call_id = "call_" + alnum(rng, 24)
        n = output_size(rng, self.cap)
        if rng.random() < 0.2:
            path = f"src/{rng.choice(VOCAB[:300])}.py"
            patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "\n".join("+" + ln for ln in p.code_text(rng, min(n, 8000)).split("\n")) + "\n*** End Patch"
            item: dict[str, Any] = {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch", "input": patch}
            if self.g3:
                item["id"] = "ctc_" + hexs(rng, 24)
            self.line("response_item", item)
            self.token_count(self.usage(rng.randint(2000, 40000), rng.randint(20, 2000)))
            result = {"output": f"Success. Updated the following files:\nM {path}\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
            if self.g3:
                self.line("event_msg", {"type": "patch_apply_end", "call_id": call_id, "turn_id": self.turn_id, "stdout": result["output"],
                                        "stderr": "", "success": True, "changes": {path: {"type": "update", "unified_diff": patch[:2000], "move_path": None}}})
            self.line("response_item", {"type": "custom_tool_call_output", "call_id": call_id, "output": orjson.dumps(result).decode()})
        else:
            cmd = rng.choice(("pytest -q", "git diff", "ls -la", "cargo test", "rg -n TODO", "sed -n 1,200p")) + f" {rng.choice(VOCAB[:200])}"
            text = p.code_text(rng, n)
            if self.g3:
                self.line("response_item", {"type": "function_call", "status": "completed", "id": "fc_" + hexs(rng, 24), "name": "exec_command",
                                            "arguments": orjson.dumps({"cmd": cmd, "workdir": self.cwd}).decode(), "call_id": call_id,
                                            "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id},
                                            "metadata": self.meta3()},
                          (200, 8000))
                info = self.usage(rng.randint(2000, 40000), rng.randint(20, 2000))
                self.line("token_usage_record", {"thread_id": self.sid, "turn_id": self.turn_id, "response_id": "resp_" + hexs(rng, 24),
                                                 "usage": info["last_token_usage"], "thread_token_usage": info["total_token_usage"]})
                self.line("event_msg", {"type": "item_completed", "thread_id": self.sid, "turn_id": self.turn_id,
                                        "item": {"type": "CommandExecution", "id": call_id, "command": ["/bin/bash", "-lc", cmd], "cwd": self.cwd,
                                                 "status": "completed", "aggregated_output": text, "exit_code": 0,
                                                 "duration": {"secs": rng.randint(0, 30), "nanos": rng.randint(0, 999_999_999)}}})
                out = (f"Chunk ID: {hexs(rng, 6)}\nWall time: {rng.uniform(0, 30):.4f} seconds\nProcess exited with code 0\n"
                       f"Original token count: {len(text) // 4}\nOutput:\n{text}")
                self.line("response_item", {"type": "function_call_output", "id": "fco_" + uuid7(rng, self.t), "call_id": call_id, "output": out})
                self.token_count(info)
            else:
                self.line("response_item", {"type": "function_call", "name": "shell_command",
                                            "arguments": orjson.dumps({"command": cmd, "workdir": self.cwd}).decode(), "call_id": call_id},
                          (200, 8000))
                self.token_count(self.usage(rng.randint(2000, 40000), rng.randint(20, 2000)))
                if self.mark is not None:
                    text = self.mark(text, self.out)
                out = f"Exit code: 0\nWall time: {rng.uniform(0, 30):.1f} seconds\nOutput:\n{text}"
                self.line("response_item", {"type": "function_call_output", "call_id": call_id, "output": out})
                self.line("turn_context", {"cwd": self.cwd, "approval_policy": "on-request", "model": self.model, "effort": "medium", "summary": "auto"}, (1, 20))
                self.token_count(self.usage(0, 0))  # 0.66 re-emits an unchanged total


def codex_session(pools: Pools, stats: Stats, root: Path, rng: Random, mark: Marker | None, *,
                  target: int, t0: int, g3: bool, archived: bool) -> None:
    cwd = rng.choice(PROJECTS)
    model = rng.choice(CODEX_MODELS)
    sid = uuid7(rng, t0)
    stamp = iso_ms(t0)
    name = f"rollout-{stamp[:10]}T{stamp[11:13]}-{stamp[14:16]}-{stamp[17:19]}-{sid}.jsonl"
    if archived:
        path = root / ".codex" / "archived_sessions" / name
    else:
        path = root / ".codex" / "sessions" / stamp[:4] / stamp[5:7] / stamp[8:10] / name
    out = Out(stats, root, path, "codex")
    s = CodexSession(pools, rng, out, g3=g3, sid=sid, cwd=cwd, model=model, t_ms=t0, mark=mark, cap=max(2_000, target // 3))
    stats.session("codex", t0, model, cwd)
    stats.bump("codex", "g3" if g3 else "g2")
    if archived:
        stats.bump("codex", "archived")
    branch = rng.choice(BRANCHES)
    s.header(branch)
    while out.bytes < target:
        s.turn(branch)
    out.close(s.t)


# ---------------------------------------------------------------------------------------
# clm.


class ClmSession:
    def __init__(self, pools: Pools, rng: Random, provider: str, cap: int) -> None:
        self.p, self.rng, self.provider, self.cap = pools, rng, provider, cap

    def call_id(self) -> str:
        return ("toolu_01" + alnum(self.rng, 22)) if self.provider == "anthropic" else ("call_" + alnum(self.rng, 24))

    def turn(self, out: Out, mark: Marker | None) -> list[bytes]:
        """Writes one user turn; returns its lines (compaction keeps the last two verbatim)."""
        rng, p = self.rng, self.p
        lines = []
        if rng.random() < 0.1:
            lines.append(out.w({"role": "user", "content": f"[context update] time: {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}, host: devbox", "type": "msg"}))
        lines.append(out.w({"role": "user", "content": p.text(rng, 10, 500), "type": "msg"}))
        for _ in range(1 + min(int(rng.expovariate(0.4)), 12)):
            calls = []
            for _ in range(1 + (rng.random() < 0.2)):
                cmd = rng.choice(("ls", "cat README.md", "make test", "git log --oneline -5", "grep -rn TODO src")) + f" {rng.choice(VOCAB[:200])}"
                calls.append({"id": self.call_id(), "name": "shell_exec", "args": orjson.dumps({"command": cmd}).decode()})
            msg: dict[str, Any] = {"role": "assistant"}
            if rng.random() < 0.4:
                msg["content"] = p.text(rng, 20, 400)
            msg["tool_calls"] = calls
            msg["type"] = "msg"
            lines.append(out.w(msg))
            for c in calls:
                body = p.code_text(rng, output_size(rng, self.cap)) + f"\n(exit status {rng.choice((0, 0, 0, 1, 2))})"
                # clm stores at most 65535 bytes of a message and cuts by bytes.
                raw = body.encode()
                if len(raw) > 65535:
                    body = raw[:65535].decode(errors="ignore")
                lines.append(out.w({"role": "tool", "content": body, "tool_call_id": c["id"], "tool_name": "shell_exec", "type": "msg"}))
        final = p.text(rng, 20, 1500)
        if mark is not None:
            final = mark(final, out)
        lines.append(out.w({"role": "assistant", "content": final, "type": "msg"}))
        return lines


def clm_session(pools: Pools, stats: Stats, root: Path, rng: Random, mark: Marker | None, *,
                target: int, t0: int, compacted: bool) -> None:
    model, provider = rng.choice(CLM_MODELS)
    stamp = iso_ms(t0)
    cid = f"{stamp[0:4]}{stamp[5:7]}{stamp[8:10]}-{stamp[11:13]}{stamp[14:16]}{stamp[17:19]}-{hexs(rng, 8)}"
    meta: dict[str, Any] = {"type": "meta", "v": 1, "id": cid, "created": t0 // 1000, "model": model, "provider": provider}
    if rng.random() < 0.3:
        meta["agent"] = "default"
    new_format = rng.random() < 0.6  # newer clm writes prompt records
    d = root / ".local" / "state" / "clm"
    s = ClmSession(pools, rng, provider, max(2_000, target // 4))
    stats.session("clm", t0, model, None)
    t = t0 + rng.randint(60_000, 4 * 3_600_000)
    if not compacted:
        out = Out(stats, root, d / f"{cid}.jsonl", "clm")
        out.w(meta)
        if new_format:
            out.w({"type": "prompt", "hash": fnv1a64(CLM_SYSTEM_PROMPT), "content": CLM_SYSTEM_PROMPT})
        while out.bytes < target:
            s.turn(out, mark)
        out.close(t)
        return
    # Compacted session: the .bak holds the log as it was before compaction; the .jsonl is the
    # rewrite (same meta line first, summary as a user message, last two turns verbatim), to
    # which the session then kept appending. Markers stay out: kept turns exist twice.
    stats.bump("clm", "compacted")
    bak = Out(stats, root, d / f"{cid}.jsonl.bak", "clm")
    meta_b = bak.w(meta)
    if new_format:
        bak.w({"type": "prompt", "hash": fnv1a64(CLM_SYSTEM_PROMPT), "content": CLM_SYSTEM_PROMPT})
    turns: list[list[bytes]] = []
    n_turns = 0
    while bak.bytes < target * 2 // 3 or n_turns < 3:
        turns = [*turns[-1:], s.turn(bak, None)]
        n_turns += 1
    t_bak = t0 + rng.randint(60_000, 3_600_000)
    bak.close(t_bak)
    out = Out(stats, root, d / f"{cid}.jsonl", "clm")
    out.raw(meta_b)
    out.w({"type": "prompt", "hash": fnv1a64(CLM_SYSTEM_PROMPT), "content": CLM_SYSTEM_PROMPT})
    out.w({"role": "user", "content": pools.text(rng, 400, 3000), "type": "msg"})
    for tl in turns:
        out.raw(b"".join(tl))
    for _ in range(rng.randint(1, 3)):
        s.turn(out, None)
    out.close(max(t, t_bak + 1000))


# ---------------------------------------------------------------------------------------
# Gemini CLI (0.61 operation log) and Qwen Code (0.24 records).

GEMINI_CONTEXT = ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
                  "My operating system is: linux\n- **Workspace Directories:**\n  - {cwd}\n</session_context>")


def gemini_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    cwd = rng.choice(PROJECTS)
    model = rng.choice(GEMINI_MODELS)
    sid = uuid4(rng)
    stamp = iso_ms(t0)
    slug = re.sub(r"[^a-z0-9]", "-", cwd.rstrip("/").rsplit("/", 1)[-1].lower()).strip("-") or "project"
    path = root / ".gemini" / "tmp" / slug / "chats" / f"session-{stamp[:10]}T{stamp[11:13]}-{stamp[14:16]}-{sid[:8]}.jsonl"
    out = Out(stats, root, path, "gemini")
    stats.session("gemini", t0, model, cwd)
    t = t0
    project_hash = hexs(rng, 64)
    header = {"sessionId": sid, "projectHash": project_hash, "startTime": stamp, "lastUpdated": stamp, "kind": "main"}
    out.w(header)
    history: list[dict[str, Any]] = [{"id": hexs(rng, 32), "timestamp": stamp, "type": "user",
                                      "content": [{"text": GEMINI_CONTEXT.format(cwd=cwd)}]}]
    out.w({"$set": {"messages": history}})
    resumed = False
    prompt = 100 + rng.randint(0, 2000)

    def tick() -> str:
        nonlocal t
        t += rng.randint(200, 40_000)
        return iso_ms(t)

    def patch() -> None:
        out.w({"$set": {"lastUpdated": iso_ms(t)}})

    while out.bytes < target:
        if not resumed and history and out.bytes > target // 2 and target < 400_000 and rng.random() < 0.5:
            resumed = True  # a resume: a new header and a snapshot of the whole history
            out.w({**header, "startTime": tick(), "lastUpdated": iso_ms(t)})
            out.w({"$set": {"messages": history}})
            out.w({"$set": {"sessionId": sid}})
        user = {"id": uuid4(rng), "timestamp": tick(), "type": "user", "content": [{"text": pools.text(rng, 10, 400)}]}
        out.w(user)
        history.append(user)
        patch()
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = step > 0 and rng.random() < 0.35
            prompt += rng.randint(200, 3000)
            thoughts = [{"subject": "", "description": pools.text(rng, 20, 300), "timestamp": iso_ms(t)}
                        for _ in range(rng.random() < 0.4)]
            content = pools.text(rng, 20, 800) if final or rng.random() < 0.4 else ""
            out_tokens = len(content) // 4 + 5
            th = sum(len(x["description"]) // 4 for x in thoughts)
            cached = prompt * rng.randint(0, 9) // 10
            msg = {"id": uuid4(rng), "timestamp": tick(), "type": "gemini", "content": content, "thoughts": thoughts,
                   "tokens": {"input": prompt, "output": out_tokens, "cached": cached, "thoughts": th, "tool": 0,
                              "total": prompt + out_tokens + th}, "model": model}
            out.w(msg)
            patch()
            if final:
                history.append(msg)
                break
            cid = f"run_shell_command__run_shell_command_{t}_0"
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status", "grep -rn TODO src"))
            output = pools.code_text(rng, output_size(rng, max(2_000, target // 6)))
            response = {"functionResponse": {"id": cid, "name": "run_shell_command", "response": {"output": output}}}
            msg = {**msg, "toolCalls": [{"id": cid, "name": "run_shell_command", "args": {"command": cmd},
                                         "result": [response], "status": "success", "timestamp": tick(),
                                         "resultDisplay": output[:200], "displayName": "Shell"}]}
            out.w(msg)
            history.append(msg)
            out.w({"id": uuid4(rng), "timestamp": iso_ms(t), "type": "user", "content": [response]})
            patch()
    out.close(t)


def qwen_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    cwd = rng.choice(PROJECTS)
    model = rng.choice(QWEN_MODELS)
    sid = uuid4(rng)
    path = root / ".qwen" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", cwd) / "chats" / f"{sid}.jsonl"
    out = Out(stats, root, path, "qwen")
    stats.session("qwen", t0, model, cwd)
    t = t0
    parent: str | None = None
    prompt = 1000 + rng.randint(0, 2000)
    n_prompt = 0

    def rec(kind: str, provenance: str, **body: Any) -> None:
        nonlocal t, parent
        t += rng.randint(50, 20_000)
        uid = uuid4(rng)
        out.w({"uuid": uid, "parentUuid": parent, "sessionId": sid, "timestamp": iso_ms(t), "type": kind,
               "provenance": provenance, "cwd": cwd, "version": "0.24.4", **body})
        parent = uid

    def api_response(pid: str, inp: int, outp: int, helper: str | None = None) -> None:
        ev = {"event.name": "qwen-code.api_response", "event.timestamp": iso_ms(t), "response_id": "chatcmpl-" + hexs(rng, 24),
              "model": model, "status_code": 200, "duration_ms": rng.randint(100, 9000), "input_token_count": inp,
              "output_token_count": outp, "cached_content_token_count": inp // 2, "thoughts_token_count": 0,
              "total_token_count": inp + outp, "prompt_id": pid, "auth_type": "openai"}
        if helper:
            ev.update({"subagent_name": helper, "subagent_id": f"{helper}-{hexs(rng, 8)}"})
        rec("system", "system", subtype="ui_telemetry", systemPayload={"uiEvent": ev})

    while out.bytes < target:
        rec("user", "real_user", message={"role": "user", "parts": [{"text": pools.text(rng, 10, 400)}]})
        pid = f"{sid}########{n_prompt}"
        n_prompt += 1
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = step > 0 and rng.random() < 0.35
            prompt += rng.randint(200, 3000)
            parts: list[dict[str, Any]] = []
            if final or rng.random() < 0.4:
                parts.append({"text": pools.text(rng, 20, 800)})
            cid = "call_" + alnum(rng, 24)
            if not final:
                parts.append({"functionCall": {"id": cid, "name": "run_shell_command",
                                               "args": {"command": rng.choice(("ls", "make test", "git diff"))}}})
            outp = len(orjson.dumps(parts)) // 4
            api_response(pid, prompt, outp)
            rec("assistant", "assistant_output", model=model, message={"role": "model", "parts": parts},
                usageMetadata={"promptTokenCount": prompt, "candidatesTokenCount": outp, "thoughtsTokenCount": 0,
                               "totalTokenCount": prompt + outp, "cachedContentTokenCount": prompt // 2})
            if final:
                break
            output = pools.code_text(rng, output_size(rng, max(2_000, target // 6)))
            rec("tool_result", "tool_result", message={"role": "user", "parts": [{"functionResponse": {
                "id": cid, "name": "run_shell_command", "response": {"output": output}}}]},
                toolCallResult={"callId": cid, "status": "success"})
        if rng.random() < 0.5:
            api_response(f"{sid}#managed-auto-memory-extractor-{hexs(rng, 8)}#0", prompt // 2, 6,
                         helper="managed-auto-memory-extractor")
    out.close(t)


# ---------------------------------------------------------------------------------------
# pi (~/.pi/agent/sessions) and GitHub Copilot CLI (~/.copilot/session-state), as pi 0.73.1
# and Copilot CLI 1.0.102 write them (tests/fixtures/recorded). No markers: their text is
# not counted in the manifest's marker totals.

PI_MODELS = (("anthropic", "claude-sonnet-4-5", "anthropic-messages"), ("openai", "gpt-5.1", "openai-responses"),
             ("ollama", "qwen3-coder:30b", "openai-completions"))
COPILOT_MODELS = ("gpt-4.1", "claude-sonnet-4.5", "gpt-5-mini")
COPILOT_SYSTEM_PROMPT = "You are the GitHub Copilot CLI, a terminal assistant built by GitHub.\n" + " ".join(VOCAB[180:420])


def _pi_usage(rng: Random, inp: int, out: int) -> dict[str, Any]:
    cache = inp * rng.randint(0, 9) // 10
    fresh = inp - cache
    cost = {"input": fresh * 3e-6, "output": out * 15e-6, "cacheRead": cache * 3e-7, "cacheWrite": 0}
    cost["total"] = sum(cost.values())
    return {"input": fresh, "output": out, "cacheRead": cache, "cacheWrite": 0, "totalTokens": inp + out, "cost": cost}


def pi_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    provider, model, api = rng.choice(PI_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = uuid7(rng, t0)
    stamp = iso_ms(t0).replace(":", "-").replace(".", "-")
    folder = "--" + cwd.lstrip("/").replace("/", "-") + "--"
    out = Out(stats, root, root / ".pi" / "agent" / "sessions" / folder / f"{stamp}_{sid}.jsonl", "pi")
    stats.session("pi", t0, model, cwd)
    t = t0
    out.w({"type": "session", "version": 3, "id": sid, "timestamp": iso_ms(t), "cwd": cwd})
    ids: list[str] = []

    def entry(kind: str, parent: str | None, **body: Any) -> str:
        nonlocal t
        t += rng.randint(5, 4000)
        eid = hexs(rng, 8)
        out.w({"type": kind, "id": eid, "parentId": parent, "timestamp": iso_ms(t), **body})
        ids.append(eid)
        return eid

    leaf = entry("model_change", None, provider=provider, modelId=model)
    leaf = entry("thinking_level_change", leaf, thinkingLevel=rng.choice(("off", "medium", "high")))
    assistants: list[str] = []
    while out.bytes < target:
        if assistants and rng.random() < 0.05:
            leaf = rng.choice(assistants)  # a branch in place (/tree): the next prompt grows from here
        leaf = entry("message", leaf, message={"role": "user", "content": [{"type": "text", "text": pools.text(rng, 10, 400)}],
                                               "timestamp": t})
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            content: list[dict[str, Any]] = []
            if rng.random() < 0.5:
                content.append({"type": "thinking", "thinking": pools.text(rng, 20, 300), "thinkingSignature": pools.sig(rng)})
            if final or rng.random() < 0.4:
                content.append({"type": "text", "text": pools.text(rng, 20, 800)})
            call = None
            if not final:
                call = "call_" + alnum(rng, 24)
                cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
                content.append({"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": cmd}})
            leaf = entry("message", leaf, message={
                "role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
                "usage": _pi_usage(rng, rng.randint(2_000, 60_000), rng.randint(20, 2_000)),
                "stopReason": "toolUse" if call else "stop", "timestamp": t})
            assistants.append(leaf)
            if call is None:
                break
            leaf = entry("message", leaf, message={
                "role": "toolResult", "toolCallId": call, "toolName": "bash",
                "content": [{"type": "text", "text": pools.code_text(rng, output_size(rng, max(2_000, target // 4)))}],
                "isError": rng.random() < 0.1, "timestamp": t})
    out.close(t)


OPENCODE_MODELS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.1"), ("ollama", "qwen3-coder:30b"))
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def opencode_db(pools: Pools, stats: Stats, root: Path, seed: int, budget: int) -> None:
    """OpenCode 1.18.33 keeps every session in one SQLite database: its append-only
    ``event`` table (``aggregate_id`` = session, ``seq``, ``type``, ``data`` = the JSON the
    client wrote) and the rows those events update in place. Parts are written as the
    client streams them: a text or reasoning part empty first, a tool part pending, running,
    then completed. Written without WAL (one file), in one transaction, so the bytes are a
    function of the seed; the manifest counts the database file (no lines)."""
    path = root / ".local" / "share" / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        PRAGMA page_size = 4096; PRAGMA journal_mode = DELETE;
        CREATE TABLE event_sequence (aggregate_id text PRIMARY KEY, seq integer NOT NULL, owner_id text);
        CREATE TABLE event (id text PRIMARY KEY, aggregate_id text NOT NULL, seq integer NOT NULL, type text NOT NULL,
                            data text NOT NULL);
        CREATE TABLE session (id text PRIMARY KEY, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
                              time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
                              time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
                           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        BEGIN;""")
    written = 0
    i = 0
    last = 0
    while written < budget:
        rng = Random(f"{seed}:opencode:{i}")
        target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), budget - written + 3_000)
        n, last_ms = _opencode_session(pools, stats, conn, rng, target=target, t0=session_start(rng, i))
        written += n
        last = max(last, last_ms)
        i += 1
    conn.execute("COMMIT")
    conn.close()
    os.utime(path, ns=(last * 1_000_000, last * 1_000_000))
    d = stats.vendor("opencode")
    d["files"] += 1
    d["bytes"] += path.stat().st_size
    stats.largest = max(stats.largest, (path.stat().st_size, path.relative_to(root).as_posix()))
    stats.last_ms = max(stats.last_ms, last)


def _opencode_session(pools: Pools, stats: Stats, conn: sqlite3.Connection, rng: Random, *, target: int,
                      t0: int) -> tuple[int, int]:
    provider, model = rng.choice(OPENCODE_MODELS)
    cwd = rng.choice(PROJECTS)
    t = t0
    counter = 0

    def ident(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix}_{((t << 12) + counter) & 0xFFFFFFFFFFFF:012x}" + "".join(rng.choice(_B62) for _ in range(14))

    sid = ident("ses")
    stats.session("opencode", t0, model, cwd)
    seq = -1
    size = 0

    def event(kind: str, data: dict[str, Any]) -> None:
        nonlocal seq, size, t
        t += rng.randint(1, 900)
        seq += 1
        raw = orjson.dumps(data).decode()
        size += len(raw)
        conn.execute("INSERT INTO event VALUES (?, ?, ?, ?, ?)", (ident("evt"), sid, seq, kind, raw))
        if kind == "message.updated.1":
            info = data["info"]
            conn.execute("INSERT OR REPLACE INTO message VALUES (?, ?, ?, ?, ?)",
                         (info["id"], sid, info["time"]["created"], t, raw))
        elif kind == "message.part.updated.1":
            part = data["part"]
            conn.execute("INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?, ?, ?)",
                         (part["id"], part["messageID"], sid, t, t, orjson.dumps(part).decode()))

    info = {"id": sid, "slug": "-".join(rng.choice(VOCAB[:300]) for _ in range(2)), "projectID": "global",
            "directory": cwd, "title": pools.text(rng, 10, 60).strip() or "session", "version": "1.18.33",
            "time": {"created": t0, "updated": t0}}
    event("session.created.1", {"sessionID": sid, "info": info})
    while size < target:
        user = ident("msg")
        event("message.updated.1", {"sessionID": sid, "info": {"id": user, "sessionID": sid, "role": "user",
              "time": {"created": t}, "agent": "build", "model": {"providerID": provider, "modelID": model}}})
        event("message.part.updated.1", {"sessionID": sid, "part": {"id": ident("prt"), "sessionID": sid,
              "messageID": user, "type": "text", "text": pools.text(rng, 10, 400)}, "time": t})
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            mid = ident("msg")
            created = t
            head = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": created}, "parentID": user,
                    "modelID": model, "providerID": provider, "mode": "build", "agent": "build",
                    "path": {"cwd": cwd, "root": "/"}, "cost": 0,
                    "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
            event("message.updated.1", {"sessionID": sid, "info": head})
            base = {"sessionID": sid, "messageID": mid}
            event("message.part.updated.1", {"sessionID": sid, "part": {"id": ident("prt"), **base, "type": "step-start"},
                                             "time": t})
            reasoning = 0
            for kind in ("reasoning",) * (rng.random() < 0.5) + ("text",) * (final or rng.random() < 0.4):
                pid, start, text = ident("prt"), t, pools.text(rng, 20, 800)
                reasoning += len(text) // 4 if kind == "reasoning" else 0
                event("message.part.updated.1", {"sessionID": sid, "part": {"id": pid, **base, "type": kind, "text": "",
                                                 "time": {"start": start}}, "time": t})
                event("message.part.updated.1", {"sessionID": sid, "part": {"id": pid, **base, "type": kind, "text": text,
                                                 "time": {"start": start, "end": t + 5}}, "time": t + 5})
            if not final:
                pid, call, start = ident("prt"), "call_" + alnum(rng, 24), t
                cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
                tool = {"id": pid, **base, "type": "tool", "callID": call, "tool": "bash"}
                event("message.part.updated.1", {"sessionID": sid, "part": {**tool, "state": {"status": "pending", "input": {},
                                                 "raw": ""}}, "time": t})
                event("message.part.updated.1", {"sessionID": sid, "part": {**tool, "state": {"status": "running",
                                                 "input": {"command": cmd}, "time": {"start": start}}}, "time": t})
                output = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
                exit_code = 1 if rng.random() < 0.1 else 0
                event("message.part.updated.1", {"sessionID": sid, "part": {**tool, "state": {
                    "status": "completed", "input": {"command": cmd}, "output": output, "title": cmd,
                    "metadata": {"output": output[:2000], "exit": exit_code, "truncated": False},
                    "time": {"start": start, "end": t + 50}}}, "time": t + 50})
            inp, out = rng.randint(2_000, 60_000), rng.randint(20, 2_000)
            read = rng.randint(0, inp)
            tokens = {"total": inp + out + reasoning, "input": inp - read, "output": out, "reasoning": reasoning,
                      "cache": {"read": read, "write": 0}}
            cost = round((inp - read) * 3e-6 + read * 3e-7 + (out + reasoning) * 1.5e-5, 7)
            event("message.part.updated.1", {"sessionID": sid, "part": {"id": ident("prt"), **base, "type": "step-finish",
                  "reason": "stop" if final else "tool-calls", "tokens": tokens, "cost": cost}, "time": t})
            event("message.updated.1", {"sessionID": sid, "info": {**head, "tokens": tokens, "cost": cost,
                  "time": {"created": created, "completed": t}, "finish": "stop" if final else "tool-calls"}})
            if final:
                break
    info["time"]["updated"] = t
    event("session.updated.1", {"sessionID": sid, "info": info})
    conn.execute("INSERT INTO event_sequence VALUES (?, ?, NULL)", (sid, seq))
    conn.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?)", (sid, cwd, info["title"], "1.18.33", t0, t))
    return size, t


HERMES_MODELS = (("openrouter", "anthropic/claude-sonnet-4.5"), ("custom", "qwen3-coder"), ("nous", "hermes-4-70b"))
# the columns of Hermes Agent 0.19.0's state.db (schema 22) that a session of the CLI fills
HERMES_SCHEMA = """
    PRAGMA page_size = 4096; PRAGMA journal_mode = DELETE;
    CREATE TABLE schema_version (version INTEGER NOT NULL);
    CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, model_config TEXT,
        system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
        message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
        output_tokens INTEGER DEFAULT 0, cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
        reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, billing_provider TEXT, title TEXT,
        api_call_count INTEGER DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
        role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
        token_count INTEGER, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT,
        platform_message_id TEXT, observed INTEGER DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
        compacted INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE session_model_usage (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        model TEXT NOT NULL, billing_provider TEXT NOT NULL DEFAULT '', billing_base_url TEXT NOT NULL DEFAULT '',
        billing_mode TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '', api_call_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0, estimated_cost_usd REAL NOT NULL DEFAULT 0,
        actual_cost_usd REAL NOT NULL DEFAULT 0, cost_status TEXT, cost_source TEXT, first_seen REAL, last_seen REAL,
        PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task));
    -- the 0.19.0 client's indexes on these columns (tests/fixtures/hermes/state-0.19.0), which readers rely on
    CREATE INDEX idx_sessions_source ON sessions(source);
    CREATE INDEX idx_sessions_source_id ON sessions(source, id);
    CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
    CREATE INDEX idx_sessions_started ON sessions(started_at DESC);
    CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
    CREATE INDEX idx_session_model_usage_session ON session_model_usage(session_id);
    CREATE INDEX idx_session_model_usage_model ON session_model_usage(model);
    CREATE INDEX idx_messages_platform_msg_id ON messages(session_id, platform_message_id) WHERE platform_message_id IS NOT NULL;
    CREATE INDEX idx_messages_session_active ON messages(session_id, active, timestamp);
    CREATE INDEX idx_messages_active_null ON messages(active) WHERE active IS NULL;
    INSERT INTO schema_version VALUES (22);
    BEGIN;"""


def hermes_db(pools: Pools, stats: Stats, root: Path, seed: int, budget: int) -> None:
    """Hermes Agent 0.19.0 keeps every session in one SQLite database, ``~/.hermes/state.db``:
    ``sessions`` (updated in place: totals, title, end), ``messages`` (OpenAI-style rows,
    ``tool_calls`` as JSON, the shell tool ``terminal`` whose result is JSON text) and
    ``session_model_usage`` (the session's totals per model; Hermes keeps no usage per
    response). Written without WAL, in one transaction (bytes a function of the seed); the
    manifest counts the database file (no lines), as OpenCode's."""
    path = root / ".hermes" / "state.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(HERMES_SCHEMA)
    written, i, last = 0, 0, 0
    while written < budget:
        rng = Random(f"{seed}:hermes:{i}")
        target = min(lognormal_bytes(rng, 40_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), budget - written + 3_000)
        n, last_ms = _hermes_session(pools, stats, conn, rng, target=target, t0=session_start(rng, i))
        written += n
        last = max(last, last_ms)
        i += 1
    conn.execute("COMMIT")
    conn.close()
    os.utime(path, ns=(last * 1_000_000, last * 1_000_000))
    d = stats.vendor("hermes")
    d["files"] += 1
    d["bytes"] += path.stat().st_size
    stats.largest = max(stats.largest, (path.stat().st_size, path.relative_to(root).as_posix()))
    stats.last_ms = max(stats.last_ms, last)


def _hermes_session(pools: Pools, stats: Stats, conn: sqlite3.Connection, rng: Random, *, target: int,
                    t0: int) -> tuple[int, int]:
    provider, model = rng.choice(HERMES_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = _dt.datetime.fromtimestamp(t0 / 1000, tz=_dt.timezone.utc).strftime("%Y%m%d_%H%M%S_") + hexs(rng, 6)
    stats.session("hermes", t0, model, cwd)
    t, size, count, calls = t0, 0, 0, 0
    totals = {"input": 0, "output": 0, "read": 0, "reasoning": 0, "calls": 0}

    def row(role: str, content: str | None, **cols: Any) -> None:
        nonlocal size, count
        names = ["session_id", "role", "content", "timestamp", *cols]
        conn.execute(f"INSERT INTO messages ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     (sid, role, content, t / 1000, *cols.values()))
        size += len(content or "") + sum(len(v) for v in cols.values() if isinstance(v, str))
        count += 1

    title = pools.text(rng, 10, 60).strip() or "session"
    while size < target:
        t += rng.randint(2_000, 600_000)
        row("user", pools.text(rng, 10, 400))
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            t += rng.randint(500, 30_000)
            reasoning = pools.text(rng, 20, 300) if rng.random() < 0.4 else None
            text = pools.text(rng, 20, 800) if final or rng.random() < 0.4 else ""
            inp, out = rng.randint(2_000, 60_000), rng.randint(20, 2_000)
            read = rng.randint(0, inp)
            totals["input"] += inp - read
            totals["read"] += read
            totals["output"] += out
            totals["reasoning"] += len(reasoning or "") // 4
            totals["calls"] += 1
            if final:
                row("assistant", text, finish_reason="stop", reasoning=reasoning, reasoning_content=reasoning)
                break
            call = "call_" + alnum(rng, 24)
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
            tool_calls = [{"id": call, "call_id": call, "response_item_id": "fc_" + call[5:], "type": "function",
                           "function": {"name": "terminal", "arguments": orjson.dumps({"command": cmd}).decode()}}]
            row("assistant", text, tool_calls=orjson.dumps(tool_calls).decode(), finish_reason="tool_calls",
                reasoning=reasoning, reasoning_content=reasoning)
            calls += 1
            t += rng.randint(100, 20_000)
            output = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
            code = 1 if rng.random() < 0.1 else 0
            row("tool", orjson.dumps({"output": output, "exit_code": code, "error": None}).decode(),
                tool_call_id=call, tool_name="terminal")
    conn.execute("INSERT INTO sessions (id, source, model, model_config, started_at, ended_at, end_reason, message_count, "
                 "tool_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
                 "cwd, billing_provider, title, api_call_count) VALUES (?, 'cli', ?, ?, ?, ?, 'cli_close', ?, ?, ?, ?, ?, 0, "
                 "?, ?, ?, ?, ?)",
                 (sid, model, '{"max_iterations": 90, "reasoning_config": null, "max_tokens": null}', t0 / 1000, t / 1000,
                  count, calls, totals["input"], totals["output"], totals["read"], totals["reasoning"], cwd, provider,
                  title, totals["calls"]))  # fmt: skip
    conn.execute("INSERT INTO session_model_usage (session_id, model, billing_provider, api_call_count, input_tokens, "
                 "output_tokens, cache_read_tokens, reasoning_tokens, cost_status, cost_source, first_seen, last_seen) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'unknown', 'none', ?, ?)",
                 (sid, model, provider, totals["calls"], totals["input"], totals["output"], totals["read"],
                  totals["reasoning"], t0 / 1000, t / 1000))  # fmt: skip
    return size, t


def copilot_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    model = rng.choice(COPILOT_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = uuid4(rng)
    folder = root / ".copilot" / "session-state" / sid
    out = Out(stats, root, folder / "events.jsonl", "copilot")
    stats.session("copilot", t0, model, cwd)
    t = t0
    parent: list[str | None] = [None]
    byok = rng.random() < 0.3

    def event(kind: str, data: dict[str, Any]) -> None:
        nonlocal t
        t += rng.randint(2, 3000)
        eid = uuid4(rng)
        out.w({"type": kind, "data": data, "id": eid, "timestamp": iso_ms(t), "parentId": parent[0]})
        parent[0] = eid

    event("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
                            "startTime": iso_ms(t0), "selectedModel": model, "context": {"cwd": cwd, "gitRoot": cwd, "branch": "main"}})
    first = pools.text(rng, 10, 300)
    prompt = first
    n_prompt = 0
    requests = 0
    while out.bytes < target or n_prompt == 0:
        interaction = uuid4(rng)
        event("user.message", {"content": prompt, "transformedContent": f"<current_datetime>{iso_ms(t)}</current_datetime>\n\n{prompt}",
                               "messageId": uuid4(rng), "interactionId": interaction, "turnId": "0"})
        if n_prompt == 0:
            event("system.message", {"role": "system", "content": COPILOT_SYSTEM_PROMPT})
        n_prompt += 1
        for turn in range(1 + min(int(rng.expovariate(0.5)), 8)):
            event("assistant.turn_start", {"turnId": str(turn), "interactionId": interaction})
            call_id = "call_" + alnum(rng, 24)
            final = rng.random() < 0.3 or turn == 8
            api_call = "chatcmpl-" + alnum(rng, 24)
            inp = rng.randint(2_000, 60_000)
            requests += 1
            event("session.usage_record", {"usage": {
                "model": model, "inputTokens": inp, "outputTokens": rng.randint(20, 2_000), "cacheReadTokens": inp * rng.randint(0, 9) // 10,
                "cacheWriteTokens": 0, "reasoningTokens": 0, "cost": 0.0 if byok else 1.0, "initiator": "user" if turn == 0 else "agent",
                "isByok": byok, "apiCallId": api_call}})
            data: dict[str, Any] = {"messageId": uuid4(rng), "model": model, "content": pools.text(rng, 20, 800) if final or rng.random() < 0.4 else "",
                                    "toolRequests": [] if final else [{"toolCallId": call_id, "name": "bash", "type": "function", "arguments": {
                                        "command": rng.choice(("ls", "make test", "git diff")) + f" {rng.choice(VOCAB[:200])}", "description": "Run a command"}}],
                                    "interactionId": interaction, "turnId": str(turn), "apiCallId": api_call}
            if rng.random() < 0.3:
                data["reasoningText"] = pools.text(rng, 20, 300)
            event("assistant.message", data)
            if not final:
                event("tool.execution_start", {"toolCallId": call_id, "toolName": "bash", "arguments": data["toolRequests"][0]["arguments"]})
                code = rng.choice((0, 0, 0, 1))
                event("tool.execution_complete", {"toolCallId": call_id, "model": model, "interactionId": interaction, "turnId": str(turn),
                                                  "shellExecution": {"exitCode": code}, "success": True, "result": {
                                                      "content": pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
                                                      + f"\n<shellId: {turn} completed with exit code {code}>"}})
            event("assistant.turn_end", {"turnId": str(turn)})
            if final:
                break
        prompt = pools.text(rng, 10, 300)
    event("session.shutdown", {"accountingSnapshot": {"totalUserRequests": n_prompt, "modelMetrics": {model: {"requests": {"count": requests}}}}})
    out.close(t)
    name = first[:60].replace("'", "''").replace("\n", " ")
    write_text_file(stats, root, folder / "workspace.yaml", "copilot",
                    f"id: {sid}\ncwd: {cwd}\nclient_name: github/cli\nname: '{name}'\nuser_named: false\nsummary_count: 0\n"
                    f"fork_count: 0\ncreated_at: {iso_ms(t0)}\nupdated_at: {iso_ms(t)}\n", t)


CLINE_MODELS = ("anthropic/claude-sonnet-4.5", "gpt-5-mini", "qwen3-coder")
CLINE_SYSTEM_PROMPT = "You are Cline, an AI coding agent.\n" + " ".join(VOCAB[120:380])


def cline_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    """Cline CLI 3.0.65: ``~/.cline/data/sessions/<id>/<id>.messages.json`` (one JSON document,
    indented by two spaces, as the client rewrites it) and the ``<id>.json`` manifest."""
    model = rng.choice(CLINE_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = f"{t0}_{alnum(rng, 5).lower()}"
    stats.session("cline", t0, model, cwd)
    t = t0
    messages: list[dict[str, Any]] = []
    size = 0
    first = pools.text(rng, 10, 300)
    prompt = first
    while size < target or not messages:
        start = len(messages)
        t += rng.randint(2_000, 600_000)
        messages.append({"id": uuid4(rng), "role": "user", "ts": t,
                         "content": [{"type": "text", "text": f'<user_input mode="act">{prompt}</user_input>'}]})
        for turn in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or turn == 8
            t += rng.randint(500, 30_000)
            content: list[dict[str, Any]] = []
            if rng.random() < 0.3:
                content.append({"type": "thinking", "thinking": pools.text(rng, 20, 300)})
            if final or rng.random() < 0.4:
                content.append({"type": "text", "text": pools.text(rng, 20, 800)})
            call = "call_" + alnum(rng, 24)
            command = rng.choice(("ls", "make test", "git diff")) + f" {rng.choice(VOCAB[:200])}"
            if not final:
                content.append({"type": "tool_use", "id": call, "name": "run_commands", "input": {"commands": [command]}})
            inp = rng.randint(2_000, 60_000)
            messages.append({"id": "msg_" + alnum(rng, 8), "role": "assistant", "content": content, "ts": t,
                             "modelInfo": {"id": model, "provider": "cline"},
                             "metrics": {"inputTokens": inp, "outputTokens": rng.randint(20, 2_000),
                                         "cacheReadTokens": inp * rng.randint(0, 9) // 10, "cacheWriteTokens": 0}})
            if final:
                break
            t += rng.randint(100, 20_000)
            out = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
            messages.append({"id": "msg_" + alnum(rng, 8), "role": "user", "ts": t, "content": [
                {"type": "tool_result", "tool_use_id": call, "name": "run_commands",
                 "content": [{"query": command, "result": out, "success": True}]}]})
        size += sum(len(orjson.dumps(m)) for m in messages[start:])
        prompt = pools.text(rng, 10, 300)
    folder = root / ".cline" / "data" / "sessions" / sid
    doc = {"version": 1, "updated_at": iso_ms(t), "agent": "lead", "sessionId": sid,
           "origin": {"source": "cli", "mode": "user", "sessionId": sid, "version": "3.0.65"},
           "messages": messages, "system_prompt": CLINE_SYSTEM_PROMPT + f"\n4. Working Directory: {cwd}\n"}
    write_text_file(stats, root, folder / f"{sid}.messages.json", "cline",
                    orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode(), t)
    manifest = {"version": 1, "session_id": sid, "source": "cli", "pid": rng.randint(1000, 60000),
                "started_at": iso_ms(t0), "ended_at": iso_ms(t), "exit_code": 0, "status": "completed",
                "interactive": False, "provider": "cline", "model": model, "cwd": cwd, "workspace_root": cwd,
                "enable_tools": True, "enable_spawn": True, "enable_teams": True, "prompt": first,
                "metadata": {"sessionHistoryOrigin": {"mode": "user", "version": "3.0.65"}, "title": first[:80]}}
    write_text_file(stats, root, folder / f"{sid}.json", "cline", orjson.dumps(manifest, option=orjson.OPT_INDENT_2).decode(), t)


# ---------------------------------------------------------------------------------------
# OpenClaw, Mistral Vibe, Factory Droid and Kimi CLI (issue 35): shapes from the recordings
# in tests/fixtures/{openclaw,vibe,factory-droid,kimi} and tests/fixtures/recorded/.

OPENCLAW_MODELS = (("anthropic", "claude-sonnet-4-5", "anthropic-messages"), ("openai", "gpt-5.1", "openai-responses"),
                   ("ollama", "qwen3-coder:30b", "openai-completions"))
OPENCLAW_SCHEMA = """
    CREATE TABLE transcript_events (
      session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
      event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)) STRICT;
    CREATE TABLE trajectory_runtime_events (
      session_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT, event_json TEXT NOT NULL,
      created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;
    BEGIN;"""


def _openclaw_events(pools: Pools, rng: Random, *, target: int, t0: int, sid: str, v4: bool) -> Iterator[tuple[int, bytes]]:
    """One OpenClaw session's entries, as (time, line without newline): pi's session format
    (``version`` 3 in 2026.7.1, 4 with uuid entry ids in 2026.9.6), ``__openclaw`` marks,
    ``custom`` runtime entries, the ``exec`` shell tool (tests/fixtures/openclaw)."""
    provider, model, api = rng.choice(OPENCLAW_MODELS)
    cwd = rng.choice(PROJECTS)
    t = t0
    size = 0
    parent: list[str | None] = [None]

    def entry(kind: str, **body: Any) -> tuple[int, bytes]:
        nonlocal t, size
        t += rng.randint(5, 4000)
        eid = uuid4(rng) if v4 else hexs(rng, 8)
        b = orjson.dumps({"type": kind, "id": eid, "parentId": parent[0], "timestamp": iso_ms(t), **body})
        parent[0] = eid
        size += len(b) + 1
        return t, b

    header = orjson.dumps({"type": "session", "version": 4 if v4 else 3, "id": sid, "timestamp": iso_ms(t), "cwd": cwd})
    yield t, header
    yield entry("model_change", provider=provider, modelId=model)
    yield entry("thinking_level_change", thinkingLevel=rng.choice(("off", "low", "medium")))
    yield entry("custom", customType="model-snapshot", data={"timestamp": t, "provider": provider, "modelApi": api,
                                                             "modelId": model})
    while size < target:
        run = uuid4(rng)
        mark = {"__openclaw": {"senderIsOwner": True}, "idempotencyKey": f"{uuid4(rng)}:user"} if v4 else {}
        yield entry("message", message={"role": "user", "content": pools.text(rng, 10, 400), "timestamp": t, **mark})
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append({"type": "thinking", "thinking": pools.text(rng, 20, 300), "thinkingSignature": "reasoning_content"})
            if final or rng.random() < 0.4:
                content.append({"type": "text", "text": pools.text(rng, 20, 800)})
            call = None if final else "call_" + hexs(rng, 24)
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
            if call:
                content.append({"type": "toolCall", "id": call, "name": "exec", "arguments": {"command": cmd}})
            inp, out = rng.randint(2_000, 60_000), rng.randint(20, 2_000)
            read = inp * rng.randint(0, 9) // 10
            msg = {"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
                   "usage": {"input": inp - read, "output": out, "cacheRead": read, "cacheWrite": 0, "reasoningTokens": 0,
                             "totalTokens": inp + out, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                                                 "total": 0}},
                   "stopReason": "toolUse" if call else "stop", "timestamp": t, "responseId": "chatcmpl-" + hexs(rng, 24)}
            if v4:
                msg["__openclaw"] = {"runId": run}
            yield entry("message", message=msg)
            if call is None:
                break
            text = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
            code = 1 if rng.random() < 0.1 else 0
            result = {"role": "toolResult", "toolCallId": call, "toolName": "exec", "content": [{"type": "text", "text": text}],
                      "details": {"status": "completed", "exitCode": code, "exitSignal": None, "exitReason": "exit",
                                  "durationMs": rng.randint(5, 20_000), "aggregated": text, "noOutputTimedOut": False,
                                  "cwd": cwd},
                      "isError": False, "timestamp": t}
            if v4:
                result["__openclaw"] = {"runId": run}
            yield entry("message", message=result)
        yield entry("custom", customType="openclaw:bootstrap-context:full", data={"timestamp": t, "runId": run, "sessionId": sid})


def openclaw_files(pools: Pools, stats: Stats, root: Path, seed: int, budget: int) -> None:
    """OpenClaw, both generations, half the budget each: 2026.7.1's JSON Lines files
    (``~/.openclaw/agents/main/sessions/<id>.jsonl`` beside the ``sessions.json`` index) and
    2026.9.6's store (``agents/main/agent/openclaw-agent.sqlite``: one ``transcript_events``
    row per entry; a row of 1 KiB or more without ``\\u`` escapes is stored zstd-compressed,
    level 1, when that saves a tenth, as the client's ``prepareTranscriptPayload`` does; its
    ``navigation_json`` here is ``{}``, not the client's projection, which the archive does not
    read). One job writes both, as OpenCode's database."""
    import zstandard

    base = root / ".openclaw" / "agents" / "main"
    index: dict[str, Any] = {}
    written, i, last = 0, 0, 0
    while written < budget // 2:  # 2026.7.1: one file a session
        rng = Random(f"{seed}:openclaw:{i}")
        t0 = session_start(rng, i)
        target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 10), budget // 2 - written + 3_000)
        sid = uuid4(rng)
        out = Out(stats, root, base / "sessions" / f"{sid}.jsonl", "openclaw")
        t = t0
        model = ""
        for t, line in _openclaw_events(pools, rng, target=target, t0=t0, sid=sid, v4=False):
            out.raw(line + b"\n")
            model = model or (orjson.loads(line).get("modelId") or "")
        stats.session("openclaw", t0, model, None)
        out.close(t)
        written += out.bytes
        last = max(last, t)
        index[f"agent:main:{sid}"] = {"sessionId": sid, "updatedAt": t, "sessionFile": f"/home/dev/.openclaw/agents/main/sessions/{sid}.jsonl"}
        i += 1
    write_text_file(stats, root, base / "sessions" / "sessions.json", "openclaw",
                    orjson.dumps(index, option=orjson.OPT_INDENT_2).decode(), last)
    path = base / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(OPENCLAW_SCHEMA)
    zc = zstandard.ZstdCompressor(level=1)
    stored = 0
    while stored < budget - budget // 2:  # 2026.9.6: rows in its database
        rng = Random(f"{seed}:openclaw:{i}")
        t0 = session_start(rng, i)
        target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 10),
                     budget - budget // 2 - stored + 3_000)
        sid = uuid4(rng)
        model = ""
        for seq, (t, line) in enumerate(_openclaw_events(pools, rng, target=target, t0=t0, sid=sid, v4=True)):
            model = model or (orjson.loads(line).get("modelId") or "")
            packed = zc.compress(line) if len(line) >= 1024 and b"\\u" not in line and seq else None
            if packed is not None and len(packed) <= len(line) - max(64, -(-len(line) // 10)):
                conn.execute("INSERT INTO transcript_events VALUES (?, ?, NULL, ?, ?, ?, '{}')",
                             (sid, seq, t, packed, len(line)))
                stored += len(packed)
            else:
                conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?, NULL, ?, NULL)",
                             (sid, seq, line.decode(), t, len(line)))
                stored += len(line)
            last = max(last, t)
        stats.session("openclaw", t0, model, None)
        i += 1
    conn.execute("COMMIT")
    conn.close()
    os.utime(path, ns=(last * 1_000_000, last * 1_000_000))
    d = stats.vendor("openclaw")
    d["files"] += 1
    d["bytes"] += path.stat().st_size
    stats.largest = max(stats.largest, (path.stat().st_size, path.relative_to(root).as_posix()))
    stats.last_ms = max(stats.last_ms, last)


VIBE_MODELS = (("mistral-medium-latest", "devstral-medium"), ("devstral-small", "devstral-small-latest"),
               ("local", "qwen3-coder"))


def _vibe_meta(sid: str, cwd: str, t0: int, t: int, alias: str, model: str, title: str | None,
               legacy: dict[str, int] | None = None) -> str:
    def ts(ms: int) -> str:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat()
    meta = {"session_id": sid, "parent_session_id": None, "start_time": ts(t0), "end_time": ts(t), "git_commit": None,
            "git_branch": None, "environment": {"working_directory": cwd}, "origin_directory": cwd, "username": "dev",
            "child_sessions": [], "loops": [], "title": title, "title_source": "auto", "bumped_at": ts(t),
            "pinned_at": None, "archived_at": None, "unseen_at": None, "seen_at": None, "experiments": None,
            "config": {"active_model": alias, "model_name": model}, "import_provenance": None,
            "created_worktree": None, "artifacts": []}
    if legacy is not None:  # 2.x: the models table, the session's totals and message count
        meta["config"] = {"active_model": alias, "models": {alias: {"name": model, "provider": "mistral", "alias": alias}}}
        del meta["artifacts"]
        meta["stats"] = {"steps": legacy["steps"], "session_prompt_tokens": legacy["prompt"],
                         "session_completion_tokens": legacy["completion"], "session_cached_tokens": legacy["cached"],
                         "session_total_llm_tokens": legacy["prompt"] + legacy["completion"]}
        meta["total_messages"] = legacy["messages"]
    return orjson.dumps(meta, option=orjson.OPT_INDENT_2).decode()


def vibe_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int, legacy: bool) -> None:
    """Mistral Vibe. ``legacy``: 2.x's ``logs/session/session_<stamp>_<id8>/messages.jsonl``
    (OpenAI-style messages with ``injected`` and ``message_id``) and ``meta.json``; else 3.0.3's
    unified store, ``logs/session/unified/<uuid>/journal/0000000000000001.jsonl`` (the
    hash-chained recovery journal of a session not yet snapshotted: turn commands, core inputs,
    projection deltas, action intents and results, receipts) and ``meta.json``. Record hashes are
    sha256 of the record without its hash, not Vibe's canonical form (the archive does not check them)."""
    import hashlib

    alias, model = rng.choice(VIBE_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = uuid4(rng)
    stats.session("vibe", t0, model, cwd)
    t = t0
    first = pools.text(rng, 10, 300)
    session_dir = root / ".vibe" / "logs" / "session"
    if legacy:
        stamp = _dt.datetime.fromtimestamp(t0 / 1000, tz=_dt.timezone.utc).strftime("%Y%m%d_%H%M%S")
        folder = session_dir / f"session_{stamp}_{sid[:8]}"
        out = Out(stats, root, folder / "messages.jsonl", "vibe")
        prompt = first
        totals = {"steps": 0, "prompt": 0, "completion": 0, "cached": 0}
        while out.bytes < target:
            t += rng.randint(2_000, 600_000)
            out.w({"role": "user", "content": prompt, "injected": False, "message_id": uuid4(rng)})
            for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
                final = rng.random() < 0.3 or step == 8
                t += rng.randint(500, 30_000)
                msg: dict[str, Any] = {"role": "assistant"}
                if final or rng.random() < 0.4:
                    msg["content"] = pools.text(rng, 20, 800)
                msg["injected"] = False
                if rng.random() < 0.4:
                    msg["reasoning_content"] = pools.text(rng, 20, 300)
                    msg["reasoning_message_id"] = uuid4(rng)
                call = "call_" + hexs(rng, 24)
                cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
                if not final:
                    msg["tool_calls"] = [{"id": call, "index": 0, "function": {"name": "bash", "arguments": orjson.dumps(
                        {"command": cmd}).decode()}, "type": "function"}]
                msg["message_id"] = uuid4(rng)
                out.w(msg)
                inp = rng.randint(2_000, 60_000)
                totals["steps"] += 1
                totals["prompt"] += inp
                totals["cached"] += inp * rng.randint(0, 9) // 10
                totals["completion"] += rng.randint(20, 2_000)
                if final:
                    break
                t += rng.randint(100, 20_000)
                stdout = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
                code = 1 if rng.random() < 0.1 else 0
                out.w({"role": "tool", "content": f"command: {cmd}\nshell: \nexit_code: {code}\nstdout: {stdout}\n\nstderr: \n"
                                                  f"returncode: {code}", "injected": False, "name": "bash", "tool_call_id": call,
                       "tool_result": {"output": {"command": cmd, "shell": "", "exit_code": code, "stdout": stdout,
                                                  "stderr": "", "returncode": code},
                                       "duration": rng.random(), "cancelled": False}})
            prompt = pools.text(rng, 10, 300)
        out.close(t)
        write_text_file(stats, root, folder / "meta.json", "vibe",
                        _vibe_meta(sid, cwd, t0, t, alias, model, None, {**totals, "messages": out.lines}), t)
        return
    folder = session_dir / "unified" / sid
    out = Out(stats, root, folder / "journal" / "0000000000000001.jsonl", "vibe")
    seq = 0
    prev: list[str | None] = [None]
    watermark = 0

    def record(kind: str, payload: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        rec = {"payload": payload, "previous_record_sha256": prev[0], "recovery_journal_record_version": 1,
               "sequence": seq, "type": kind}
        digest = hashlib.sha256(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)).hexdigest()
        rec["record_sha256"] = digest
        prev[0] = digest
        out.w(dict(sorted(rec.items())))

    def delta(entries: list[dict[str, Any]], turn: str, user_id: str) -> None:
        nonlocal watermark
        watermark += 1
        ops: list[dict[str, Any]] = [{"entry": e, "op": "append_entry"} for e in entries]
        ops.append({"op": "set_envelope", "state": {"format": "harness.public-session-state/v1", "latestTurn": {
            "id": turn, "inputEntryId": user_id, "sessionId": sid, "startedAt": t, "status": "in_progress"},
            "session": {"createdAt": t0, "id": sid, "parentSessionId": None, "preview": first[:120], "rootSessionId": sid,
                        "title": None, "titleSource": "auto", "updatedAt": t}}})
        record("projection_delta", {"delta": ops, "watermark": watermark})

    prompt = first
    n_input = 0
    while out.bytes < target:
        t += rng.randint(2_000, 600_000)
        turn = "turn-" + hexs(rng, 32)
        message = [{"text": prompt, "type": "text"}]
        record("command_reserved", {"abandon_on_restart": True, "client_command_id": turn, "method": "turn/start",
                                    "params": {"injected": False, "message": message, "sessionId": sid},
                                    "params_sha256": hexs(rng, 64)})
        n_input += 1
        record("core_input", {"input": {"command": {"content": message, "mode": "queue", "turn_id": turn, "type": "user_message"},
                                        "determinism": {"random_seed": rng.randint(0, 2**32 - 1), "time_unix_ms": t},
                                        "input_id": n_input, "protocol_version": 1}, "transition_sha256": hexs(rng, 64)})
        user_id = f"user-{turn}-{n_input}"
        delta([{"content": message, "createdAt": t, "generationStatus": "completed", "id": user_id, "inputEntryId": None,
                "relatedEntryId": None, "role": "user", "sessionId": sid, "source": "turn_start", "turnId": turn,
                "type": "message", "updatedAt": t}], turn, user_id)
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            action = uuid4(rng)
            record("action_intent", {"action_id": action, "kind": "completion", "lease_id": action,
                                     "recovery_mode": "reconnect_or_fail", "request": {"action_id": action, "iteration": step,
                                                                                        "max_iterations": 1000, "model": model},
                                     "request_sha256": hexs(rng, 64)})
            t += rng.randint(500, 30_000)
            parts: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                parts.append({"content": [{"text": pools.text(rng, 20, 300), "type": "text"}], "type": "reasoning"})
            if final or rng.random() < 0.4:
                parts.append({"text": pools.text(rng, 20, 800), "type": "text"})
            call = "call_" + hexs(rng, 24)
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
            if not final:
                parts.append({"arguments_json": orjson.dumps({"command": cmd}).decode(), "id": call, "name": "bash",
                              "type": "tool_call"})
            inp, outn = rng.randint(2_000, 60_000), rng.randint(20, 2_000)
            usage = {"cache_write_tokens": 0, "cached_input_tokens": inp * rng.randint(0, 9) // 10, "input_tokens": inp,
                     "output_tokens": outn, "reasoning_tokens": 0, "total_tokens": inp + outn}
            record("action_result", {"action_id": action, "result": {"action_id": action, "result": {
                "finish_reason": "stop" if final else "tool_call", "parts": parts, "usage": usage},
                "type": "completion_succeeded"}, "state": "succeeded"})
            if final:
                break
            tool = uuid4(rng)
            record("action_intent", {"action_id": tool, "kind": "tool", "lease_id": tool, "recovery_mode": "fail", "request": {
                "action_id": tool, "call": {"arguments": {"command": cmd, "timeout_seconds": 120}, "name": "file_system.bash",
                                            "type": "runtime_builtin"}, "call_id": call, "turn_id": turn,
                "type": "runtime_builtin_tool_call"}, "request_sha256": hexs(rng, 64)})
            t += rng.randint(100, 20_000)
            code = 1 if rng.random() < 0.1 else 0
            record("action_result", {"action_id": tool, "result": {"action_id": tool, "call_id": call, "result": {
                "content": [], "structured_content": {"command": cmd, "returncode": code, "stderr": "", "stdout": pools.code_text(
                    rng, output_size(rng, max(2_000, target // 4))), "timed_out": False, "was_truncated": False},
                "type": "success"}, "type": "tool_succeeded"}, "state": "succeeded"})
        record("receipt_succeeded", {"client_command_id": turn, "response": {}})
        prompt = pools.text(rng, 10, 300)
    out.close(t)
    write_text_file(stats, root, folder / "meta.json", "vibe", _vibe_meta(sid, cwd, t0, t, alias, model, None), t)


DROID_MODELS = ("claude-sonnet-4-5-20250929", "gpt-5-codex", "custom:Qwen3-Coder-0")


def droid_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    """Factory Droid 0.225.2: ``~/.factory/sessions/<cwd slug>/<uuid>.jsonl`` (``session_start``,
    ``message`` records with Claude-style blocks, ``agent_turn_outcome``) and the
    ``<uuid>.settings.json`` beside it (model, token totals; the only usage Droid writes)."""
    model = rng.choice(DROID_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = uuid4(rng)
    folder = root / ".factory" / "sessions" / cwd.replace("/", "-")
    out = Out(stats, root, folder / f"{sid}.jsonl", "factory_droid")
    stats.session("factory_droid", t0, model, cwd)
    first = pools.text(rng, 10, 300)
    out.w({"type": "session_start", "id": sid, "title": first[:80], "owner": "unknown", "version": 2, "cwd": cwd,
           "hostId": uuid4(rng), "isSessionTitleManuallySet": False})
    t = t0
    parent: list[str | None] = [None]
    totals = {"inputTokens": 0, "outputTokens": 0, "cacheCreationTokens": 0, "cacheReadTokens": 0, "thinkingTokens": 0}

    def message(role: str, content: list[dict[str, Any]], **extra: Any) -> None:
        mid = uuid4(rng)
        rec: dict[str, Any] = {"type": "message", "id": mid}
        if parent[0] is not None:
            rec["parentId"] = parent[0]
        rec["timestamp"] = iso_ms(t)
        rec["message"] = {"role": role, "content": content, **extra}
        out.w(rec)
        parent[0] = mid

    prompt = first
    while out.bytes < target:
        t += rng.randint(2_000, 600_000)
        turn = uuid4(rng)
        message("user", [{"type": "text", "text": prompt}], interactionMode="auto")
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            t += rng.randint(500, 30_000)
            content: list[dict[str, Any]] = []
            if rng.random() < 0.3:
                content.append({"type": "thinking", "signature": "reasoning_content", "durationMs": rng.randint(5, 9000),
                                "thinking": pools.text(rng, 20, 300)})
            if final or rng.random() < 0.4:
                content.append({"type": "text", "text": pools.text(rng, 20, 800)})
            call = "call_" + hexs(rng, 24)
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
            if not final:
                content.append({"type": "tool_use", "id": call, "name": "Execute",
                                "input": {"command": cmd, "riskLevel": "low", "riskLevelReason": "reads files"}})
            inp = rng.randint(2_000, 60_000)
            totals["inputTokens"] += inp
            totals["outputTokens"] += rng.randint(20, 2_000)
            message("assistant", content, openaiMessageId="chatcmpl-" + hexs(rng, 24), modelId=model, reasoningEffort="none")
            if final:
                break
            t += rng.randint(100, 20_000)
            code = 1 if rng.random() < 0.1 else 0
            message("user", [{"type": "tool_result", "tool_use_id": call, "is_error": bool(code), "content": pools.code_text(
                rng, output_size(rng, max(2_000, target // 4))) + f"\n\n\n[Process exited with code {code}]"}])
        out.w({"type": "agent_turn_outcome", "turnId": turn, "reason": "completed", "resultKind": "text"})
        prompt = pools.text(rng, 10, 300)
    out.close(t)
    settings = {"assistantActiveTimeMs": t - t0, "model": model, "reasoningEffort": "none", "interactionMode": "auto",
                "autonomyLevel": "high", "autonomyMode": "auto-high", "tokenUsage": {**totals, "factoryCredits": 0},
                "inclusiveTokenUsage": {**totals, "factoryCredits": 0}}
    write_text_file(stats, root, folder / f"{sid}.settings.json", "factory_droid",
                    orjson.dumps(settings, option=orjson.OPT_INDENT_2).decode(), t)


KIMI_MODELS = ("kimi-k2-turbo-preview", "kimi-k2-0905-preview", "kimi-for-coding")
KIMI_SYSTEM_PROMPT = "You are Kimi Code CLI, an interactive general AI agent running on a user's computer.\n" + " ".join(VOCAB[60:300])


def kimi_session(pools: Pools, stats: Stats, root: Path, rng: Random, *, target: int, t0: int) -> None:
    """Kimi CLI 1.51.0: ``~/.kimi/sessions/<md5 of the work folder>/<uuid>/`` with
    ``context.jsonl`` (the messages, ``_checkpoint`` and ``_usage`` lines; the system prompt
    names the cwd), ``wire.jsonl`` (the UI events: turns, steps, content parts, tool calls and
    results, ``StatusUpdate`` usage per step) and ``state.json``."""
    import hashlib
    import json

    model = rng.choice(KIMI_MODELS)
    cwd = rng.choice(PROJECTS)
    sid = uuid4(rng)
    folder = root / ".kimi" / "sessions" / hashlib.md5(cwd.encode()).hexdigest() / sid
    ctx = Out(stats, root, folder / "context.jsonl", "kimi")
    wire = Out(stats, root, folder / "wire.jsonl", "kimi")
    stats.session("kimi", t0, model, cwd)
    checkpoint, tokens = 0, 0

    def side(obj: dict[str, Any]) -> None:  # its own lines: json.dumps (soul/context.py); messages: pydantic's JSON
        ctx.raw((json.dumps(obj) + "\n").encode())

    side({"role": "_system_prompt", "content": KIMI_SYSTEM_PROMPT + f"\n\nThe current working directory is `{cwd}`."})

    side({"role": "_checkpoint", "id": checkpoint})
    t = t0
    wire.raw(b'{"type": "metadata", "protocol_version": "1.10"}\n')

    def event(kind: str, payload: dict[str, Any]) -> None:
        nonlocal t
        t += rng.randint(5, 3000)
        wire.raw((json.dumps({"timestamp": t / 1000, "message": {"type": kind, "payload": payload}}, ensure_ascii=False)
                  + "\n").encode())  # wire/file.py: json.dumps(ensure_ascii=False)

    prompt = pools.text(rng, 10, 300)
    while ctx.bytes + wire.bytes < target:
        t += rng.randint(2_000, 600_000)
        event("TurnBegin", {"user_input": prompt})
        ctx.w({"role": "user", "content": prompt})
        checkpoint += 1
        side({"role": "_checkpoint", "id": checkpoint})
        for step in range(1 + min(int(rng.expovariate(0.5)), 8)):
            final = rng.random() < 0.3 or step == 8
            event("StepBegin", {"n": step + 1})
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append({"type": "think", "think": pools.text(rng, 20, 300), "encrypted": None})
            if final or rng.random() < 0.4:
                content.append({"type": "text", "text": pools.text(rng, 20, 800)})
            for part in content:
                event("ContentPart", part)
            msg: dict[str, Any] = {"role": "assistant", "content": content}
            call = "call_" + hexs(rng, 24)
            cmd = rng.choice(("ls", "cat README.md", "make test", "git status")) + f" {rng.choice(VOCAB[:200])}"
            if not final:
                msg["tool_calls"] = [{"type": "function", "id": call, "function": {
                    "name": "Shell", "arguments": json.dumps({"command": cmd})}}]
                event("ToolCall", {**msg["tool_calls"][0], "extras": None})
            inp, outn = rng.randint(2_000, 60_000), rng.randint(20, 2_000)
            read = inp * rng.randint(0, 9) // 10
            tokens = inp + outn
            event("StatusUpdate", {"context_usage": tokens / 262144, "context_tokens": inp, "max_context_tokens": 262144,
                                   "token_usage": {"input_other": inp - read, "output": outn, "input_cache_read": read,
                                                   "input_cache_creation": 0},
                                   "message_id": "chatcmpl-" + hexs(rng, 24), "plan_mode": False, "mcp_status": None})
            side({"role": "_usage", "token_count": inp})
            ctx.w(msg)
            side({"role": "_usage", "token_count": tokens})
            if final:
                break
            output = pools.code_text(rng, output_size(rng, max(2_000, target // 4)))
            event("ToolResult", {"tool_call_id": call, "return_value": {"is_error": False, "output": output,
                                                                        "message": "Command executed successfully.",
                                                                        "display": [], "extras": None}})
            ctx.w({"role": "tool", "content": [{"type": "text", "text": "<system>Command executed successfully.</system>"},
                                               {"type": "text", "text": output}], "tool_call_id": call})
            checkpoint += 1
            side({"role": "_checkpoint", "id": checkpoint})
        event("TurnEnd", {})
        prompt = pools.text(rng, 10, 300)
    ctx.close(t)
    wire.close(t)
    state = {"version": 1, "approval": {"yolo": False, "afk": False, "auto_approve_actions": []}, "additional_dirs": [],
             "custom_title": None, "title_generated": False, "title_generate_attempts": 0, "plan_mode": False,
             "plan_session_id": None, "plan_slug": None, "wire_mtime": None, "archived": False, "archived_at": None,
             "auto_archive_exempt": False, "todos": []}
    write_text_file(stats, root, folder / "state.json", "kimi", orjson.dumps(state, option=orjson.OPT_INDENT_2).decode(), t)


def write_text_file(stats: Stats, root: Path, path: Path, vendor: str, text: str, mtime_ms: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    d = stats.vendor(vendor)
    d["files"] += 1
    d["bytes"] += len(data)
    stats.largest = max(stats.largest, (len(data), path.relative_to(root).as_posix()))
    stats.last_ms = max(stats.last_ms, mtime_ms)


# ---------------------------------------------------------------------------------------
# Corpus driver.


def session_start(rng: Random, i: int) -> int:
    # Uniform over the year before the reference date, leaving room for the session itself.
    # Each vendor's first session is recent, so 30-day stats have data even in tiny corpora.
    if i == 0:
        return END_MS - rng.randrange(3 * DAY_MS, 20 * DAY_MS)
    return END_MS - 365 * DAY_MS + rng.randrange(0, 363 * DAY_MS)


SHARD = 256 * MiB  # unit of parallel work; fixed, so the job list depends only on the size
_POOLS: Pools | None = None  # set before forking workers, so tasks do not pickle the pools


def run_job(root: Path, seed: int, vendor: str, shard: int, budget: int) -> Stats:
    """One independent slice of the corpus. Everything it draws is seeded by
    (seed, vendor, shard, session index), so jobs can run in any process, in any order."""
    pools = _POOLS
    assert pools is not None
    stats = Stats()
    first = shard == 0  # forced features (subagent, compaction, G3, archive, .bak) live here
    mark = Marker(f"{seed}:{vendor}:{shard}", stats, force_first=first and vendor == "claude_code")
    if vendor == "big":
        # The one huge Claude Code session: long-running, many compactions, streamed.
        rng = Random(f"{seed}:claude-big")
        claude_session(pools, stats, root, rng, mark, target=budget, t0=END_MS - 40 * DAY_MS,
                       force_sub=True, force_compact=True, force_image=True, trunk_only=True)
        return stats
    if vendor == "opencode":  # one database, written by one job
        opencode_db(pools, stats, root, seed, budget)
        return stats
    if vendor == "hermes":  # one database too
        hermes_db(pools, stats, root, seed, budget)
        return stats
    if vendor == "openclaw":  # one database and the JSONL files beside it
        openclaw_files(pools, stats, root, seed, budget)
        return stats
    tag = vendor if shard == 0 else f"{vendor}:{shard}"
    i = 0
    while stats.vendor(vendor)["bytes"] < budget:
        rng = Random(f"{seed}:{tag}:{i}")
        remaining = budget - stats.vendor(vendor)["bytes"]
        k = i if first else i + 3  # only shard 0 gets the forced sessions 0..2
        if vendor == "claude_code":
            target = min(lognormal_bytes(rng, 80_000, 1.3, 3_000, 40 * MiB), max(20_000, budget // 5), remaining + 3_000)
            claude_session(pools, stats, root, rng, mark, target=target, t0=session_start(rng, k),
                           force_sub=k == 0, force_compact=k == 1, force_image=k == 0)
        elif vendor == "codex":
            target = min(lognormal_bytes(rng, 64_000, 1.3, 3_000, 30 * MiB), max(20_000, budget // 5), remaining + 3_000)
            g3 = k == 1 or (k != 0 and rng.random() < 0.45)
            archived = k == 2 or (k > 2 and rng.random() < 0.06)
            codex_session(pools, stats, root, rng, mark, target=target, t0=session_start(rng, k), g3=g3, archived=archived)
        elif vendor == "gemini":
            target = min(lognormal_bytes(rng, 60_000, 1.2, 3_000, 20 * MiB), max(20_000, budget // 5), remaining + 3_000)
            gemini_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "qwen":
            target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 20 * MiB), max(20_000, budget // 5), remaining + 3_000)
            qwen_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "pi":
            target = min(lognormal_bytes(rng, 40_000, 1.2, 2_000, 16 * MiB), max(10_000, budget // 5), remaining + 2_000)
            pi_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "copilot":
            target = min(lognormal_bytes(rng, 60_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), remaining + 3_000)
            copilot_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "cline":
            target = min(lognormal_bytes(rng, 60_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), remaining + 3_000)
            cline_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "vibe":  # 3.x's unified journal, and 2.x's messages.jsonl for one session in three
            target = min(lognormal_bytes(rng, 60_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), remaining + 3_000)
            vibe_session(pools, stats, root, rng, target=target, t0=session_start(rng, k), legacy=k == 1 or (k > 1 and rng.random() < 0.33))
        elif vendor == "factory_droid":
            target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), remaining + 3_000)
            droid_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        elif vendor == "kimi":
            target = min(lognormal_bytes(rng, 50_000, 1.2, 3_000, 16 * MiB), max(10_000, budget // 5), remaining + 3_000)
            kimi_session(pools, stats, root, rng, target=target, t0=session_start(rng, k))
        else:
            target = min(lognormal_bytes(rng, 24_000, 1.2, 1_500, 8 * MiB), max(10_000, budget // 5), remaining + 1_500)
            clm_session(pools, stats, root, rng, mark, target=target, t0=session_start(rng, k),
                        compacted=k == 0 or (k > 1 and rng.random() < 0.15))
        i += 1
    return stats


def build_manifest(stats: Stats, seed: int, size: int, big: int) -> dict[str, Any]:
    vendors = {k: stats.v[k] for k, _ in SHARES if k in stats.v}
    return {
        "generator": "scripts/gen_corpus.py",
        "format": 1,
        "seed": seed,
        "requested_bytes": size,
        "big_file_bytes_requested": big,
        "reference_date": iso_ms(END_MS),
        "total_bytes": sum(v["bytes"] for v in vendors.values()),
        "file_count": sum(v["files"] for v in vendors.values()),
        "line_count": sum(v["lines"] for v in vendors.values()),
        "sessions": sum(v["sessions"] for v in vendors.values()),
        "vendors": vendors,
        "sessions_last_30_days": stats.sessions_30d,
        "largest_file": {"path": stats.largest[1], "bytes": stats.largest[0]},
        "time_range": {"first": iso_ms(stats.first_ms), "last": iso_ms(stats.last_ms)},
        "models": sorted(stats.models),
        "projects": sorted(stats.projects),
        "markers": stats.markers,
        "appends": [],
    }


# Each vendor's share of the corpus, in percent of the bytes (the big file aside).
SHARES: tuple[tuple[str, int], ...] = (
    ("claude_code", 36), ("codex", 21), ("clm", 11), ("gemini", 6), ("qwen", 4), ("pi", 5), ("copilot", 4),
    ("opencode", 3), ("cline", 2), ("hermes", 2), ("openclaw", 2), ("vibe", 2), ("factory_droid", 1), ("kimi", 1))


def generate(root: Path, size: int, seed: int, big_mb: float | None) -> dict[str, Any]:
    big = int(big_mb * MiB) if big_mb is not None else (600 * MiB if size >= GiB else 0)
    if big > size:
        raise SystemExit(f"--big-file-mb ({big // MiB} MiB) is larger than --size")
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty; refusing to mix corpora")
    root.mkdir(parents=True, exist_ok=True)
    global _POOLS
    _POOLS = Pools(seed, small=size < 64 * MiB)
    # The big session's subagent and compaction files add about 8 % on top of its trunk.
    rest = max(0, size - big - big * 8 // 100)
    jobs: list[tuple[Path, int, str, int, int]] = []
    if big:
        jobs.append((root, seed, "big", 0, big))  # first: it is the longest job
    for vendor, share in SHARES:
        budget = rest * share // 100
        n = 1 if vendor in ("opencode", "hermes", "openclaw") else max(1, -(-budget // SHARD))  # one database
        jobs += [(root, seed, vendor, k, budget // n) for k in range(n)]
    stats = Stats()
    if size >= 64 * MiB:
        # Two worker processes (the machine has two cores). Results are merged in job order,
        # not completion order, so the manifest does not depend on scheduling.
        import multiprocessing as mp

        with mp.get_context("fork").Pool(2) as pool:
            for part in pool.starmap(run_job, jobs, chunksize=1):
                stats.merge(part)
    else:
        for job in jobs:
            stats.merge(run_job(*job))
    manifest = build_manifest(stats, seed, size, big)
    write_manifest(root, manifest)
    return manifest


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    path = root / MANIFEST
    path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | _NL))
    os.utime(path, ns=(END_MS * 1_000_000, END_MS * 1_000_000))  # deterministic, like the rest


# ---------------------------------------------------------------------------------------
# Append mode.


def reverse_lines(path: Path, chunk: int = MiB) -> Iterator[bytes]:
    """Complete lines of a file, last first, reading backwards (big files stay on disk)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        pos = f.tell()
        buf = b""
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            f.seek(pos)
            buf = f.read(step) + buf
            parts = buf.split(b"\n")
            buf = parts[0]
            for ln in reversed(parts[1:]):
                if ln:
                    yield ln
        if buf:
            yield buf


def _candidates(root: Path) -> list[Path]:
    found: list[Path] = []
    proj = root / ".claude" / "projects"
    if proj.is_dir():
        found += [p for p in proj.glob("*/*.jsonl")]
    sess = root / ".codex" / "sessions"
    if sess.is_dir():
        found += list(sess.glob("*/*/*/rollout-*.jsonl"))
    clm = root / ".local" / "state" / "clm"
    if clm.is_dir():
        found += list(clm.glob("*.jsonl"))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _append_claude(pools: Pools, rng: Random, path: Path, root: Path, budget: int) -> tuple[int, int, int]:
    env: dict[str, Any] | None = None
    last_ts = ""
    for ln in reverse_lines(path):
        d = orjson.loads(ln)
        if not last_ts and isinstance(d.get("timestamp"), str):
            last_ts = d["timestamp"]
        if "uuid" in d and "sessionId" in d and "cwd" in d and not d.get("isSidechain"):
            env = d
            break
    if env is None:
        return 0, 0, 0
    last_ts = last_ts or env["timestamp"]
    t = int(_dt.datetime.fromisoformat(last_ts.replace("Z", "+00:00")).timestamp() * 1000)
    stats = Stats()
    out = Out.__new__(Out)
    out.root, out.path, out.vendor, out.stats = root, path, "claude_code", stats
    out.f, out.bytes, out.lines, out.last_ms = open(path, "ab", buffering=MiB), 0, 0, t
    s = ClaudeSession(pools, rng, out, sid=env["sessionId"], cwd=env["cwd"], version=env.get("version", "2.1.81"),
                      branch=env.get("gitBranch", ""), model=rng.choice(CLAUDE_MODELS), t_ms=t, slug=env.get("slug"),
                      session_dir=path.parent / env["sessionId"], allow_sub=False, allow_compact=False, cap=max(2_000, budget // 8))
    s.last = env["uuid"]
    while out.bytes < budget:
        s.turn()
    out.f.close()
    return out.bytes, out.lines, out.last_ms


def _append_codex(pools: Pools, rng: Random, path: Path, root: Path, budget: int) -> tuple[int, int, int]:
    with open(path, "rb") as f:
        first = orjson.loads(f.readline())
    meta = first["payload"]
    g3 = "ordinal" in first
    last = None
    model = CODEX_MODELS[0]
    totals = None
    for ln in reverse_lines(path):
        d = orjson.loads(ln)
        if last is None:
            last = d
        pl = d.get("payload") or {}
        if totals is None and pl.get("type") == "token_count" and pl.get("info"):
            tu = pl["info"]["total_token_usage"]
            totals = [tu["input_tokens"], tu["cached_input_tokens"], tu["output_tokens"], tu["reasoning_output_tokens"]]
        if d.get("type") == "turn_context" and "model" in pl:
            model = pl["model"]
            break
    assert last is not None
    t = int(_dt.datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
    stats = Stats()
    out = Out.__new__(Out)
    out.root, out.path, out.vendor, out.stats = root, path, "codex", stats
    out.f, out.bytes, out.lines, out.last_ms = open(path, "ab", buffering=MiB), 0, 0, t
    s = CodexSession(pools, rng, out, g3=g3, sid=meta["id"], cwd=meta["cwd"], model=model, t_ms=t, mark=None,
                     cap=max(2_000, budget // 8), ordinal=(last.get("ordinal", -1) + 1) if g3 else 0, totals=totals)
    s.first_turn = False
    while out.bytes < budget:
        s.turn()
    out.f.close()
    return out.bytes, out.lines, out.last_ms


def _append_clm(pools: Pools, rng: Random, path: Path, root: Path, budget: int) -> tuple[int, int, int]:
    with open(path, "rb") as f:
        meta = orjson.loads(f.readline())
    stats = Stats()
    out = Out.__new__(Out)
    out.root, out.path, out.vendor, out.stats = root, path, "clm", stats
    out.f, out.bytes, out.lines, out.last_ms = open(path, "ab", buffering=MiB), 0, 0, 0
    s = ClmSession(pools, rng, meta.get("provider", "openai"), max(2_000, budget // 8))
    while out.bytes < budget:
        s.turn(out, None)
    out.f.close()
    return out.bytes, out.lines, out.last_ms


def append(root: Path, mb: float, n_files: int, seed: int | None) -> dict[str, Any]:
    mpath = root / MANIFEST
    manifest = orjson.loads(mpath.read_bytes()) if mpath.exists() else None
    if seed is None:
        seed = manifest["seed"] if manifest else 0
    cands = _candidates(root)
    if not cands:
        raise SystemExit(f"no session files under {root}")
    total = int(mb * MiB)
    # Interleave vendors so a handful of files still covers all three.
    by_vendor: dict[str, list[Path]] = {}
    for p in cands:
        rel = p.relative_to(root).as_posix()
        v = "claude_code" if rel.startswith(".claude/") else "codex" if rel.startswith(".codex/") else "clm"
        by_vendor.setdefault(v, []).append(p)
    pick_rng = Random(f"{seed}:append-pick:{n_files}:{len(cands)}")
    for v in by_vendor:
        pick_rng.shuffle(by_vendor[v])
    chosen: list[tuple[str, Path]] = []
    order = [v for v in ("claude_code", "codex", "clm") if v in by_vendor]
    k = 0
    while len(chosen) < min(n_files, len(cands)):
        v = order[k % len(order)]
        if by_vendor[v]:
            chosen.append((v, by_vendor[v].pop()))
        k += 1
    pools = Pools(seed, small=total < 64 * MiB)
    records = []
    done = 0
    for idx, (v, p) in enumerate(chosen):
        # Spread what is left over the files left, so one turn's overshoot is absorbed.
        per = max(1, (total - done) // (len(chosen) - idx))
        rel = p.relative_to(root).as_posix()
        with open(p, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            if size:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    continue  # torn tail: appending would glue onto a partial line
        rng = Random(f"{seed}:append:{rel}:{size}")
        fn = {"claude_code": _append_claude, "codex": _append_codex, "clm": _append_clm}[v]
        old_mtime_ms = p.stat().st_mtime_ns // 1_000_000
        nb, nl, last_ms = fn(pools, rng, p, root, per)
        # Deterministic mtime: the last appended timestamp, and always later than before.
        new_ms = max(last_ms, old_mtime_ms + 1000)
        os.utime(p, ns=(new_ms * 1_000_000, new_ms * 1_000_000))
        done += nb
        records.append({"path": rel, "vendor": v, "offset": size, "bytes": nb, "lines": nl})
        if manifest:
            vd = manifest["vendors"][v]
            vd["bytes"] += nb
            vd["lines"] += nl
            manifest["total_bytes"] += nb
            manifest["line_count"] += nl
    if manifest:
        manifest["appends"].append({"files": records, "bytes": sum(r["bytes"] for r in records)})
        write_manifest(root, manifest)
    return {"files": records, "bytes": sum(r["bytes"] for r in records)}


# ---------------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (use e.g. 2MB, 500MB, 1GB)")
    mult = {"": 1, "K": 1 << 10, "M": MiB, "G": GiB, "T": 1 << 40}[m.group(2).upper()]
    n = int(float(m.group(1)) * mult)
    if not 256 * 1024 <= n <= 8 * GiB:
        raise argparse.ArgumentTypeError("size must be between 256KB and 8GB")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path, help="synthetic home folder to create (or to append to)")
    ap.add_argument("--size", type=parse_size, help="approximate corpus size: 2MB, 500MB, 1GB, 5GB (binary units)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default 0; append mode defaults to the manifest's)")
    ap.add_argument("--big-file-mb", type=float, default=None,
                    help="size of the one huge Claude Code session (default 600 when --size >= 1GB, else none)")
    ap.add_argument("--append-mb", type=float, default=None, help="append mode: about this many MiB of new lines")
    ap.add_argument("--append-files", type=int, default=10, help="append mode: number of session files to grow")
    args = ap.parse_args(argv)
    started = time.perf_counter()  # for the stderr report only; never written to a file
    if args.append_mb is not None:
        res = append(args.out_dir, args.append_mb, args.append_files, args.seed)
        took = time.perf_counter() - started
        print(f"appended {res['bytes']} bytes to {len(res['files'])} files in {took:.2f}s", file=sys.stderr)
        return 0
    if args.size is None:
        ap.error("--size is required (or --append-mb for append mode)")
    man = generate(args.out_dir, args.size, 0 if args.seed is None else args.seed, args.big_file_mb)
    took = time.perf_counter() - started
    mb = man["total_bytes"] / MiB
    print(f"wrote {mb:.1f} MiB in {man['file_count']} files, {man['line_count']} lines, {man['sessions']} sessions "
          f"in {took:.1f}s ({mb / max(took, 1e-9):.1f} MiB/s); largest {man['largest_file']['bytes'] / MiB:.1f} MiB",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
