"""Every CLI command (and every subcommand of a group) is documented in README.md; every link
in README.md and docs/ leads somewhere, and every ``sesh-archive`` example there parses."""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from archive.cli import cli

README = Path(__file__).parent.parent / "README.md"


def _commands(group: click.Group, prefix: str = "") -> list[str]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        if getattr(cmd, "hidden", False):
            continue
        out.append(prefix + name)
        if isinstance(cmd, click.Group):
            out += _commands(cmd, prefix + name + " ")
    return out


@pytest.mark.parametrize("command", _commands(cli))
def test_command_in_readme(command: str) -> None:
    assert README.exists(), "README.md is missing"
    assert f"sesh-archive {command}" in README.read_text(encoding="utf-8"), f"`sesh-archive {command}` is not in README.md"


# ---------------------------------------------------------------- the pages under docs/, tested as the README is

DOCS = sorted((README.parent / "docs").glob("*.md"))
PAGES = [README, *DOCS]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path) -> None:
    """Relative links name a file that exists, and an anchor a heading of that file."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert broken == []


def _examples(page: Path) -> list[str]:
    """The ``sesh-archive ...`` command lines in the page's shell code blocks."""
    out = []
    for block in re.findall(r"^```(?:bash|sh|console|shell)\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            for part in re.split(r"&&|\|\||;|\|", line):
                part = part.strip()
                if part.startswith("sesh-archive "):
                    out.append(part)
    return out


EXAMPLES = [(page.name, line) for page in PAGES for line in _examples(page)]


def test_the_pages_have_examples() -> None:
    assert len(EXAMPLES) > 20 and {"README.md", "commands.md"} <= {page for page, _ in EXAMPLES}


@pytest.mark.parametrize("page,line", EXAMPLES, ids=[f"{p}:{line[:60]}" for p, line in EXAMPLES])
def test_every_example_parses(page: str, line: str) -> None:
    """Each example's command and options exist and take the values shown (click parses the
    line as the shell would hand it over, without running the command)."""
    words = shlex.split(line, comments=True)[1:]
    words = words[: next((i for i, w in enumerate(words) if w.startswith((">", "2>"))), len(words))]
    if "--help" in words or "--version" in words:
        return
    ctx = cli.make_context("sesh-archive", list(words))
    args = _rest(ctx)
    while args:
        name, args = args[0], args[1:]
        command = cli.get_command(ctx, name) if isinstance(ctx.command, click.Group) else None
        assert command is not None, f"{page}: no command {name!r} in {line!r}"
        ctx = command.make_context(name, args, parent=ctx)
        if not isinstance(command, click.Group):
            break
        args = _rest(ctx)


def _rest(ctx: click.Context) -> list[str]:
    with warnings.catch_warnings():  # Click 8.2 deprecates protected_args (9.0 folds it into args)
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*ctx.protected_args, *ctx.args]


def test_a_stale_example_fails() -> None:
    with pytest.raises(click.UsageError):
        test_every_example_parses("x.md", "sesh-archive threads --no-such-option")
    with pytest.raises(click.UsageError):
        test_every_example_parses("x.md", "sesh-archive stats --by fortnight")
