"""Kilo Code CLI (npm ``@kilocode/cli``): an OpenCode fork, read and written by the OpenCode
package's readers and emitter under its own name (no copy: ``OpenCodeAdapter`` takes the
name, and with it the data folder, import folder, config file and command).

Where it keeps sessions (checked with Kilo 7.7.7, the newest release with a linux binary on
the registry here):

* ``$XDG_DATA_HOME/kilo/kilo.db``: OpenCode's schema (``session``, ``message``, ``part`` and
  the append-only ``event`` table, ``seq`` per session; WAL mode), plus Kilo's own tables
  (``kilo_board``, ``session_context_epoch``, ...) that the reader leaves alone. Channel
  builds write ``kilo-<channel>.db`` (``KILO_DISABLE_CHANNEL_DB`` turns that off);
  ``KILO_DB`` names another database: an absolute path, or a name in the data folder. A
  ``KILO_DB`` whose file name is not ``kilo*.db`` is found (it is a root) but not taken:
  ``classify`` knows names only, and ``ingest`` names it as unread.
* ``$XDG_DATA_HOME/kilo/storage/``: the legacy JSON storage of OpenCode 1.0-1.1 (what Kilo
  releases before its database wrote; 7.7.7 still writes ``storage/session_diff/``, which
  holds no session), read by ``opencode/storage.py``.

Rows name the provider ``kilo``; usage keys are ``kilo:<part id>``. ``emit --to kilo``
writes the JSON ``kilo import FILE`` reads (OpenCode's export format) under
``kilo-import/``; the resume hint imports it, then resumes with ``kilo --session``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...model import Message, Thread
from ..base import EmitOptions, EmitResult, env_path
from ..opencode import OpenCodeAdapter
from ..opencode.emit import emit_session

NAME = "kilo"
CLIENT_VERSION = "7.7.7"
_DB = re.compile(r"kilo(-[A-Za-z0-9._]+)?\.db")
_VERSION = re.compile(rb'"version":"(\d+)\.')
KILO_MAJOR = 7  # the first major release of Kilo's that OpenCode has not reached


class KiloAdapter(OpenCodeAdapter):
    name = NAME
    revision = 1
    env_vars = ("KILO_DB", "XDG_DATA_HOME")
    # 7.7.7 writes a session's file changes to storage/session_diff/ without the rest of the
    # legacy storage (its sessions are in kilo.db): bookkeeping, not a session
    not_sessions = ("auth.json", "mcp-auth.json", "storage/session_diff/*.json")

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        data = (env_path(env, "XDG_DATA_HOME") or home / ".local" / "share") / NAME
        db = env.get("KILO_DB")
        if not db:
            return [data]
        given = Path(db).expanduser()
        given = given if given.is_absolute() else data / given
        return [data] if given.parent == data else [given, data]

    def detect(self, head: bytes) -> bool:
        """A document of OpenCode's shape whose first line names a Kilo release. Kilo's
        rows are OpenCode's, so only the ``version`` its sessions carry tells them apart:
        Kilo numbers its releases from 7 (7.0.33 is the oldest on the registry), OpenCode
        is at 1.x (1.18.33). Found in Kilo's own folder, a database is Kilo's by its name;
        this is for a file given by hand."""
        if not super().detect(head):
            return False
        found = _VERSION.search(head.split(b"\n", 1)[0])
        return found is not None and int(found.group(1)) >= KILO_MAJOR

    def classify(self, path: Path) -> str | None:
        """OpenCode's file kinds, for Kilo's own files only: a ``kilo*.db`` database, or a
        storage session or import file below a ``kilo`` data folder. OpenCode's files have
        the same names and layout; claimed by name alone (a storage session is taken without
        a look at its content), one of them in a folder given by hand was read as Kilo's."""
        kind = super().classify(path)
        if kind is None or self.is_database(path):
            return kind
        return kind if NAME in path.parts else None

    def is_database(self, path: Path) -> bool:
        return _DB.fullmatch(path.name) is not None

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options, NAME, CLIENT_VERSION)


ADAPTER = KiloAdapter()
