"""Kimi CLI's snapshot documents beside a session's line files (kimi-cli 1.51.0), each fed
whole as one line:

* ``state.json`` (``session_state.py``: approval mode, plan mode, the custom title, todos,
  archive flags), rewritten in place: the client's state, never sent to the model:
  ``SKIPPED`` (kept byte-exact, each rewrite a generation), but for ``archived`` (the user
  archived the session in Kimi's list): ``metadata.archivedInClient``. Its ``custom_title`` is not taken
  as the title: 1.51.0 writes a subagent's prompt there.
* a subagent's ``meta.json`` (``subagents/store.py``: ``agent_id``, ``subagent_type``,
  ``status``, ``description``, ``created_at``): the child thread's ``agentId``, ``title``
  (the description), ``createdAt`` and ``parentThreadId`` (its session's thread).

Stateless; never raises on input.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ...model import JsonObject
from ..base import METADATA, SKIPPED, Report, Row, SourceInfo, ThreadFact, decode_object, epoch_iso, nonempty_str
from .common import session_parts, thread_of


class SideParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.thread = thread_of(source.path, source.source_id)
        found = session_parts(source.path)
        self.session = found[0] if found else None

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if d is None:
            return iter(())
        if isinstance(d, Report):
            return iter([d])
        if Path(self.source.path).name == "meta.json" or "subagent_type" in d:
            return iter(list(self._meta(d)))
        # the one fact kept: the user archived the session in Kimi's session list
        fact = ThreadFact(self.thread, {"metadata": {"archivedInClient": d.get("archived") is True}})
        return iter([fact, Report(SKIPPED, "state.json (the session's approval, plan and title state)", None)])

    def _meta(self, d: JsonObject) -> Iterator[Row]:
        fields: JsonObject = {}
        agent = nonempty_str(d.get("agent_id"))
        if agent:
            fields["agentId"] = agent
        if nonempty_str(d.get("description")):
            fields["title"] = d["description"]
        created = epoch_iso(d.get("created_at"), scale=1)
        if created:
            fields["createdAt"] = created
        if self.session and self.thread != self.session:
            fields["parentThreadId"] = self.session
        meta = {k: d[k] for k in ("subagent_type", "status") if nonempty_str(d.get(k))}
        if meta:
            fields["metadata"] = {"subagentType" if k == "subagent_type" else k: v for k, v in meta.items()}
        yield ThreadFact(self.thread, fields)
        yield Report(METADATA, "subagent meta.json", None)
