#!/usr/bin/env python3
"""The same questions to two archives, the answers compared (issue 37: a store change must
not change what any command answers).

Each side is a Python (its checkout's environment) and an archive; every command runs as
``PYTHON -m archive --db DB ...``, so an old checkout answers from its own store:

    python scripts/compare_answers.py --a /work/venv/bin/python:/tmp/main.db \\
        --b /work/venvs/X/bin/python:/tmp/branch.db

Asked: 16 searches (words, phrases, prefixes, OR/NOT/NEAR, paths, --literal, words taken
from tool output, filtered by role), ``threads --json`` (all), ``stats --json`` by day,
model, tool and thread, ``show --format json`` and ``show --full`` of the largest threads,
and the stored source lines (sha256 of every line, in order, per source). Exit status 1
when any answer differs; each difference is named.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter

SEARCHES = [
    ["error"], ["test"], ["import"], ["def"], ['"No such file"'], ["config*"], ["error NOT warning"],
    ["error OR failed"], ["NEAR(file test, 5)"], ["src/app.py"], ["--literal", "it's a (test"],
    ["--role", "user", "fix"], ["--role", "tool", "error"],
]
LINES_SCRIPT = """
import hashlib, sqlite3, sys
from archive.lines import iter_stored_lines
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for sid, g, uid in conn.execute("SELECT id, current_generation, uid FROM sources ORDER BY uid").fetchall():
    h = hashlib.sha256()
    for offset, length, term, line in iter_stored_lines(conn, sid, g):
        h.update(b"%d %d %d " % (offset, length, term) + line)
    print(uid, h.hexdigest())
"""


def tool_words(db: str, n: int = 3) -> list[list[str]]:
    """``n`` frequent words of tool output (so search over tool output is asked)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    words: Counter[str] = Counter()
    for (text,) in conn.execute("SELECT text FROM blocks WHERE type = 'tool_result' AND text IS NOT NULL ORDER BY id LIMIT 2000"):
        words.update(w.lower() for w in re.findall(r"[A-Za-z]{6,}", text[:2000]))
    picked = [w for w, _ in words.most_common(40)][::13][:n]
    phrase = re.findall(r"[A-Za-z]{4,} [A-Za-z]{4,}", conn.execute(
        "SELECT text FROM blocks WHERE type = 'tool_result' AND length(text) > 200 ORDER BY id LIMIT 1").fetchone()[0] or "")
    return [[w] for w in picked] + ([[f'"{phrase[0]}"']] if phrase else [])


def ask(side: tuple[str, str], args: list[str]) -> str:
    py, db = side
    res = subprocess.run([py, "-m", "archive", "--db", db, *args], capture_output=True, text=True)
    return f"exit {res.returncode}\n{res.stdout}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, metavar="PYTHON:DB")
    ap.add_argument("--b", required=True, metavar="PYTHON:DB")
    ap.add_argument("--show", type=int, default=3, help="largest threads to show (default 3)")
    args = ap.parse_args()
    a, b = tuple(args.a.split(":", 1)), tuple(args.b.split(":", 1))
    questions: list[list[str]] = [["search", "--json", "--limit", "50", *q] for q in SEARCHES + tool_words(a[1])]
    questions += [["threads", "--json", "--limit", "0", "--all"]]
    questions += [["stats", "--json", "--by", by, "--since", "2000-01-01"] for by in ("day", "model", "tool", "thread")]
    conn = sqlite3.connect(f"file:{a[1]}?mode=ro", uri=True)
    big = [r[0] for r in conn.execute(
        "SELECT thread_id FROM messages GROUP BY thread_id ORDER BY count(*) DESC, thread_id LIMIT ?", (args.show,))]
    questions += [["show", "--format", "json", t] for t in big] + [["show", "--full", "--no-pager", t] for t in big]
    differ = 0
    for q in questions:
        ra, rb = ask(a, q), ask(b, q)
        same = ra == rb
        differ += not same
        hits = ""
        if q[0] == "search" and ra.startswith("exit 0"):
            hits = f" ({len(json.loads(ra.split(chr(10), 1)[1]))} hits)"
        print(("same   " if same else "DIFFER ") + " ".join(q) + hits + f" [{len(ra)} chars]")
    la = subprocess.run([a[0], "-c", LINES_SCRIPT, a[1]], capture_output=True, text=True, check=True).stdout
    lb = subprocess.run([b[0], "-c", LINES_SCRIPT, b[1]], capture_output=True, text=True, check=True).stdout
    differ += la != lb
    print(("same   " if la == lb else "DIFFER ") + f"stored lines of {la.count(chr(10))} sources "
          f"(sha256 {hashlib.sha256(la.encode()).hexdigest()[:12]})")
    print(f"{len(questions) + 1} questions, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
