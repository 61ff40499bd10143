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
  ``metadata``). A thread is the fold of all its facts in (source, generation, offset)
  order: top-level keys overwrite, ``metadata`` merges key by key.
* ``MessageRow(message)``: stored once per message id; every line that
  yields it is recorded as an occurrence. Attachment ``data`` moves to the blobs table.
* ``UsageRow(key, ...)``: one model response's tokens. Rows sharing a key are one
  response: the row from the latest line wins (split Claude responses repeat a snapshot),
  so nothing is counted twice.
* ``BlobRow(data, media_type)``: bytes stored once by sha256 (clm's blob files).
* ``Report(kind, reason, detail)``: why a line (or part of it) is not in the projection.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Union

import orjson

from ..model import JsonObject, Message, Usage

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


@dataclass(frozen=True)
class UsageRow:
    key: str  # identity of one model response within the provider
    thread_id: str
    usage: Usage
    message_id: str | None = None
    model: str | None = None
    ts: str | None = None


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


class Parser(Protocol):
    def feed(self, offset: int, line: bytes) -> Iterable[Row]:
        """Rows for one complete line (without its newline) that starts at ``offset``."""

    def state(self) -> JsonObject:
        """JSON-serialisable state; ``adapter.parser(source, state)`` resumes from it."""


class EmitError(ValueError):
    """A thread that cannot be written in the target format (for example no project folder)."""


@dataclass
class EmitResult:
    """Files an emitter wrote (relative path -> bytes) and what it dropped or changed."""

    files: dict[str, bytes] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # "reason" -> how many
    notes: list[str] = field(default_factory=list)
    resume_hint: str | None = None
    thread_id: str | None = None  # the id the target knows the session by

    def count(self, reason: str, n: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n


class Adapter:
    """Base class for a vendor module's adapter. Subclasses override what they need."""

    name: str = ""
    #: environment variables the default locations depend on (documented in the README)
    env_vars: tuple[str, ...] = ()
    #: ``Message.extra`` keys copied verbatim from the top level of the message's own JSON
    #: line; when large, the archive stores a reference and reads the value back from the
    #: stored line (``projection.LINE_REF``)
    line_backed_extra: tuple[str, ...] = ()

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []

    def classify(self, path: Path) -> str | None:
        """``LINES``/``SNAPSHOT`` if this path (by name and place) is one of ours, else None."""
        return None

    def detect(self, head: bytes) -> bool:
        """Does this first line (or first 64 KiB) look like our format? For files given by
        hand whose names say nothing."""
        return False

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

    def emit(self, thread: Any, messages: list[Message], children: list[Any] | None = None, **options: Any) -> EmitResult:
        raise NotImplementedError(f"{self.name}: emit is not implemented")


# ---------------------------------------------------------------- helpers for adapters


def nonempty_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None (vendor fields of any shape)."""
    return value if isinstance(value, str) and value else None


def stable_id(*parts: object, length: int = 32) -> str:
    """A deterministic id from parts (source id, offset, content hash...)."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass"))
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
