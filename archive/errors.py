"""The archive's one domain error. A leaf module: every layer raises it, and the CLI (and only
the CLI) turns it into a message and exit code 1."""

from __future__ import annotations


class ArchiveError(Exception):
    """A domain error the CLI turns into a message and exit code 1."""
