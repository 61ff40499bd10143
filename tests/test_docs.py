"""Every CLI command (and every subcommand of a group) is documented in README.md."""

from __future__ import annotations

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
