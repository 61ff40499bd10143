"""The adapter contract every vendor module implements.

An adapter never touches SQLite or click. Ingest hands it ``(offset, line bytes)`` pairs
of one source, in file order, and stores what it yields. Invariants the ingest engine
relies on (each is tested for every adapter):

* **Resumable.** ``parser.state()`` is a small JSON-serialisable dict. A parser built
  from that state and fed the remaining lines yields exactly the rows that one parser
  fed the whole file would have yielded: ingest may stop after any line and continue
  in another process.
* **Deterministic.** Rows depend only on the source id, the generation, the offsets and
  the bytes; never on the clock, the path's parent folders, or the machine. Thread and
  message ids come from vendor ids where those exist, otherwise from ``stable_id``.
* **Nothing silent.** Every line yields at least one row: a message, a thread fact, or a
  ``Report`` saying why it holds nothing for the projection. (Ingest records a line that
  yields nothing as ``unexplained``, which tests treat as a bug.)
* **Never raises on input.** Bad bytes, bad JSON or unexpected shapes become reports;
  the parser continues with the next line.

Row semantics, as ingest applies them:

* ``ThreadFact(thread_id, fields)``: a partial thread in the seed's camelCase
  (``title``, ``createdAt``, ``parentThreadId``, ``originMessageId``, ``agentId``,
  ``metadata``). A fork (a thread that continues another's history from a point, unlike a
  subagent) says so with ``metadata.forkedFrom`` = its parent thread id and
  ``originMessageId`` = the fork point. A thread is the fold of all its facts in (source, generation, offset)
  order: top-level keys overwrite, ``metadata`` merges key by key.
* ``MessageRow(message)``: stored once per message id; every line that
  yields it is recorded as an occurrence. Attachment ``data`` moves to the blobs table.
  ``MessageRow(message, revises=True)``: a later version of a message the same source
  already yielded (a vendor that upserts messages by id, like Gemini CLI, or a
  database row updated in place, like OpenCode's); it replaces the
  stored content, blocks included, and keeps the first version's place in the thread.
* ``UsageRow(key, ...)``: one model response's tokens, in the neutral buckets (see
  ``Usage``): the adapter normalises its vendor's figures, keeping the raw ones in
  ``usage.extra``. Rows sharing a key are one response: the row from the latest line wins
  (split Claude responses repeat a snapshot), so nothing is counted twice. ``message_id``
  names the message that carries the response; the store gives that message the usage as
  ``Message.usage``.
* ``BlobRow(data, media_type)``: bytes stored once by sha256 (clm's blob files).
* A line ``emit`` wrote carries a mark (``EMIT_MARK``, see ``mark_record``); the parser
  passes its rows through ``claim_emitted``, which yields the message under the canonical
  id it was written from (stored once: a hand-off continues its origin, linked by ingest
  like a fork) and says which thread it came from (``metadata.emittedFrom``).
* ``Report(kind, reason, detail)``: why a line (or part of it) is not in the projection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, Union

import orjson

from .emitted import EmittedFiles, MessageStream, file_chunks  # noqa: F401  re-exported
from .tool_paths import default_touched_paths
from ..model import Attachment, JsonObject, Message, ToolResult, Usage

# Report kinds. Reasons are free text within a kind (usually the vendor record type).
METADATA = "metadata"  # folded into thread metadata; no message
SKIPPED = "skipped"  # vendor bookkeeping, kept in the source layer only
DUPLICATE = "duplicate"  # a view that repeats content stored from another line
UNKNOWN = "unknown"  # a record type this adapter does not know (kept as unknown / raw)
PARSE_ERROR = "parse_error"  # not JSON, or not a JSON object
INVALID = "invalid"  # JSON, but not the vendor's shape
REFUSED = "refused"  # the whole file refused (for example a newer format version)
WARNING = "warning"  # the message is kept, but something about it is off
UNEXPLAINED = "unexplained"  # written by ingest when a parser yields nothing for a line
ADAPTER_ERROR = "adapter_error"  # written by ingest when a parser raised (a bug to fix)

REPORT_KINDS = (
    METADATA, SKIPPED, DUPLICATE, UNKNOWN, PARSE_ERROR, INVALID, REFUSED, WARNING, UNEXPLAINED, ADAPTER_ERROR,
)

LINES = "lines"  # append-only JSON Lines file, read incrementally
SNAPSHOT = "snapshot"  # whole document rewritten in place; each changed version is a generation
# a database (OpenCode): the adapter reads it through ``Adapter.documents`` and each document
# it gives (JSON lines at a virtual path, one per session) is ingested as a LINES source
RECORDS = "records"


@dataclass(frozen=True)
class SourceInfo:
    source_id: str
    provider: str
    path: str  # where the bytes were read this time; a moved file keeps its source_id
    generation: int = 1
    kind: str = LINES


@dataclass(frozen=True)
class ThreadFact:
    thread_id: str
    fields: JsonObject


@dataclass(frozen=True)
class MessageRow:
    message: Message
    revises: bool = False  # replaces the version this source yielded before (same id)


@dataclass(frozen=True)
class UsageRow:
    key: str  # identity of one model response within the provider
    thread_id: str
    usage: Usage
    message_id: str | None = None
    model: str | None = None
    ts: str | None = None
    provider: str | None = None  # whose model answered, when not the source's vendor (canonical files)


@dataclass(frozen=True)
class BlobRow:
    data: bytes
    media_type: str | None = None


@dataclass(frozen=True)
class Report:
    kind: str
    reason: str
    detail: str | None = None


Row = Union[ThreadFact, MessageRow, UsageRow, BlobRow, Report]

#: ``Report.reason`` of a prompt read from a side file's prompt history (not a transcript):
#: its ``detail`` is JSON ``{"thread", "session", "project", "ts", "prompt"}`` (``thread``:
#: the thread id the session's transcript has, or None when the vendor wrote no session id).
#: A prompt whose thread has no message in the archive is a lost session (view
#: ``lost_sessions``); the line itself stays in the source layer, byte for byte.
PROMPT_HISTORY = "prompt history"
#: ``Report.reason`` of any other side file (todos, tasks, plans, file backups, usage logs):
#: ``detail`` is JSON ``{"kind", "thread", ...}``, the kind and the thread it belongs to
SIDE_FILE = "side file"


def prompt_report(thread: str | None, session: str | None, project: str | None, ts: str | None,
                  prompt: str | None) -> Report:
    """The row of one prompt of a prompt history (``PROMPT_HISTORY``)."""
    detail = {"thread": thread, "session": session, "project": project, "ts": ts, "prompt": prompt}
    return Report(METADATA, PROMPT_HISTORY, orjson.dumps(detail).decode())


def side_report(kind: str, thread: str | None, **fields: Any) -> Report:
    """The row of a side file that is not a prompt history (``SIDE_FILE``)."""
    return Report(METADATA, SIDE_FILE, orjson.dumps({"kind": kind, "thread": thread, **fields}).decode())


#: ``Report.reason`` of a file checkpoint a transcript names: ``detail`` is JSON ``{"thread",
#: "message", "path", "backup", "version", "at"}``: the file at ``path`` as it was before
#: ``message`` changed it is the side file whose path ends with ``/<backup>`` (None: the file
#: did not exist yet); ``at`` is "edit" (taken just before the message's edit) or "prompt"
#: (a checkpoint at the prompt ``message``)
CHECKPOINT = "file checkpoint"


def checkpoint_report(thread: str | None, message: str, path: str, backup: str | None, version: int | None,
                      at: str) -> Report:
    """The row of one file checkpoint (``CHECKPOINT``)."""
    detail = {"thread": thread, "message": message, "path": path, "backup": backup, "version": version, "at": at}
    return Report(METADATA, CHECKPOINT, orjson.dumps(detail).decode())


@dataclass(frozen=True)
class Retention:
    """How long a vendor keeps its transcripts before deleting them (``Adapter.retention``)."""

    days: float
    setting: str  # the setting, as the user writes it (``cleanupPeriodDays`` in ~/.claude/settings.json)
    change: str  # how to keep transcripts longer, in one sentence


@dataclass(frozen=True)
class Document:
    """One source of a ``RECORDS`` database: JSON lines, each ending in a newline, each a
    byte-exact serialisation of rows read from the database, ordered by a position that
    only grows (OpenCode: the ``event`` table's ``seq``). A later read of the same database
    gives the same bytes followed by new lines, so ingest reads it as an append-only file:
    offsets are stable, reruns idempotent and incremental. ``path`` is virtual
    (``<database path>#<session id>.jsonl``): where the lines are said to come from."""

    path: str
    data: bytes


@dataclass(frozen=True)
class Registration:
    """A row the client's own index must hold before it resumes an installed session:
    ``--install`` adds it (``INSERT OR IGNORE``, only the columns the table has) to ``table``
    of the database at ``database`` (relative to the install base) when that database and
    table exist, and says so in the report when they do not."""

    database: str
    table: str
    row: Mapping[str, Any]


#: ``query(sql, params) -> rows``: one read-only statement on the database being read
#: (``archive.readonly``: read-only URI, busy retried, text as bytes)
Query = Callable[[str, Sequence[Any]], list]


class Parser(Protocol):
    def feed(self, offset: int, line: bytes) -> Iterable[Row]:
        """Rows for one complete line (without its newline) that starts at ``offset``."""

    def state(self) -> JsonObject:
        """JSON-serialisable state; ``adapter.parser(source, state)`` resumes from it."""


@dataclass(frozen=True)
class EmitOptions:
    """What a caller may choose about an emitted session. Every emitter takes the same
    options and ignores what its format has no place for."""

    cwd: str | None = None  # the project folder the session is filed under and runs in
    session_id: str | None = None  # the id the target knows it by (default: derived from the thread id)
    model: str | None = None  # used when the thread names none
    model_provider: str | None = None  # the provider name the target's config uses (Codex)
    client_version: str | None = None  # the client version written into the session envelope
    git_branch: str | None = None  # used when the thread names none
    base_instructions: str | None = None  # a system prompt to record, where the format has one
    reasoning: str = "summary"  # reasoning the target cannot verify: "summary" (as text) or "drop"
    blobs: Mapping[str, bytes] = field(default_factory=dict)  # sha256 -> bytes of attachments


class EmitError(ValueError):
    """A thread that cannot be written in the target format (for example no project folder)."""


# The loss reports of every emitter read "subject: what happened (why)"; a loss every
# target shares is worded once, here.
CHILD_THREADS_NOT_WRITTEN = "child threads: not written (emit each on its own: sesh-archive emit CHILD --to TARGET)"


@dataclass
class EmitResult:
    """Files an emitter wrote (relative path -> bytes) and what it dropped or changed."""

    files: EmittedFiles = field(default_factory=EmittedFiles)
    counts: dict[str, int] = field(default_factory=dict)  # "reason" -> how many
    notes: list[str] = field(default_factory=list)
    resume_hint: str | None = None
    thread_id: str | None = None  # the id the target knows the session by

    def count(self, reason: str, n: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n


class Adapter:
    """Base class of a vendor package's adapter: everything the rest of the archive needs to
    know about a vendor is asked here (nothing outside ``archive/vendors/`` names one)."""

    name: str = ""
    #: environment variables the default locations depend on (documented in the README)
    env_vars: tuple[str, ...] = ()
    #: ``Message.extra`` keys copied verbatim from the top level of the message's own JSON
    #: line; when large, the archive stores a reference and reads the value back from the
    #: stored line (``projection.LINE_REF``)
    line_backed_extra: tuple[str, ...] = ()
    #: bumped when the rows this adapter derives change in a way that old archives must be
    #: re-derived for (the archive rebuilds the provider's sources on its next open for writing)
    revision: int = 1
    #: ``emit`` writes this vendor's session files (``emit --to NAME``)
    emits: bool = False
    #: sessions are filed under their project folder: an emit without a cwd on record or
    #: given uses the current folder (and says so)
    needs_cwd: bool = False
    #: a fork's file leaves its inherited history in its parent's file (Codex 0.171 names the
    #: source rollout), so a byte-exact copy of a fork brings its ancestors' files too; a fork
    #: that repeats the history (Claude Code ``--fork-session``) stands alone
    fork_reads_parent_files: bool = False
    #: what the source layer keeps is not a file the client reads (a database's documents):
    #: ``restore`` also writes each of the source's threads through this vendor's emitter,
    #: in the form the client imports
    restores_by_emit: bool = False
    #: vendor tool name -> neutral kind (shell, edit, read, search, web, agent, plan, ...),
    #: so statistics can group the same action across vendors; unmapped names stay as they are
    tool_kinds: Mapping[str, str] = {}
    #: globs (relative to a default root) of files there that look like sessions but are the
    #: client's own bookkeeping: not named as unread (``archive/unread.py``)
    not_sessions: tuple[str, ...] = ()

    #: files the vendor writes inside a project folder, as globs relative to it (no ``**``;
    #: a subfolder is fine): ``archive/project_roots.py`` matches them in every project folder
    #: the archive knows and in the roots the user named, and ``classify`` takes each match
    project_patterns: tuple[str, ...] = ()

    def touched_paths(self, tool_name: str | None, value: Any) -> Iterable[tuple[str, str]]:
        """The files a tool call names and what it did to each (``read``, ``created``,
        ``changed``, ``deleted``, ``named``), paths as written (``vendors/tool_paths.py``:
        the usual path keys, patch headers, a conservative reading of shell commands).
        Override for a tool whose input puts its paths elsewhere."""
        kind = self.tool_kinds.get(tool_name or "", tool_name)
        return default_touched_paths(kind, value)

    def message_signal(self, role: str, text: str | None, extra: Mapping[str, Any]) -> str | None:
        """``compaction`` when this message marks a compaction of the context, ``interrupted``
        when it marks a turn the user interrupted; None otherwise (``archive/signals.py``)."""
        return None

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []

    def project_dirs(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Project folders the vendor itself lists (a projects file in its data folder), to
        be matched against ``project_patterns`` like the archive's own; never a disk walk."""
        return []

    def classify(self, path: Path) -> str | None:
        """``LINES``/``SNAPSHOT`` if this path (by name and place) is one of ours, else None."""
        return None

    def detect(self, head: bytes) -> bool:
        """Does this first line (or first 64 KiB) look like our format? For files given by
        hand whose names say nothing."""
        return False

    def session_scope(self, metadata: JsonObject) -> str | None:
        """The scope (a project folder) in which a thread of this vendor may be the session a
        saved copy (a thread whose metadata names ``savedCopyScope``) was saved from; None:
        never (``archive/saved_copies.py``)."""
        return None

    def given_kind(self, path: Path, head: bytes) -> str:
        """How a file given by hand that ``detect`` recognised is read: as its name and place
        say (``classify``), else as lines. A vendor whose sessions are whole JSON documents
        says ``SNAPSHOT`` for one moved or renamed out of its folder."""
        return self.classify(path) or LINES

    def snapshot_key(self, path: Path) -> str:
        """Identity of a snapshot source (a document rewritten in place): by default its
        last three path components, which survive a vendor moving a session folder."""
        return "/".join(path.parts[-3:])

    def session_key(self, path: Path) -> str | None:
        """Which session a line file holds, from its path alone: two files at different
        paths with the same key are one session (a rollout being archived, a log and its
        ``.bak``), two with different keys are two sessions even if their first lines are
        the same. By default the file name without its extensions (``<sessionId>.jsonl``,
        ``rollout-<time>-<id>.jsonl.zst``, ``<id>.jsonl.bak``); an adapter that knows
        better overrides it."""
        return path.name.split(".", 1)[0] or None

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Parser:
        raise NotImplementedError

    # -- side files: what the vendor keeps beside its transcripts and deletes or rewrites too

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Files and folders beside the transcripts that the vendor deletes or rewrites too
        (prompt histories, todos, plans, file backups, usage logs). ``ingest`` walks them as
        it walks ``default_roots`` (a root may be a single file); ``classify`` says which
        files are sources and ``parser`` reads them (rows of ``prompt_report`` and
        ``side_report``)."""
        return []

    def stored_form(self, path: Path, data: bytes) -> bytes:
        """What the source layer keeps of a ``SNAPSHOT`` file: its bytes, unless the file
        also holds what must never be archived (Claude Code's ``~/.claude.json`` holds
        account data beside the projects' prompt history): then a derived document, stated
        in the adapter's docstring, and never byte-exact of the whole file."""
        return data

    def retention(self, env: Mapping[str, str], home: Path) -> Retention | None:
        """How long the vendor keeps transcripts before it deletes them, read from its own
        settings (None: it never deletes them, or says nothing)."""
        return None

    def documents(self, path: Path, query: Query | None) -> Iterable[Document]:
        """For a path ``classify`` calls ``RECORDS``: the documents (one per session) read
        from the database through ``query``; each is then ingested as a line file. For a
        record of files (``record_files``) ``query`` is None: the adapter reads the files."""
        return ()

    def record_files(self, path: Path) -> list[str] | None:
        """For a ``RECORDS`` path that is not a database but one record kept as several files
        (OpenCode's JSON storage before 1.2: a session's info, message and part files): every
        file it is read from, listed without opening any (ingest passes the record over when
        none of their stats changed). None: a database."""
        return None

    def unpack(self, document_path: str, data: bytes) -> list[tuple[str, bytes]]:
        """The files a restored document of a record of files holds (``record_files``):
        (path relative to ``/``, the file's bytes), written by ``restore`` beside it."""
        return []

    def emit(self, thread: Any, messages: list[Message], children: Sequence[tuple[Any, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        """A session of this vendor for ``thread``, its ``messages`` and its child threads."""
        raise NotImplementedError(f"{self.name}: emit is not implemented")

    # -- laying files out in the vendor's home (``emit --install``, ``restore``)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        """Where a stored source file goes, relative to the parent of the first default
        root (``projects/<slug>/<id>.jsonl`` for ``~/.claude``); None: not a file to write
        back (an older generation's name, such as clm's ``.bak``). ``cwd``: file it under
        that project folder instead (only asked when ``relocates``)."""
        root = self.default_roots({}, Path("/"))
        return str(Path(root[0].name) / Path(stored_path).name) if root else Path(stored_path).name

    def install_registrations(self, files: Mapping[str, bytes], base: Path) -> list[Registration]:
        """Rows the client's own index needs for the session files ``--install`` wrote under
        ``base`` (relative path -> bytes): most clients find sessions by their files alone."""
        return []

    def companion_markers(self, thread_id: str) -> tuple[str, ...]:
        """Path fragments of sources that belong to a thread without holding its lines
        (images, spooled outputs): they travel with a byte-exact copy of the thread."""
        return ()

    def merge_installed(self, rel: str, existing: bytes, emitted: bytes) -> bytes | None:
        """An emitted file that already exists where ``--install`` writes it: the bytes to
        write instead (an index the client finds sessions through, the user's own with the
        emitted entry added), or None to refuse (the default: nothing is overwritten)."""
        return None

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        """The shell command that resumes an installed session, every argument quoted."""
        return None

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``EmitOptions`` fields the user's own configuration of this vendor decides (the
        model provider a config file names, ...); an emit applies them where the caller gave
        none, so the emitted session is one the user's client accepts."""
        return {}

    def relocates(self) -> bool:
        """Can a byte-exact copy be filed under another project folder (``emit --cwd``)
        without changing its bytes? (``install_path`` then takes ``cwd``.)"""
        return False


def relative_to_marker(path: str, markers: Sequence[str], rename: Mapping[str, str] | None = None) -> str | None:
    """``path`` from the last of its components named in ``markers`` (renamed through
    ``rename``: Codex's ``archived_sessions`` goes back where resume looks), or None."""
    parts = Path(path).parts
    for marker in markers:
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            return str(Path((rename or {}).get(marker, marker), *parts[i + 1:]))
    return None


def command(*argv: str) -> str:
    """A shell command line with every argument quoted (ids and paths are not trusted)."""
    return shlex.join(argv)


# ---------------------------------------------------------------- helpers for adapters


# the key of the response a message carries travels in Message.usage, so that a message
# ingested again (a canonical export read back) counts the same response, not a second one
# ToolResult.extra[COMPANION]: the path fragment (last components) of a companion file that
# holds the result's full output where the transcript keeps only a preview; the archive
# stores the file as a source of its own and reads it back (``archive.companions``)
COMPANION = "companion"
RESPONSE_KEY = "responseKey"
RESPONSE_MODEL = "responseModel"  # the response's model, where it is not the message's
# Message.extra[RESPONSE_LINK] and Usage.extra[RESPONSE_LINK]: a response whose usage the vendor
# writes in another file than its message (Kimi CLI: wire.jsonl beside context.jsonl), named the
# same way by both parsers; the projection gives the usage row the message of its thread that
# carries the same link (``usage.message_id``), whichever file was read first.
RESPONSE_LINK = "responseLink"


def message_response_key(message_id: str) -> str:
    """The response key of a message's usage when the usage names none (appended through
    the store, or written by hand into canonical JSONL); such a key is not repeated in
    ``Message.usage``, so an appended message reads back equal."""
    return f"message:{message_id}"


def response_row(msg: Message) -> UsageRow | None:
    """The usage row of a message appended or read whole (store, canonical JSONL): keyed by
    the response key it carries, so the same response read twice is counted once."""
    if msg.usage is None:
        return None
    key = (msg.usage.extra or {}).get(RESPONSE_KEY)
    provider = msg.provenance.provider if msg.provenance else None
    model = (msg.usage.extra or {}).get(RESPONSE_MODEL) or (msg.extra or {}).get("model")
    return UsageRow(key if isinstance(key, str) and key else message_response_key(msg.id), msg.thread_id,
                    msg.usage, msg.id, model if isinstance(model, str) else None, msg.ts, provider)



def image_url(media: str | None, data: str | None, uri: str | None) -> str | None:
    """An image as a URL a target writes: base64 data as a ``data:`` URL, else a ``data:``
    or http(s) URI; None when there is neither."""
    if data:
        return f"data:{media or 'image/png'};base64,{data}"
    if uri and uri.startswith(("data:", "https://", "http://")):
        return uri
    return None


def output_image(item: Any, attachments: Sequence[Attachment]) -> JsonObject | None:
    """A canonical tool output item that is an image with its bytes, as
    ``{"type": "image", "data": base64, "mimeType"}`` (pi's image part): pi's own, Claude's
    base64 ``image`` source, the ``{"type": "image", "attachment": k}`` placeholder for the
    k-th of ``attachments`` (the tool result's Attachment blocks), or a Codex
    ``input_image`` data URL. None for anything else, or an image without bytes."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("attachment"), int):
        k = item["attachment"]
        att = attachments[k] if 0 <= k < len(attachments) else None
        if att is not None and att.data and (att.media_type or "").startswith("image/"):
            return {"type": "image", "data": att.data, "mimeType": att.media_type}
        return None
    kind = item.get("type")
    if kind == "image" and isinstance(item.get("data"), str):
        return {"type": "image", "data": item["data"], "mimeType": item.get("mimeType") or "image/png"}
    if kind == "image" and isinstance(item.get("source"), dict) and item["source"].get("type") == "base64":
        return {"type": "image", "data": item["source"].get("data"), "mimeType": item["source"].get("media_type")}
    url = item.get("image_url")
    if kind == "input_image" and isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        header, _, data = url.partition(",")
        return {"type": "image", "data": data, "mimeType": header[5:].split(";")[0] or "image/png"}
    return None


def nonempty_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None (vendor fields of any shape)."""
    return value if isinstance(value, str) and value else None


def stable_id(*parts: object, length: int = 32) -> str:
    """A deterministic id from parts (source id, offset, content hash...)."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:length]


def env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name)
    return Path(os.path.expanduser(value)) if value else None


# A JSON string escape: an escaped backslash (consumed, so the "u" after it is text), a
# high surrogate with the low one that completes it, or a surrogate standing alone.
_SURROGATE_ESCAPE = re.compile(
    rb"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|(\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_LONE = re.compile(rb"\\u[dD][89a-fA-F]")


def decode_object(line: bytes) -> dict[str, Any] | Report | None:
    """A session line as a parser wants it: None for a blank line, a ``PARSE_ERROR`` report
    for one that is not JSON or not a JSON object, else the object."""
    if not line.strip():
        return None
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        return Report(PARSE_ERROR, "invalid JSON", str(e))
    if not isinstance(d, dict):
        return Report(PARSE_ERROR, "not a JSON object")
    return d


def epoch_iso(value: Any, scale: float = 1000) -> str | None:
    """An epoch number (milliseconds; ``scale=1`` for seconds) as an ISO-8601 UTC time with
    milliseconds (``2026-01-02T03:04:05.678Z``), as the side files' readers report it; None
    for anything else, or a number no date has."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value / scale, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def loads_line(line: bytes) -> tuple[Any, Report | None]:
    """One JSON line, and a warning when it had to be repaired. orjson first; only when it
    refuses and the line holds a surrogate escape, each lone surrogate escape (Node's
    ``JSON.stringify`` writes ``"\\ud83d"`` for a string cut through an emoji; orjson,
    like the JSON spec, refuses it) becomes U+FFFD and the line is parsed again. Raises
    ``orjson.JSONDecodeError`` (the first error) when that does not make it JSON."""
    try:
        return orjson.loads(line), None
    except orjson.JSONDecodeError as e:
        if not _LONE.search(line):
            raise
        first = e
    lone = 0

    def fix(m: re.Match[bytes]) -> bytes:
        nonlocal lone
        if m.group(1) or m.group(3):
            return m.group(0)  # an escaped backslash, or a complete pair
        lone += 1
        return b"\\ufffd"

    fixed = _SURROGATE_ESCAPE.sub(fix, line)
    if not lone:
        raise first
    try:
        value = orjson.loads(fixed)
    except orjson.JSONDecodeError:
        raise first from None
    return value, Report(WARNING, "lone surrogate", f"{lone} lone surrogate escape(s) replaced by U+FFFD; exact bytes are in the source layer")


def json_line_rows(line: bytes, record: Callable[[Any], Iterator[Row]]) -> Iterator[Row]:
    """The rows of one line of a JSON-lines side file (a prompt history, a usage log): a
    ``SKIPPED`` report for a blank line, a ``PARSE_ERROR`` for one that is not JSON, the
    lone-surrogate warning ``loads_line`` gives, else what ``record`` makes of the value."""
    if not line.strip():
        yield Report(SKIPPED, "blank line")
        return
    try:
        d, warn = loads_line(line)
    except orjson.JSONDecodeError as e:
        yield Report(PARSE_ERROR, "invalid JSON", str(e))
        return
    if warn is not None:
        yield warn
    yield from record(d)


class StatelessParser:
    """A side-file parser whose lines stand alone: no state to carry between batches."""

    def __init__(self, source: SourceInfo, state: Any = None) -> None:
        self.source = source

    def state(self) -> dict[str, Any]:
        return {}


# ---------------------------------------------------------------- recognising emitted lines

#: a top-level field of every line a cross-vendor ``emit`` writes, which the clients ignore
#: and keep when they resume the file (they append after it; tests/test_clients.py):
#: ``{"m": canonical message id (None: a line the emitter added), "t": the thread id (first
#: line only), "u": the key of the response whose usage the line carries, "h": digest of the
#: line without the mark, "r": for a line holding tool results written from other messages
#: than the line's own (a Gemini CLI record keeps its calls' results), each result's call id ->
#: the canonical message it was written from}``
EMIT_MARK = "seshArchive"


def _digest(record: Mapping[str, Any]) -> str:
    return stable_id(orjson.dumps(record).decode("utf-8", "surrogatepass"), length=16)


def mark_record(record: JsonObject, message_id: str | None, thread_id: str | None = None,
                response: str | None = None, results: Mapping[str, str] | None = None) -> JsonObject:
    """``record`` with the emit mark as its last key: the canonical message it was written
    from (None for a line the emitter added: a synthesized tool result, an opening prompt),
    the thread it was emitted from (on the session's first line), the response key of the
    usage it carries (``emitted_response``), the messages its tool results were written from
    (``results``: call id -> message id) and a digest of the record
    as written, so that a line edited afterwards is not taken for the archived message."""
    mark: JsonObject = {"m": message_id}
    if thread_id is not None:
        mark["t"] = thread_id
    if response is not None:
        mark["u"] = response
    if results:
        mark["r"] = dict(results)
    mark["h"] = _digest(record)
    return {**record, EMIT_MARK: mark}


def emitted_response(msg: Message) -> str | None:
    """The key of the response whose usage ``msg`` carries, for ``mark_record``."""
    if msg.usage is None:
        return None
    key = (msg.usage.extra or {}).get(RESPONSE_KEY)
    if isinstance(key, list):
        return None  # several responses on one message: the target's line holds their sum
    return key if isinstance(key, str) and key else message_response_key(msg.id)


def intact_mark(record: Any) -> JsonObject | None:
    """The emit mark of ``record`` when the record is as emit wrote it (its digest holds), else None."""
    mark = record.get(EMIT_MARK) if isinstance(record, dict) else None
    if not isinstance(mark, dict) or mark.get("h") != _digest({k: v for k, v in record.items() if k != EMIT_MARK}):
        return None
    return mark


def emitted_id(record: Any) -> str | None:
    """The canonical message id an intact emit mark names (for a parser that links other
    records to the message, as a subagent to the message spawning it), else None."""
    mark = intact_mark(record)
    return None if mark is None else nonempty_str(mark.get("m"))


def claim_emitted(record: Any, rows: Iterable[Row], held: MutableMapping[str, Any] | None = None) -> Iterator[Row]:
    """The rows of one parsed line, read as what ``emit`` wrote when the line carries an
    intact mark: each message under the canonical id it was written from (ingest stores it
    once and links the thread to its origin), the response usage left to the origin (counted
    once: its usage keyed as the archived response, which the line of the thread owning the
    message outranks; usage the emitter made up, such as zeros, is reported), a line the emitter added reported instead of archived, and the thread's
    ``metadata.emittedFrom``. A line without a mark, or changed since it was written (its
    digest differs), is the thread's own, as parsed.

    ``held`` (kept in the parser's state): the message last claimed. An archived message the
    target writes on several lines (a text and a tool call; a call and its result) is one
    message: each further part yields it again with the parts so far (``revises``), so an
    archive without the original holds it whole; beside the original, the original's wins."""
    mark = record.get(EMIT_MARK) if isinstance(record, dict) else None
    if not isinstance(mark, dict):
        yield from rows
        return
    if mark.get("h") != _digest({k: v for k, v in record.items() if k != EMIT_MARK}):
        yield Report(WARNING, "emitted line changed", "the line differs from what emit wrote: archived as this thread's own")
        yield from rows
        return
    origin, source, response = nonempty_str(mark.get("m")), nonempty_str(mark.get("t")), nonempty_str(mark.get("u"))
    r = mark.get("r")
    results: dict[str, Any] = r if isinstance(r, dict) else {}
    thread_id = None
    for row in rows:
        if isinstance(row, MessageRow):
            thread_id = thread_id or row.message.thread_id
            own = origin
            calls = {b.call_id for b in row.message.content if isinstance(b, ToolResult)}
            if calls and calls <= results.keys() and len({results[c] for c in calls}) == 1:
                own = nonempty_str(results[next(iter(calls))])  # a result the line keeps for another message
            if own is None:
                yield Report(SKIPPED, "emitted filler", "a line emit added for the client (not in the archived thread)")
                continue
            msg, revises = dataclasses.replace(row.message, id=own), row.revises
            before = held.get("message") if held is not None else None
            if isinstance(before, dict) and before.get("id") == own and before.get("threadId") == msg.thread_id:
                first = Message.from_dict(before)
                msg, revises = dataclasses.replace(first, content=first.content + msg.content), True
            if held is not None:
                held["message"] = msg.to_dict()
            yield MessageRow(msg, revises)
        elif isinstance(row, UsageRow) and response is not None:
            yield dataclasses.replace(row, key=response, message_id=origin or row.message_id)
        elif isinstance(row, UsageRow):
            yield Report(SKIPPED, "emitted usage", "usage the emitter wrote where the archived thread has no response")
        else:
            if isinstance(row, ThreadFact):
                thread_id = thread_id or row.thread_id
            yield row
    if source is not None and thread_id is not None and thread_id != source:
        yield ThreadFact(thread_id, {"metadata": {"emittedFrom": source}})
