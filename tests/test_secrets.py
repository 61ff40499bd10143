"""Secrets (issue 23): planted secrets of every rule kind, in Claude Code, Codex and clm
sessions (user text, tool input, tool output, file change), are found with the right span;
lookalikes are not; every way out masks them; restore without forget stays byte-exact;
forget removes the value from every table and from the database file's bytes.

The sessions are built the way a user would get them: a canonical thread holding the
secrets is archived, emitted by each vendor's own emitter, and the emitted files are
ingested into a fresh archive."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive import secrets
from archive.cli import cli
from archive.db import dump_tables, open_db

VENDORS = ("claude-code", "codex", "clm")
SURFACES = ("text", "input", "output", "patch")
RNG = random.Random(23)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64url(d: dict) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(d)).decode().rstrip("=")


def planted() -> list[tuple[str, str, str]]:
    """(rule, value, the line that carries it): one fresh value per rule."""
    aws = "AKIA" + rand(16, string.ascii_uppercase + string.digits)
    gh = "ghp_" + rand(36)
    slack = f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}"
    stripe = "sk_live_" + rand(24)
    jwt = f"eyJ{b64url({'alg': 'HS256', 'typ': 'JWT'})[3:]}.{b64url({'sub': rand(10), 'iat': 1516239022})}.{rand(43, ALNUM + '-_')}"
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(rand(64, ALNUM + "+/") for _ in range(3)) + "\n-----END RSA PRIVATE KEY-----"
    basic = rand(18)
    keyword = rand(14) + "!"
    entropy = rand(48, ALNUM + "+/")
    ant = "sk-ant-api03-" + rand(93, ALNUM + "-_") + "AA"
    oai = "sk-proj-" + rand(64, ALNUM + "-_") + "T3BlbkFJ" + rand(20)
    legacy = "sk-" + rand(20) + "T3BlbkFJ" + rand(20)
    google = "AIza" + rand(35, ALNUM + "-_")
    hf = "hf_" + rand(34, string.ascii_letters)
    discord = RNG.choice("MNO") + rand(23, ALNUM) + "." + rand(6) + "." + rand(27, ALNUM + "_-")
    telegram = rand(10, string.digits) + ":" + rand(35, ALNUM + "_-")
    mixed = rand(15) + "#"
    return [
        ("aws-access-key", aws, f"export AWS_ACCESS_KEY_ID={aws}"),
        ("github-token", gh, f"git remote set-url origin with token {gh} then push"),
        ("slack-token", slack, f"SLACK_BOT_TOKEN {slack}"),
        ("stripe-access-key", stripe, f"stripe key: {stripe}"),
        ("json-web-token", jwt, f"Authorization: Bearer {jwt}"),
        ("private-key", pem, f"here is the deploy key:\n{pem}\nkeep it safe"),
        ("basic-auth-credentials", basic, f"git clone https://deploy:{basic}@git.example.com/app.git"),
        ("secret-keyword", keyword, f'db_password = "{keyword}"'),
        ("base64-high-entropy-string", entropy, f'blob = "{entropy}"'),
        ("anthropic-api-key", ant, f"ANTHROPIC_API_KEY={ant}"),
        ("openai-api-key", oai, f"OPENAI_API_KEY={oai}"),
        ("openai-api-key", legacy, f"old key {legacy} retired"),
        ("google-api-key", google, f"maps key {google}"),
        ("huggingface-token", hf, f"HF_TOKEN={hf}"),
        # no keyword near them: detect-secrets finds bot tokens by their shape alone
        ("discord-bot-token", discord, f"the bot logs in with {discord} on start"),
        ("telegram-bot-token", telegram, f"curl https://api.example.org/x/{telegram}/getMe"),
        ("secret-keyword", mixed, f'API_Key: "{mixed}"'),  # the keyword plugin ignores case
    ]


# lookalikes: detect-secrets' own documented non-findings (sequential strings, uuids,
# templated and indirect values, $variables, ids) and near misses of every format
LOOKALIKES = [
    "export AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
    "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b and sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    'run_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"',
    'password = "${DB_PASSWORD}"',
    'password = "{{ vault.db_password }}"',
    "password = os.environ['DB_PASSWORD']",
    'secret = "$SECRET_VALUE"',
    'alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"',
    "ghp_short and sk-ant-api03-short and AIzaShort and hf_short",
    "see https://user@example.com/path and https://example.com:8080/x",
    "the password field must be at least eight characters",
    "-----BEGIN PUBLIC KEY----- is fine to share",
    "def token_count(text: str) -> int: return len(text.split())",
]


def canonical_session(tid: str, lines: list[str]) -> bytes:
    """A canonical thread: the lines as user text, tool input, tool output and a file change."""
    body = "\n".join(lines)
    patch = "--- a/.env\n+++ b/.env\n@@ -0,0 +1,%d @@\n" % len(body.split("\n")) + "".join(f"+{x}\n" for x in body.split("\n"))
    ts = "2026-11-30T10:00:%02d.000Z"
    recs = [
        {"v": 1, "id": tid, "createdAt": ts % 0, "metadata": {"cwd": "/home/dev/app", "model": "claude-sonnet-5"}},
        {"v": 1, "id": f"{tid}-m1", "threadId": tid, "role": "user", "ts": ts % 1, "content": [{"type": "text", "text": body}]},
        {"v": 1, "id": f"{tid}-m2", "threadId": tid, "role": "assistant", "ts": ts % 2, "content": [
            {"type": "text", "text": "Running it."},
            {"type": "tool_call", "callId": "call_1", "name": "Bash", "input": {"command": body}}]},
        {"v": 1, "id": f"{tid}-m3", "threadId": tid, "role": "tool", "ts": ts % 3, "content": [
            {"type": "tool_result", "callId": "call_1", "output": body}]},
        {"v": 1, "id": f"{tid}-m4", "threadId": tid, "role": "assistant", "ts": ts % 4, "content": [
            {"type": "tool_call", "callId": "call_2", "name": "Write", "input": {"file_path": "/home/dev/app/.env", "content": "(see the change)"}},
            {"type": "file_change", "callId": "call_2", "path": "/home/dev/app/.env", "patch": patch}]},
        # Claude Code carries a file change in the tool result's toolUseResult
        {"v": 1, "id": f"{tid}-m5", "threadId": tid, "role": "tool", "ts": ts % 5, "content": [
            {"type": "tool_result", "callId": "call_2", "output": "File created"}],
         "provenance": {"provider": "claude-code"},
         "toolUseResult": {"type": "create", "filePath": "/home/dev/app/.env", "content": body + "\n"}},
        {"v": 1, "id": f"{tid}-m6", "threadId": tid, "role": "assistant", "ts": ts % 6, "content": [
            {"type": "text", "text": "Done."}]},
    ]  # fmt: skip
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def run(*args: str, code: int = 0, input: str | None = None) -> tuple[str, str]:
    res = CliRunner().invoke(cli, list(args), input=input)
    assert res.exit_code == code, (res.exit_code, res.output, res.stderr if hasattr(res, "stderr") else "")
    return res.stdout, res.stderr


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """For each vendor: its emitted files (holding every planted secret on every surface),
    ingested into one archive; and the planted values."""
    d = tmp_path_factory.mktemp("secrets")
    plants = {v: planted() for v in VENDORS}
    src = d / "canon"
    src.mkdir()
    db = str(d / "canon.db")
    for v in VENDORS:
        (src / f"{v}.jsonl").write_bytes(canonical_session(f"thread-{v}", [line for _r, _v, line in plants[v]] + LOOKALIKES))
    run("--db", db, "ingest", "-q", str(src))
    out = d / "emitted"
    for v in VENDORS:
        run("--db", db, "emit", f"thread-{v}", "--to", v, "-o", str(out / v), "--no-redact")
    archive = str(d / "archive.db")
    run("--db", archive, "ingest", "-q", str(out))
    return {"db": archive, "canon_db": db, "plants": plants, "dir": d, "emitted": out}


def _texts(conn, f) -> str:
    row = conn.execute("SELECT text, patch FROM blocks WHERE id = ?", (f["block_id"],)).fetchone()
    return row[0] if f["field"] == "text" else row[1]


def test_the_rule_set_is_imported_when_something_is_scanned() -> None:
    """detect-secrets and the matcher's tables load at the first scan, not with the CLI (every
    command paid 0.07-0.15 s for them), nor with ``serve``'s plugin, nor for an ingest that
    wrote no text; ``secrets.<rule name>`` still reaches them."""
    import subprocess
    import sys

    probe = (
        "import sys, tempfile, pathlib\n"
        "import archive.cli, archive.datasette_plugin\n"
        "from archive import secrets\n"
        "from archive.db import open_db\n"
        "from archive.ingest import IngestOptions, ingest_paths\n"
        "home = pathlib.Path(tempfile.mkdtemp())\n"
        "ingest_paths(open_db(home / 'a.db'), None, IngestOptions(env={'HOME': str(home)}))\n"
        "assert 'detect_secrets' not in sys.modules and 'archive.secret_rules' not in sys.modules\n"
        "assert secrets.RULES_VERSION >= 1 and secrets.find_many(['ghp_' + 'a' * 36])[0][0].rule == 'github-token'\n"
        "assert 'detect_secrets' in sys.modules and secrets.Hit is secrets.find_reference.__globals__['Hit']\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=Path(__file__).parent.parent)


def test_every_planted_secret_is_found_with_its_span_on_every_surface(sessions: dict) -> None:
    db = open_db(sessions["db"])
    findings = secrets.list_findings(db.conn)
    assert findings
    for vendor in VENDORS:
        tid = db.execute("SELECT m.thread_id FROM messages m JOIN sources s ON s.id = m.source_id "
                         "WHERE s.provider = ? LIMIT 1", (vendor,)).fetchone()[0]  # fmt: skip
        mine = [f for f in findings if f["thread_id"] == tid]
        for rule, value, _line in sessions["plants"][vendor]:
            # in a diff, a multi-line key has each of its lines prefixed with "+"
            forms = {"text": value, "patch": value.replace("\n", "\n+")}
            hits = [f for f in mine if _texts(db.conn, f)[f["start"]:f["end"]] == forms[f["field"]]]
            assert hits, (vendor, rule, value[:20])
            assert {f["rule"] for f in hits} == {rule}, (vendor, value[:20], {f["rule"] for f in hits})
            assert all(f["value_sha256"] == hashlib.sha256(forms[f["field"]].encode()).hexdigest() for f in hits)
            # on every surface: the user's text, the tool's input, its output, the file change
            types = {db.execute("SELECT type FROM blocks WHERE id = ?", (f["block_id"],)).fetchone()[0] for f in hits}
            assert {"text", "tool_call", "tool_result"} <= types, (vendor, rule, types)
            if vendor != "clm":  # clm has no file changes: its emitter counts them dropped
                assert any(f["field"] == "patch" for f in hits), (vendor, rule)


def test_no_finding_for_lookalikes(sessions: dict) -> None:
    db = open_db(sessions["db"])
    planted_values = {f for p in sessions["plants"].values() for _r, v, _l in p for f in (v, v.replace("\n", "\n+"))}
    for f in secrets.list_findings(db.conn):
        value = _texts(db.conn, f)[f["start"]:f["end"]]
        assert value in planted_values, (f["rule"], value)
    for line in LOOKALIKES:
        assert secrets.find(line) == [], line


def test_findings_never_hold_the_value_and_rebuild_rederives_them(sessions: dict, tmp_path: Path) -> None:
    db = open_db(sessions["db"])
    dumped = json.dumps(dump_tables(db, exclude=("source_lines", "blocks", "messages", "blobs", "thread_facts",
                                                  "ingest_runs", "_sqlite_migrations", "reports", "threads", "generations")))  # fmt: skip
    for p in sessions["plants"].values():
        for _r, value, _l in p:
            assert value not in dumped
    before = dump_tables(db)["secret_findings"]
    run("--db", sessions["db"], "rebuild")
    assert dump_tables(open_db(sessions["db"]))["secret_findings"] == before


def test_secrets_command_counts_and_lists(sessions: dict) -> None:
    out, err = run("--db", sessions["db"], "secrets")
    counts = {line.split()[1]: int(line.split()[0]) for line in out.splitlines()}
    assert {"aws-access-key", "anthropic-api-key", "private-key", "json-web-token"} <= set(counts)
    listed = json.loads(run("--db", sessions["db"], "secrets", "--json")[0])
    assert len(listed) == sum(counts.values())
    assert {"id", "rule", "thread_id", "thread_title", "message_id", "block_id", "start", "end", "value_sha256", "first_seen"} <= set(listed[0])
    one = listed[0]["thread_id"]
    assert {f["thread_id"] for f in json.loads(run("--db", sessions["db"], "secrets", "--json", "--thread", one)[0])} == {one}
    assert json.loads(run("--db", sessions["db"], "secrets", "--json", "--since", "2999-01-01")[0]) == []
    _out, err = run("--db", sessions["db"], "secrets", "--rescan")
    assert f"rules version {secrets.RULES_VERSION}" in err
    assert len(json.loads(run("--db", sessions["db"], "secrets", "--json")[0])) == len(listed)


@pytest.mark.parametrize("bad", ["garbage", "2026-13-45", "7x"])
def test_secrets_since_rejects_a_bad_date_as_every_command_does(sessions: dict, bad: str) -> None:
    """Issue 32 defect 4: `secrets --since garbage` gave '0 findings', exit 0."""
    _out, err = run("--db", sessions["db"], "secrets", "--since", bad, code=2)
    assert "is not a date" in err
    _out, err = run("--db", sessions["db"], "search", "x", "--since", bad, code=2)
    assert "is not a date" in err


def test_secrets_since_takes_the_words_every_command_takes(sessions: dict) -> None:
    every = json.loads(run("--db", sessions["db"], "secrets", "--json")[0])
    assert every  # found just now, at ingest: within the last week and since yesterday
    for when in ("7d", "yesterday", "12h"):
        assert json.loads(run("--db", sessions["db"], "secrets", "--json", "--since", when)[0]) == every, when
    assert json.loads(run("--db", sessions["db"], "secrets", "--json", "--since", "2999-01-01", "--utc")[0]) == []


def _values(sessions: dict) -> list[str]:
    return [v for p in sessions["plants"].values() for _r, v, _l in p]


def _leaks(data: str | bytes, values: list[str]) -> list[str]:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    out = []
    for v in values:
        for form in (v, orjson.dumps(v).decode()[1:-1]):
            if form in data:
                out.append(v[:24])
    return out


@pytest.mark.parametrize("vendor", VENDORS)
def test_markdown_and_redacted_emits_contain_no_secret(sessions: dict, vendor: str, tmp_path: Path) -> None:
    db = sessions["db"]
    values = _values(sessions)
    conn = open_db(db).conn
    tid = conn.execute("SELECT DISTINCT thread_id FROM secret_findings f JOIN sources s ON s.id = "
                       "(SELECT source_id FROM messages WHERE id = f.message_id) WHERE s.provider = ?", (vendor,)).fetchone()[0]  # fmt: skip
    md, _ = run("--db", db, "emit", tid, "--to", "markdown")
    assert not _leaks(md, values) and "[REDACTED aws-access-key]" in md
    md_raw, _ = run("--db", db, "emit", tid, "--to", "markdown", "--no-redact")
    assert _leaks(md_raw, values)  # the test can fail: without redaction they are there
    for target in ("claude-code", "codex", "clm", "canonical"):
        out = tmp_path / target
        run("--db", db, "emit", tid, "--to", target, "-o", str(out), "--redact")
        for f in out.rglob("*"):
            if f.is_file():
                assert not _leaks(f.read_bytes(), values), (target, f)
                if f.suffix == ".jsonl":  # still sessions: every line parses
                    for line in f.read_bytes().splitlines():
                        orjson.loads(line)
    for fmt in ("text", "markdown", "json"):
        shown, _ = run("--db", db, "show", tid, "--format", fmt, "--full", "--redact", "--no-pager")
        assert not _leaks(shown, values), fmt
        assert "[REDACTED" in shown
    shown, _ = run("--db", db, "show", tid, "--format", "text", "--full", "--no-pager")
    assert _leaks(shown, values)


def test_search_redacts_snippets(sessions: dict) -> None:
    db = sessions["db"]
    values = _values(sessions)
    for word in ("AWS_ACCESS_KEY_ID", "ANTHROPIC_API_KEY", "Bearer", "deploy", "password", "HF_TOKEN"):
        out, _ = run("--db", db, "search", word, "--json", "--redact", "--limit", "0")
        hits = json.loads(out)
        assert hits, word
        for h in hits:
            assert not _leaks(h["snippet"], values), (word, h["snippet"])
            for a, b in h["matches"]:
                assert "REDACTED" not in h["snippet"][a:b]
    out, _ = run("--db", db, "search", "AWS_ACCESS_KEY_ID", "--json", "--limit", "0")
    assert _leaks(out, values)


def test_restore_is_byte_exact_without_forget_and_masked_with_redact(sessions: dict, tmp_path: Path) -> None:
    db = sessions["db"]
    values = _values(sessions)
    run("--db", db, "restore", str(tmp_path / "exact"))
    originals = {p.name: p.read_bytes() for p in sessions["emitted"].rglob("*") if p.is_file()}
    restored = {p.name: p.read_bytes() for p in (tmp_path / "exact").rglob("*") if p.is_file()}
    assert set(originals) <= set(restored)
    for name, data in originals.items():
        assert restored[name] == data, name
    run("--db", db, "restore", str(tmp_path / "masked"), "--redact")
    masked = [p.read_bytes() for p in (tmp_path / "masked").rglob("*") if p.is_file()]
    assert not any(_leaks(m, values) for m in masked)


def test_serve_pages_mask_unless_show_secrets(sessions: dict) -> None:
    import asyncio

    from archive.serve import make_datasette

    db = sessions["db"]
    values = _values(sessions)
    conn = open_db(db).conn
    tids = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM secret_findings WHERE thread_id IS NOT NULL")]

    async def pages(show: bool) -> list[str]:
        ds = make_datasette(db, show_secrets=show)
        out = []
        for tid in tids:
            r = await ds.client.get(f"/-/sesh/thread/{tid}")
            assert r.status_code == 200
            out.append(r.text)
        for q in ("AWS_ACCESS_KEY_ID", "ANTHROPIC_API_KEY", "Bearer"):
            r = await ds.client.get(f"/-/sesh/search?q={q}")
            assert r.status_code == 200
            out.append(r.text)
            # the canned search query of the Datasette pages too
            r = await ds.client.get(f"/archive/search.json?q={q}&_shape=array")
            assert r.status_code == 200 and r.json(), r.text[:200]
            out.append(r.text)
        return out

    import html

    masked = asyncio.run(pages(False))
    assert not any(_leaks(html.unescape(p), values) for p in masked)
    assert any("[REDACTED aws-access-key]" in html.unescape(p) for p in masked)
    assert any(_leaks(html.unescape(p), values) for p in asyncio.run(pages(True)))


def test_forget_removes_the_value_everywhere(sessions: dict, tmp_path: Path) -> None:
    import shutil

    db_path = tmp_path / "forget.db"
    shutil.copy(sessions["db"], db_path)
    db = open_db(db_path)
    aws = [f for f in secrets.list_findings(db.conn) if f["rule"] == "aws-access-key"]
    target = aws[0]
    value = _texts(db.conn, target)[target["start"]:target["end"]]
    others = [v for v in _values(sessions) if v != value]
    db.conn.close()
    out, err = run("--db", str(db_path), "forget", "--finding", str(target["id"]), "--yes", "--json")
    done = json.loads(out)
    assert done["values"] == 1 and done["sources"]
    db = open_db(db_path)
    assert db.execute("SELECT count(*) FROM forgotten_secrets").fetchone()[0] == 1
    assert not db.execute("SELECT count(*) FROM secret_findings WHERE value_sha256 = ?",
                          (hashlib.sha256(value.encode()).hexdigest(),)).fetchone()[0]  # fmt: skip
    # the other secrets are still found: forget took only this value
    assert {f["rule"] for f in secrets.list_findings(db.conn)} >= {"github-token", "private-key"}
    hits = json.loads(run("--db", str(db_path), "search", value, "--json", "--literal")[0])
    assert hits == []
    db.execute("VACUUM")
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("forget.db*"))
    assert value.encode() not in raw
    # stored lines are compressed: read them all back
    db = open_db(db_path)
    from archive.lines import iter_stored_lines

    every = b"".join(line for sid, g in db.execute("SELECT DISTINCT source_id, generation FROM source_lines").fetchall()
                     for _o, _l, _t, line in iter_stored_lines(db.conn, sid, g))  # fmt: skip
    assert value.encode() not in every and b"[aws-access-key]****" in every  # same length as the value
    assert any(o.encode() in every for o in others)
    # restore gives the rewritten bytes and says so; the lines still parse
    _out, err = run("--db", str(db_path), "restore", str(tmp_path / "r"))
    assert "rewritten by `forget`" in err
    for p in (tmp_path / "r").rglob("*.jsonl"):
        assert value.encode() not in p.read_bytes()
        for line in p.read_bytes().splitlines():
            orjson.loads(line)


def test_scanning_is_incremental_and_skippable(tmp_path: Path) -> None:
    from archive.ingest import IngestOptions, ingest_paths

    rule, value, line = planted()[0]
    f = tmp_path / "s.jsonl"
    f.write_bytes(canonical_session("t-inc", [line]))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [f], IngestOptions(scan_secrets=False))
    assert db.execute("SELECT count(*) FROM secret_findings").fetchone()[0] == 0
    ingest_paths(db, [f])  # nothing new to read, but the blocks skipped before are scanned now
    n = db.execute("SELECT count(*) FROM secret_findings").fetchone()[0]
    assert n >= 3
    ingest_paths(db, [f])
    assert db.execute("SELECT count(*) FROM secret_findings").fetchone()[0] == n


def test_the_fast_scan_equals_every_plugin_on_every_line() -> None:
    """``find`` gates rule families on literals and runs regexes over whole texts; it must
    find exactly what every plugin run on every line finds (``find_reference``): on the
    planted secrets, the lookalikes, and every line of the real session fixtures."""
    texts = ["\n".join(line for _r, _v, line in planted()), "\n".join(LOOKALIKES)]
    fixtures = Path(__file__).parent / "fixtures"
    for f in sorted(fixtures.rglob("*.jsonl"))[:30]:
        data = f.read_text("utf-8", "replace")
        texts.append(data)
        texts += [str(v) for rec in data.splitlines()[:200] for v in _strings(rec)]
    assert len(texts) > 100
    for text in texts:
        assert secrets.find(text) == secrets.find_reference(text), text[:200]


def _strings(record: str) -> list[str]:
    try:
        value = orjson.loads(record)
    except orjson.JSONDecodeError:
        return []
    out: list[str] = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


@pytest.mark.postgres
def test_push_redact_sends_no_secret_and_refuses_sources(sessions: dict, pg_url: str) -> None:
    """``push --redact``: every pushed table is free of the values; ``--with-sources`` is refused."""
    import psycopg

    db = sessions["db"]
    values = _values(sessions)
    res = CliRunner().invoke(cli, ["--db", db, "push", pg_url, "--redact", "--with-sources"])
    assert res.exit_code == 2 and "--with-sources" in res.output
    run("--db", db, "push", pg_url, "--redact")
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET search_path TO sesh")
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'sesh' AND table_type = 'BASE TABLE'")]  # fmt: skip
        dumped = []
        for t in tables:
            for row in conn.execute(f'SELECT * FROM "{t}"'):
                dumped.append(repr(row))
        everything = "\n".join(dumped)
        assert not _leaks(everything, values)
        assert "[REDACTED aws-access-key]" in everything
        assert conn.execute("SELECT count(*) FROM blocks").fetchone()[0] > 0
