"""The read commands: search, threads, show, stats (through the CLI, on real fixtures).

The main archive holds three recorded or real sessions whose token totals the adapters'
tests state:

* Claude Code 2.1.197 (thread 7767af10…, model claude-opus-4-8, day 2026-11-30): 3
  responses, input 330, output 90, cache read 30000, cache write 150. Claude's input
  excludes the cache, so normalised input = 330.
* Codex 0.66 agtrace (thread 019b04ae…, gpt-5.1-codex-max, day 2025-12-09): 7 responses,
  input 26740 *including* 22912 cached, output 408 (reasoning 128 inside it). Normalised
  input = 26740 - 22912 = 3828.
* Codex 0.171.0 recorded (thread 01a229dd…, gpt-5.1-codex, day 2026-11-30): 3 responses,
  input 60 (no cache), output 27.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.model import Message, Thread
from archive.store import SqliteMessageStore

FIX = Path(__file__).parent / "fixtures"
CLAUDE = FIX / "claude-code" / "recorded" / "cc-2.1.197-bash-resume.jsonl"
AGTRACE = FIX / "codex" / "lanegrid__agtrace__codex_session.jsonl"
CODEX171 = FIX / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
SIDECHAINS = FIX / "claude-code" / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"

T_CLAUDE = "7767af10-96b1-4f0a-b48d-8e085110fdc1"
T_AGTRACE = "019b04ae-b1c6-7c72-a134-a4c2de66058c"
T_171 = "01a229dd-03c9-7373-8563-568dd22f194d"
T_SIDE = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"

# Hand totals per model (normalised: every token in one bucket).
CLAUDE_TOTALS = {"responses": 3, "input_tokens": 330, "output_tokens": 90, "cache_read_tokens": 30000,
                 "cache_write_tokens": 150, "total_tokens": 330 + 90 + 30000 + 150}  # fmt: skip
AGTRACE_TOTALS = {"responses": 7, "input_tokens": 26740 - 22912, "output_tokens": 408, "cache_read_tokens": 22912,
                  "cache_write_tokens": 0, "total_tokens": 26740 + 408}  # fmt: skip
C171_TOTALS = {"responses": 3, "input_tokens": 60, "output_tokens": 27, "cache_read_tokens": 0,
               "cache_write_tokens": 0, "total_tokens": 87}  # fmt: skip


def _build(path: Path, files: list[Path]) -> Path:
    db = open_db(path)
    summary = ingest_paths(db, files)
    assert not summary.failed
    db.conn.close()
    return path


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("read") / "a.db", [CLAUDE, AGTRACE, CODEX171])


@pytest.fixture(scope="module")
def side_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("side") / "s.db", [SIDECHAINS])


def run(db: Path, *args: str, code: int = 0, color: bool = False, env: dict[str, str] | None = None) -> str:
    r = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False, color=color, env=env)
    assert r.exit_code == code, (r.exit_code, r.output)
    return r.output


def run_split(db: Path, *args: str, code: int = 0) -> tuple[str, str]:
    r = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return r.stdout, r.stderr


def jrun(db: Path, *args: str) -> object:
    out, _ = run_split(db, *args, "--json")
    return orjson.loads(out)


# ---------------------------------------------------------------- search


def test_search_finds_words_in_the_right_thread(archive: Path) -> None:
    hits = jrun(archive, "search", "hoge")
    assert hits and {h["thread_id"] for h in hits} == {T_AGTRACE}
    hits = jrun(archive, "search", "SUBTASK")
    assert {h["thread_id"] for h in hits} == {T_CLAUDE}
    hits = jrun(archive, "search", '"hello-from-codex-mock"')  # a phrase: FTS5 splits it into 4 tokens
    assert {h["thread_id"] for h in hits} == {T_171}
    h = hits[0]
    assert set(h) == {"thread_id", "thread_title", "provider", "project", "message_id", "role", "ts",
                      "block_type", "tool_name", "snippet", "matches", "also_in"}  # fmt: skip
    assert h["also_in"] == []
    assert h["provider"] == "codex" and h["project"] == "/home/dev/hello-app"
    assert h["thread_title"] == "say hi and run echo"  # no vendor title: the first typed prompt
    # matches are [start, end) ranges of the highlighted terms inside the plain snippet
    assert h["matches"] and all(h["snippet"][s:e] == "hello-from-codex-mock" for s, e in h["matches"])  # the phrase
    hits = jrun(archive, "search", "hoge OR myapp")
    assert {h["snippet"][s:e].lower() for h in hits for s, e in h["matches"]} == {"hoge", "myapp"}
    assert "\x02" not in h["snippet"] and "\x03" not in h["snippet"]


def test_search_text_output_plain_when_piped_and_coloured_on_a_tty(archive: Path) -> None:
    out, err = run_split(archive, "search", "hoge")
    assert T_AGTRACE in out and "\x1b[" not in out and err.strip().endswith("hits")
    coloured = run(archive, "search", "hoge", color=True)
    assert "\x1b[1m" in coloured and "\x1b[31m" in coloured  # bold red matches


def test_search_filters_narrow(archive: Path) -> None:
    # "files" occurs in all three threads: Claude (user, assistant), agtrace (tool), 0.171.0 (system)
    every = jrun(archive, "search", "files", "--limit", "0")
    assert {h["thread_id"] for h in every} == {T_171, T_CLAUDE, T_AGTRACE}
    codex = jrun(archive, "search", "files", "--provider", "codex", "--limit", "0")
    assert {h["thread_id"] for h in codex} == {T_171, T_AGTRACE}
    assert {h["thread_id"] for h in jrun(archive, "search", "files", "--thread", "7767", "--limit", "0")} == {T_CLAUDE}
    users = jrun(archive, "search", "files", "--role", "user", "--limit", "0")
    assert [(h["thread_id"], h["role"]) for h in users] == [(T_CLAUDE, "user")]
    tools = jrun(archive, "search", "files", "--role", "tool", "--provider", "codex", "--limit", "0")
    assert [(h["thread_id"], h["role"]) for h in tools] == [(T_AGTRACE, "tool")]
    # absolute path: that directory and below; other text: substring
    here = jrun(archive, "search", "files", "--project", "/home/dev/hello-app", "--limit", "0")
    assert {h["thread_id"] for h in here} == {T_171, T_CLAUDE}
    assert jrun(archive, "search", "files", "--project", "/home/dev/hello") == []
    assert {h["thread_id"] for h in jrun(archive, "search", "files", "--project", "/home/dev/", "--limit", "0")} == {T_171, T_CLAUDE}
    assert {h["thread_id"] for h in jrun(archive, "search", "files", "--project", "agent-sample")} == {T_AGTRACE}
    assert jrun(archive, "search", "hoge", "--project", "hello-app") == []
    # agtrace is 2025-12-09; a date-only --until includes its whole day
    assert jrun(archive, "search", "hoge", "--since", "2026-01-01") == []
    assert jrun(archive, "search", "hoge", "--until", "2025-12-09") != []
    assert jrun(archive, "search", "hoge", "--until", "2025-12-08") == []
    assert jrun(archive, "search", "hoge", "--since", "2025-12-09T19:00:00Z", "--until", "2025-12-09T20:00:00") != []
    assert len(jrun(archive, "search", "files", "--limit", "1")) == 1
    assert len(jrun(archive, "search", "files")) == len(every) < 20  # default limit 20


def test_search_takes_what_people_type(archive: Path) -> None:
    """Issue 32: hyphens, dots, slashes, colons and stray quotes are searched as typed (they
    failed with "no such column: from" and the like); FTS5 syntax stays available."""
    assert {h["thread_id"] for h in jrun(archive, "search", "hello-from-codex-mock")} == {T_171}
    assert {h["thread_id"] for h in jrun(archive, "search", "myapp/hoge.py")} == {T_AGTRACE}
    assert jrun(archive, "search", "foo:bar") == []
    assert jrun(archive, "search", '"unbalanced') == []
    # the same hits as --literal, which quotes every word
    for q in ("hello-from-codex-mock", "myapp/hoge.py"):
        assert jrun(archive, "search", q) == jrun(archive, "search", "--literal", q)
    # FTS5 syntax: operators, phrases, prefixes and groups keep their meaning
    both = {h["thread_id"] for h in jrun(archive, "search", "hello-from-codex-mock OR myapp/hoge.py")}
    assert both == {T_171, T_AGTRACE}
    assert {h["thread_id"] for h in jrun(archive, "search", "(hello-from-codex-mock OR zzzqqq) hello")} == {T_171}
    assert jrun(archive, "search", "hello-from-codex-mock NOT hello") == []
    assert {h["thread_id"] for h in jrun(archive, "search", "hello-from-codex-mo*")} == {T_171}
    # what FTS5 still rejects (a dangling operator) is an error that names --literal
    r = CliRunner().invoke(cli, ["--db", str(archive), "search", "hello AND"], catch_exceptions=False)
    assert r.exit_code == 1 and "invalid search query" in r.output and "--literal" in r.output
    assert jrun(archive, "search", "--literal", '"unbalanced') == []
    run(archive, "search", "  ", code=1)


def test_search_bad_date_is_a_usage_error(archive: Path) -> None:
    # "yesterday" became a valid bound in issue 22; "last tuesday" is not one
    assert "is not a date" in run(archive, "search", "hoge", "--since", "last tuesday", code=2)


def test_read_commands_need_an_archive(tmp_path: Path) -> None:
    for args in (["search", "x"], ["threads"], ["show", "x"], ["stats"]):
        assert "run `sesh-archive ingest` first" in run(tmp_path / "none.db", *args, code=1)
    assert not (tmp_path / "none.db").exists()


# ---------------------------------------------------------------- threads


def test_threads_order_and_shape(archive: Path) -> None:
    rows = jrun(archive, "threads")
    # last activity desc: both recorded sessions are 2026-11-30, Codex's last line is later
    assert [r["id"] for r in rows] == [T_171, T_CLAUDE, T_AGTRACE]
    by_id = {r["id"]: r for r in rows}
    for tid, totals in ((T_CLAUDE, CLAUDE_TOTALS), (T_AGTRACE, AGTRACE_TOTALS), (T_171, C171_TOTALS)):
        assert {k: by_id[tid][k] for k in totals if k != "responses"} == {k: v for k, v in totals.items() if k != "responses"}
    r = by_id[T_AGTRACE]
    assert list(r) == ["id", "title", "label", "provider", "project", "model", "parent_thread_id", "created_at",
                       "first_ts", "last_ts", "messages", "children", "input_tokens", "output_tokens",
                       "cache_read_tokens", "cache_write_tokens", "total_tokens", "forked_from", "lineage", "inherited_messages",
                       "inherited_tokens", "cost_usd", "unpriced_models", "signals", "tags", "starred", "note"]  # fmt: skip
    assert r["forked_from"] is None and r["inherited_messages"] == r["inherited_tokens"] == 0
    assert r["provider"] == "codex" and r["project"] == "/Users/test_user/agent-sample" and r["children"] == 0
    assert r["messages"] == 21 and r["label"].startswith("add myapp directory")


def test_threads_filters_and_text(archive: Path) -> None:
    ids = lambda *a: [r["id"] for r in jrun(archive, "threads", *a)]  # noqa: E731
    assert ids("--provider", "claude-code") == [T_CLAUDE]
    assert ids("--project", "agent-sample") == [T_AGTRACE]
    assert ids("--project", "/home/dev/hello-app") == [T_171, T_CLAUDE]
    assert ids("--thread", "01") == [T_171, T_AGTRACE]
    assert ids("--since", "2026-01-01") == [T_171, T_CLAUDE]
    assert ids("--until", "2025-12-31") == [T_AGTRACE]
    assert ids("--limit", "1") == [T_171]
    out, err = run_split(archive, "threads")
    # issue 22: short ids, local time named in the header, tokens as 31k, cost
    assert out.splitlines()[0].split()[:4] == ["ID", "LAST", "(UTC)", "PROVIDER"]
    assert T_CLAUDE[:8] + " " in out and T_CLAUDE not in out and "31k" in out and "$0.02" in out
    assert err.startswith("3 sessions;")


def test_threads_children(side_archive: Path) -> None:
    rows = {r["id"]: r for r in jrun(side_archive, "threads", "--all")}
    assert rows[T_SIDE]["children"] == 2
    kids = [r for r in rows.values() if r["parent_thread_id"] == T_SIDE]
    assert len(kids) == 2 and all(k["project"] == rows[T_SIDE]["project"] for k in kids)


# ---------------------------------------------------------------- show


def test_show_prefix_text_folded_and_full(archive: Path) -> None:
    out, err = run_split(archive, "show", "01a2")
    assert out.startswith("say hi and run echo\n") and f"id: {T_171}" in out
    assert "▸ exec_command {\"cmd\":\"echo hello-from-codex-mock\"}" in out  # one line
    assert "[injected context" in out and "<skills_instructions>" in out
    assert "\x1b[" not in out and err == "9 messages, 0 child threads\n"
    full = run(archive, "show", T_171, "--full")
    assert '"cmd": "echo hello-from-codex-mock"' in full  # pretty-printed input
    assert "hello-from-codex-mock\n" in full  # the whole output, not a one-line preview
    assert "\x1b[" in run(archive, "show", "01a2", color=True)


def test_show_ambiguous_and_unknown(archive: Path) -> None:
    out = run(archive, "show", "01", code=1)
    assert "matches 2 threads" in out and T_171 in out and T_AGTRACE in out
    assert "no thread id starts with" in run(archive, "show", "zzz", code=1)


def test_show_json_is_canonical_jsonl(archive: Path) -> None:
    out, _ = run_split(archive, "show", "7767", "--format", "json")
    records = [orjson.loads(line) for line in out.splitlines()]
    thread = Thread.from_dict(records[0])
    messages = [Message.from_dict(d) for d in records[1:]]
    store = SqliteMessageStore(archive)
    assert thread == store.get_thread(T_CLAUDE)
    assert messages == store.get_messages(T_CLAUDE)


def test_show_markdown(archive: Path) -> None:
    md = run(archive, "show", "019b", "--format", "markdown")
    assert md.startswith("# add myapp directory") and "## user" in md and "**Tool call** `shell_command`" in md
    assert "\x1b[" not in run(archive, "show", "019b", "--format", "markdown", color=True)
    full = run(archive, "show", "019b", "--format", "markdown", "--full")
    assert "```json" in full


def test_show_lists_children_and_prefers_the_parent(side_archive: Path) -> None:
    # "5c03" prefixes the parent and both "<parent>/sidechain-…" children: it means the parent
    out, err = run_split(side_archive, "show", "5c03")
    assert "child threads (2):" in out and err.endswith("2 child threads\n")
    assert f"{T_SIDE}/sidechain-" in out.split("child threads (2):")[1]
    md = run(side_archive, "show", "5c03", "--format", "markdown")
    assert "## Child threads (2)" in md


# ---------------------------------------------------------------- stats


def _only(d: dict, keys: dict) -> dict:
    return {k: d[k] for k in keys}


def test_stats_by_model_hand_totals(archive: Path) -> None:
    rep = jrun(archive, "stats", "--by", "model")
    rows = {r["model"]: r for r in rep["rows"]}
    assert _only(rows["claude-opus-4-8"], CLAUDE_TOTALS) == CLAUDE_TOTALS
    assert _only(rows["gpt-5.1-codex-max"], AGTRACE_TOTALS) == AGTRACE_TOTALS
    assert _only(rows["gpt-5.1-codex"], C171_TOTALS) == C171_TOTALS
    assert rows["gpt-5.1-codex-max"]["reasoning_tokens"] == 128  # part of output, not added again
    # issue 22: claude-opus-4-8 is priced by genai-prices ($5 input, $25 output, $0.50 cache
    # read, $6.25 cache write): 330*5 + 90*25 + 30000*0.5 + 150*6.25 = 19837.5
    assert rows["claude-opus-4-8"]["priced_as"] == "genai-prices:anthropic/claude-opus-4-8"
    assert rows["claude-opus-4-8"]["cost_usd"] == pytest.approx(19837.5 / 1e6)
    assert rep["unpriced_models"] == []
    # gpt-5.1-codex-max at $1.25 input, $0.125 cached, $10 output per million: the cached
    # 22912 are charged only at the cached rate: 3828*1.25 + 22912*0.125 + 408*10 = 11729
    assert rows["gpt-5.1-codex-max"]["cost_usd"] == pytest.approx(11729 / 1e6)
    # gpt-5.1-codex: 60*1.25 + 27*10 = 345
    assert rows["gpt-5.1-codex"]["cost_usd"] == pytest.approx(345 / 1e6)
    total = rep["total"]
    assert total["responses"] == 13
    assert total["input_tokens"] == 330 + 3828 + 60
    assert total["output_tokens"] == 90 + 408 + 27
    assert total["cache_read_tokens"] == 30000 + 22912
    assert total["cache_write_tokens"] == 150
    assert total["cost_usd"] == pytest.approx((11729 + 345 + 19837.5) / 1e6)
    assert total["unpriced_models"] == []
    assert rep["prices"]["as_of"] and rep["prices"]["source"] and rep["prices"]["overrides"] is None
    assert rep["prices"]["database"]["name"] == "genai-prices" and rep["prices"]["database"]["as_of"]


def test_stats_by_day_week_month_provider_project(archive: Path) -> None:
    days = {r["key"]: r for r in jrun(archive, "stats", "--by", "day")["rows"]}
    assert list(days) == ["2025-12-09", "2026-11-30"]
    assert _only(days["2025-12-09"], AGTRACE_TOTALS) == AGTRACE_TOTALS
    # 2026-11-30 = Claude 2.1.197 + Codex 0.171.0
    both = {k: CLAUDE_TOTALS[k] + C171_TOTALS[k] for k in CLAUDE_TOTALS}
    assert both == {"responses": 6, "input_tokens": 390, "output_tokens": 117, "cache_read_tokens": 30000,
                    "cache_write_tokens": 150, "total_tokens": 30657}  # fmt: skip
    assert _only(days["2026-11-30"], both) == both
    assert days["2026-11-30"]["unpriced_models"] == []
    assert days["2026-11-30"]["cost_usd"] == pytest.approx((345 + 19837.5) / 1e6)
    assert [r["key"] for r in jrun(archive, "stats", "--by", "week")["rows"]] == ["2025-W50", "2026-W49"]
    assert [r["key"] for r in jrun(archive, "stats", "--by", "month")["rows"]] == ["2025-12", "2026-11"]
    prov = {r["key"]: r for r in jrun(archive, "stats", "--by", "provider")["rows"]}
    assert prov["codex"]["total_tokens"] == AGTRACE_TOTALS["total_tokens"] + C171_TOTALS["total_tokens"]
    assert _only(prov["claude-code"], CLAUDE_TOTALS) == CLAUDE_TOTALS
    proj = {r["key"]: r for r in jrun(archive, "stats", "--by", "project")["rows"]}
    assert proj["/home/dev/hello-app"]["total_tokens"] == 30657
    assert proj["/Users/test_user/agent-sample"]["total_tokens"] == 27148


def test_stats_time_and_provider_filters(archive: Path) -> None:
    rep = jrun(archive, "stats", "--since", "2026-01-01")
    assert [r["key"] for r in rep["rows"]] == ["2026-11-30"] and rep["since"] == "2026-01-01"
    rep = jrun(archive, "stats", "--until", "2025-12-09")
    assert [r["key"] for r in rep["rows"]] == ["2025-12-09"] and rep["until"] == "2025-12-09"
    rep = jrun(archive, "stats", "--by", "model", "--provider", "codex")
    assert {r["model"] for r in rep["rows"]} == {"gpt-5.1-codex", "gpt-5.1-codex-max"}
    run(archive, "stats", "--since", "not-a-date", code=2)


@pytest.mark.parametrize("by", ["day", "week", "month", "model", "project", "provider"])
@pytest.mark.parametrize("window", [(None, None), ("2025-12-09", None), (None, "2025-12-09"), ("2026-11-30", "2026-11-30")])
def test_stats_from_daily_totals_equal_stats_from_every_response(archive: Path, by: str, window: tuple) -> None:
    """Whole-day bounds read usage_totals (kept by triggers); a bound with a time reads every
    usage row. The same window both ways gives the same report."""
    since, until = window
    days: list[str] = ["stats", "--by", by]
    times: list[str] = ["stats", "--by", by]
    if since:
        days += ["--since", since]
        times += ["--since", since + "T00:00:00"]
    if until:
        days += ["--until", until]
        nxt = (dt.date.fromisoformat(until) + dt.timedelta(days=1)).isoformat()
        times += ["--until", nxt + "T00:00:00"]
    a, b = jrun(archive, *days), jrun(archive, *times)
    assert a["rows"] and a["rows"] == b["rows"] and a["total"] == b["total"]


def test_usage_totals_follow_every_change_to_usage(archive: Path, tmp_path: Path) -> None:
    import shutil

    from archive.ingest import rebuild

    db_path = tmp_path / "copy.db"
    shutil.copy(archive, db_path)
    db = open_db(db_path)
    per_row = ("SELECT coalesce(day, ''), provider, coalesce(model, ''), coalesce(thread_id, ''), count(*), "
               "sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), "
               "sum(reasoning_tokens) FROM usage_responses GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4")  # fmt: skip
    totals = "SELECT * FROM usage_totals ORDER BY 1, 2, 3, 4"
    before = db.execute(per_row).fetchall()
    assert before and db.execute(totals).fetchall() == before
    db.execute("UPDATE usage SET output_tokens = output_tokens + 5, model = 'm2' WHERE rowid IN "
               "(SELECT rowid FROM usage ORDER BY key LIMIT 2)")  # fmt: skip
    db.execute("DELETE FROM usage WHERE rowid = (SELECT max(rowid) FROM usage)")
    assert db.execute(totals).fetchall() == db.execute(per_row).fetchall() != before
    rebuild(db)
    assert db.execute(totals).fetchall() == db.execute(per_row).fetchall() == before


def test_stats_price_overrides(archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "p.json"
    prices.write_text(orjson.dumps({"as_of": "2099-01-01", "models": {
        "claude-opus-4-8": {"input": 5, "output": 25, "cache_read": 0.5, "cache_write": 6.25}}}).decode())  # fmt: skip
    # 330*5 + 90*25 + 30000*0.5 + 150*6.25 = 1650 + 2250 + 15000 + 937.5 = 19837.5
    expected = 19837.5 / 1e6
    for rep in (jrun(archive, "stats", "--by", "model", "--prices", str(prices)),
                orjson.loads(run(archive, "stats", "--by", "model", "--json", env={"SESH_ARCHIVE_PRICES": str(prices)}))):  # fmt: skip
        rows = {r["model"]: r for r in rep["rows"]}
        assert rows["claude-opus-4-8"]["cost_usd"] == pytest.approx(expected)
        assert rows["claude-opus-4-8"]["priced_as"] == "claude-opus-4-8"
        assert rows["gpt-5.1-codex"]["cost_usd"] == pytest.approx(345 / 1e6)  # bundled entries stay
        assert rep["unpriced_models"] == [] and rep["prices"]["as_of"] == "2099-01-01"
        assert rep["prices"]["overrides"] == str(prices)
    bad = tmp_path / "bad.json"
    bad.write_text("{]")
    assert "not JSON" in run(archive, "stats", "--prices", str(bad), code=1)
    bad.write_text('{"models": []}')
    assert "models" in run(archive, "stats", "--prices", str(bad), code=1)
    assert "cannot read" in run(archive, "stats", "--prices", str(tmp_path / "missing.json"), code=1)


def test_stats_text_and_csv(archive: Path) -> None:
    out, err = run_split(archive, "stats", "--by", "model")
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["MODEL", "RESPONSES"] and lines[-1].startswith("TOTAL")
    assert "$0.0117" in out
    assert "genai-prices" in err and "as of" in err
    out, _ = run_split(archive, "stats", "--by", "day", "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["key"] for r in rows] == ["2025-12-09", "2026-11-30"]
    assert rows[1]["input_tokens"] == "390" and rows[1]["unpriced_models"] == ""
    assert rows[0]["cost_usd"] == "0.011729"
    run(archive, "stats", "--json", "--csv", code=2)


def test_stats_by_tool(archive: Path) -> None:
    # issue 22: --by tool groups the vendors' names under neutral kinds; --by vendor-tool keeps them
    rep = jrun(archive, "stats", "--by", "vendor-tool")
    rows = {r["key"]: r for r in rep["rows"]}
    # agtrace: 4 shell_command calls, 2 of them exit non-zero; 1 apply_patch; Claude: 1 Bash;
    # Codex 0.171.0: 1 exec_command
    assert rows["shell_command"] == {"key": "shell_command", "calls": 4, "errors": 2, "no_result": 0, "error_rate": 0.5,
                                     "providers": ["codex"]}  # fmt: skip
    assert {k: r["calls"] for k, r in rows.items()} == {"shell_command": 4, "apply_patch": 1, "Bash": 1, "exec_command": 1}
    assert rep["total"] == {"calls": 7, "errors": 2, "no_result": 0, "error_rate": round(2 / 7, 4)}
    assert "prices" not in rep
    kinds = {r["key"]: r for r in jrun(archive, "stats", "--by", "tool")["rows"]}
    assert {k: r["calls"] for k, r in kinds.items()} == {"shell": 6, "edit": 1}
    assert kinds["shell"]["errors"] == 2 and kinds["shell"]["vendor_tools"] == [
        "claude-code:Bash", "codex:exec_command", "codex:shell_command"]
    out, _ = run_split(archive, "stats", "--by", "vendor-tool")
    assert out.splitlines()[0].split()[:3] == ["TOOL", "CALLS", "ERRORS"] and "0.5000" in out
    out, _ = run_split(archive, "stats", "--by", "tool")
    assert out.splitlines()[1].split()[:3] == ["shell", "6", "2"] and "Bash" in out
    assert jrun(archive, "stats", "--by", "vendor-tool", "--since", "2026-01-01", "--utc")["total"]["calls"] == 2
    assert {r["key"] for r in jrun(archive, "stats", "--by", "vendor-tool", "--provider", "claude-code")["rows"]} == {"Bash"}


def test_show_lists_children_whose_ids_do_not_extend_the_parents(tmp_path: Path) -> None:
    """Codex forks and spawned agents have ids of their own: show finds them by parent."""
    from archive.thread_view import load_view

    db_path = tmp_path / "a.db"
    store = SqliteMessageStore(db_path)
    store.put_thread(Thread(id="parent-1", created_at="2026-01-01T00:00:00Z"))
    for i, child in enumerate(["zz-fork", "aa-agent"]):
        store.put_thread(Thread(id=child, created_at=f"2026-01-0{i + 2}T00:00:00Z", parent_thread_id="parent-1"))
        store.append_message(Message(id=f"{child}-m", thread_id=child, role="user", ts=f"2026-01-0{i + 2}T00:00:00Z",
                                     content=[]))  # fmt: skip
    view = load_view(open_db(db_path), "parent-1")
    assert view.summary["children"] == 2
    assert [c["id"] for c in view.children] == ["zz-fork", "aa-agent"]


def test_a_reader_that_goes_away_is_not_a_failure(tmp_path: Path) -> None:
    """`show X | head -1` exited 1 with no message (issue 32): a closed pipe ends the command
    quietly, exit 0, as git log does."""
    import os
    import subprocess
    import sys

    from tests.ingest_helpers import NEVER_IDLE, canonical_lines, write_lines

    src = tmp_path / "big.jsonl"
    write_lines(src, canonical_lines("big-thread", 400, big=4000))  # far more than a pipe holds
    db = tmp_path / "a.db"
    ingest_paths(open_db(db), [src], NEVER_IDLE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for args in (["show", "big-thread", "--full", "--no-pager"], ["search", "quokka", "--limit", "0"]):
        full = subprocess.run([sys.executable, "-m", "archive", "--db", str(db), *args], capture_output=True, env=env)
        assert len(full.stdout) > 3 << 15, len(full.stdout)  # a pipe holds 64 KiB
        p = subprocess.run(f"{sys.executable} -m archive --db {db} {' '.join(args)} | head -c 10; exit ${{PIPESTATUS[0]}}",
                           shell=True, capture_output=True, env=env, executable="/bin/bash")
        assert p.returncode == 0, (args, p.stderr)
        assert len(p.stdout) == 10 and p.stderr == b""
