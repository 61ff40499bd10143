"""Hand-off follows the user's configuration (issue 17): Codex's model provider from the
target's config.toml (profile respected) or --model-provider, --cwd on byte-exact copies,
and resume hints for subagent threads. Through the CLI, as a user types it."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import orjson
from click.testing import CliRunner

from archive.cli import cli

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
CLAUDE_BASH = RECORDED / "claude-code-2.1.197" / "bash" / "projects"
CLAUDE_AGENT = RECORDED / "claude-code-2.1.197" / "agent" / "projects"
CODEX_EXEC = RECORDED / "codex-0.171.0" / "exec" / "sessions"


def session_id(folder: Path) -> str:
    return orjson.loads((folder.parent / "scenario.json").read_bytes())["session_id"]


def run(*args: str, env: dict[str, str] | None = None, code: int = 0) -> tuple[str, str]:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == code, (res.exit_code, res.output)
    return res.stdout, res.stderr


def archive(tmp_path: Path, *folders: Path) -> str:
    db = str(tmp_path / "a.db")
    src = tmp_path / "src"
    for f in folders:
        shutil.copytree(f, src / f.parent.name / f.name)
    run("--db", db, "ingest", "-q", str(src))
    return db


def codex_meta(report: dict, home: Path) -> dict:
    (path,) = [p for p in report["written"] if p.endswith(".jsonl")]
    return orjson.loads(Path(path).read_bytes().split(b"\n", 1)[0])["payload"]


def test_codex_emit_takes_the_provider_the_users_config_names(tmp_path: Path) -> None:
    db = archive(tmp_path, CLAUDE_BASH)
    sid = session_id(CLAUDE_BASH)
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home)}
    # no config: Codex's own default provider
    out, _ = run("--db", db, "emit", sid, "--to", "codex", "-o", str(tmp_path / "o1"), "--json-report", env=env)
    assert codex_meta(json.loads(out), home)["model_provider"] == "openai"
    # a profile selects another provider, as Codex itself would read it
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.1-codex"\nmodel_provider = "openai"\nprofile = "work"\n'
        '[profiles.work]\nmodel_provider = "azure"\nmodel = "gpt-5-azure"\n'
        '[model_providers.azure]\nname = "azure"\nbase_url = "https://example.invalid/v1"\n'
    )
    out, _ = run("--db", db, "emit", sid, "--to", "codex", "--install", "--json-report", env=env)
    report = json.loads(out)
    meta = codex_meta(report, home)
    assert meta["model_provider"] == "azure"
    assert "model_provider 'azure' from the codex configuration" in report["notes"]
    assert report["resume"] == shlex.join(["codex", "resume", report["target_id"]])
    # a Claude thread's model means nothing to Codex: the configured model is used
    turn = next(orjson.loads(line)["payload"] for line in Path(report["written"][0]).read_bytes().splitlines()
                if orjson.loads(line)["type"] == "turn_context")  # fmt: skip
    assert turn["model"] == "gpt-5-azure"
    # the flag wins over the configuration
    out, _ = run("--db", db, "emit", sid, "--to", "codex", "-o", str(tmp_path / "o2"), "--json-report",
                 "--model-provider", "local-llm", env=env)  # fmt: skip
    assert codex_meta(json.loads(out), home)["model_provider"] == "local-llm"


def test_cwd_moves_a_byte_exact_claude_copy_and_is_refused_where_it_cannot(tmp_path: Path) -> None:
    db = archive(tmp_path, CLAUDE_BASH, CODEX_EXEC)
    sid = session_id(CLAUDE_BASH)
    original = next(CLAUDE_BASH.rglob(f"{sid}.jsonl")).read_bytes()
    out, _ = run("--db", db, "emit", sid, "--to", "claude-code", "-o", str(tmp_path / "out"), "--cwd", "/srv/other app",
                 "--json-report")  # fmt: skip
    report = json.loads(out)
    assert report["exact"] and report["files"] == [f"projects/-srv-other-app/{sid}.jsonl"]
    assert (tmp_path / "out" / report["files"][0]).read_bytes() == original
    assert report["resume"] == "cd '/srv/other app' && claude --resume " + sid
    assert any("/srv/other app" in n for n in report["notes"])
    # a Codex rollout names its folder inside: a byte-exact copy cannot move, and says how to
    codex_sid = session_id(CODEX_EXEC)
    _, err = run("--db", db, "emit", codex_sid, "--to", "codex", "-o", str(tmp_path / "c"), "--cwd", "/srv/x", code=1)
    assert "--cwd cannot be applied to a byte-exact codex copy" in err and "--rebuild-format" in err
    assert not (tmp_path / "c").exists()
    out, _ = run("--db", db, "emit", codex_sid, "--to", "codex", "-o", str(tmp_path / "c"), "--cwd", "/srv/x",
                 "--rebuild-format", "--json-report")  # fmt: skip
    assert codex_meta(json.loads(out), tmp_path)["cwd"] == "/srv/x"


def test_a_subagent_threads_hint_resumes_its_parent_session(tmp_path: Path) -> None:
    db = archive(tmp_path, CLAUDE_AGENT)
    sid = session_id(CLAUDE_AGENT)
    out, _ = run("--db", db, "threads", "--json", "--all")
    child = next(t["id"] for t in json.loads(out) if t["id"].startswith(sid + "/"))
    out, _ = run("--db", db, "emit", child, "--to", "claude-code", "-o", str(tmp_path / "o"), "--json-report")
    report = json.loads(out)
    assert report["exact"] and report["target_id"] == sid
    command, _, comment = report["resume"].partition("  # ")
    assert command.endswith(shlex.join(["claude", "--resume", sid])) and child in comment
