"""The conversation page's "Take it anywhere" panel (issue 41): download links of the
thread's export (HTML, Markdown) and the commands that resume it, in its own client and in
each client it can be handed to.

Invariants: read-only and text only. The export links are GETs the plugin answers from the
read-only connection (``archive.export``, secrets masked unless ``serve --show-secrets``);
the resume commands are ``export.resume_plan``'s, the same the ``resume`` command prints,
and ``sesh-archive resume ID --to CLIENT`` for every installable client: the page never
writes, emits or installs anything itself.
"""

from __future__ import annotations

import shlex
import sqlite3
from typing import Any

from sqlite_utils import Database

from ..emit import INSTALLABLE
from ..export import FORMATS, resume_plan

FORMAT_LABELS = {"html": "HTML (one file, opens offline)", "md": "Markdown"}


def panel(conn: sqlite3.Connection, thread_id: str, export_url: Any) -> dict[str, Any]:
    """What sesh_take.html shows; ``export_url(format)`` is the download link of a format."""
    plan = resume_plan(Database(conn), thread_id)
    own = {"client": plan.provider, "command": plan.full_command(), "notes": plan.notes}
    targets = [{"client": t, "command": shlex.join(["sesh-archive", "resume", thread_id, "--to", t])}
               for t in INSTALLABLE if t != plan.provider]  # fmt: skip
    return {"exports": [{"format": f, "label": FORMAT_LABELS[f], "href": export_url(f)} for f in FORMATS],
            "own": own, "targets": targets}  # fmt: skip
