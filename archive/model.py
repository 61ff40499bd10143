"""Canonical, provider-neutral conversation model (seed: canonical-message-format.md, v1).

Invariants:

* Pure values. Identity, hashing and storage live in the store and ingest layers.
* ``to_dict``/``from_dict`` use the seed's camelCase JSON names exactly and put ``v: 1``
  on every thread and message, so a JSONL file of ``to_dict`` output is the seed format.
* ``from_dict(to_dict(x)) == x`` for every value, and ``to_dict(from_dict(d)) == d`` for
  every dict this module writes.
* Lossless escape hatch: keys a record carries beyond the seed's fields are kept in
  ``extra`` and written back unchanged (for example a Claude thinking ``signature``).
* Forward compatible: a block whose ``type`` this version does not know becomes an
  :class:`Unknown` block holding the raw JSON; it never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

SCHEMA_VERSION = 1

JsonValue = Any
JsonObject = dict[str, Any]

ROLES = ("user", "assistant", "system", "tool")


class ModelError(ValueError):
    """A dict that cannot become a canonical record (missing required field, wrong version)."""


def _split(d: JsonObject, known: set[str]) -> JsonObject:
    return {k: v for k, v in d.items() if k not in known}


def _drop_none(d: JsonObject) -> JsonObject:
    return {k: v for k, v in d.items() if v is not None}


# ---------------------------------------------------------------- blocks


@dataclass(frozen=True)
class _Block:
    """Base of the block variants. ``extra`` keeps keys outside the seed's fields."""

    TYPE: ClassVar[str] = ""
    # seed field name -> python attribute name, in output order
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = ()
    REQUIRED: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"type": self.TYPE}
        for json_name, attr in self.FIELDS:
            value = getattr(self, attr)
            if value is not None:
                out[json_name] = value
        extra = getattr(self, "extra", None)
        if extra:
            for k, v in extra.items():
                out.setdefault(k, v)
        return out

    @classmethod
    def _from_dict(cls, d: JsonObject) -> "Block":
        missing = [name for name in cls.REQUIRED if name not in d]
        if missing:
            return Unknown(source_type=str(d.get("type")), raw=d)
        known = {"type"} | {json_name for json_name, _ in cls.FIELDS}
        kwargs = {attr: d.get(json_name) for json_name, attr in cls.FIELDS}
        extra = _split(d, known)
        return cls(**kwargs, extra=extra or None)  # type: ignore[call-arg]


@dataclass(frozen=True)
class Text(_Block):
    text: str = ""
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "text"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (("text", "text"),)
    REQUIRED: ClassVar[tuple[str, ...]] = ("text",)


@dataclass(frozen=True)
class Reasoning(_Block):
    text: str | None = None
    redacted: bool | None = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "reasoning"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (("text", "text"), ("redacted", "redacted"))


@dataclass(frozen=True)
class ToolCall(_Block):
    call_id: str = ""
    name: str = ""
    input: JsonValue = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "tool_call"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("callId", "call_id"),
        ("name", "name"),
        ("input", "input"),
    )
    REQUIRED: ClassVar[tuple[str, ...]] = ("callId", "name")

    def to_dict(self) -> JsonObject:
        out = super().to_dict()
        out.setdefault("input", None)  # the seed makes input required, null allowed
        return out


@dataclass(frozen=True)
class ToolResult(_Block):
    call_id: str = ""
    output: JsonValue = None
    is_error: bool | None = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "tool_result"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("callId", "call_id"),
        ("output", "output"),
        ("isError", "is_error"),
    )
    REQUIRED: ClassVar[tuple[str, ...]] = ("callId",)

    def to_dict(self) -> JsonObject:
        out = super().to_dict()
        out.setdefault("output", None)
        return out


@dataclass(frozen=True)
class FileChange(_Block):
    call_id: str | None = None
    path: str | None = None
    patch: str | None = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "file_change"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("callId", "call_id"),
        ("path", "path"),
        ("patch", "patch"),
    )


@dataclass(frozen=True)
class WebSearch(_Block):
    call_id: str | None = None
    query: str = ""
    results: JsonValue = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "web_search"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("callId", "call_id"),
        ("query", "query"),
        ("results", "results"),
    )
    REQUIRED: ClassVar[tuple[str, ...]] = ("query",)


@dataclass(frozen=True)
class Attachment(_Block):
    media_type: str | None = None
    uri: str | None = None
    data: str | None = None  # base64, as in the seed
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "attachment"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("mediaType", "media_type"),
        ("uri", "uri"),
        ("data", "data"),
    )


@dataclass(frozen=True)
class Unknown(_Block):
    source_type: str = ""
    raw: JsonValue = None
    extra: JsonObject | None = None
    TYPE: ClassVar[str] = "unknown"
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (("sourceType", "source_type"), ("raw", "raw"))

    def to_dict(self) -> JsonObject:
        out = super().to_dict()
        out.setdefault("raw", None)
        return out

    @classmethod
    def _from_dict(cls, d: JsonObject) -> "Block":
        extra = _split(d, {"type", "sourceType", "raw"})
        return cls(source_type=str(d.get("sourceType", "")), raw=d.get("raw"), extra=extra or None)


Block = Union[Text, Reasoning, ToolCall, ToolResult, FileChange, WebSearch, Attachment, Unknown]

BLOCK_TYPES: dict[str, type[_Block]] = {
    cls.TYPE: cls
    for cls in (Text, Reasoning, ToolCall, ToolResult, FileChange, WebSearch, Attachment, Unknown)
}


def block_from_dict(d: JsonValue) -> Block:
    """Build a block; anything this version does not understand becomes ``Unknown``."""
    if not isinstance(d, dict):
        return Unknown(source_type=type(d).__name__, raw=d)
    cls = BLOCK_TYPES.get(d.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return Unknown(source_type=str(d.get("type")), raw=d)
    return cls._from_dict(d)  # type: ignore[return-value]


def block_to_dict(b: Block) -> JsonObject:
    return b.to_dict()


# ---------------------------------------------------------------- usage, provenance


@dataclass(frozen=True)
class Usage:
    """Token counts of one model response. Cache reads/writes are part of ``input_tokens``
    only if the vendor counts them so; adapters document which (see each vendor module)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    extra: JsonObject | None = None

    _NAMES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("inputTokens", "input_tokens"),
        ("outputTokens", "output_tokens"),
        ("cacheReadTokens", "cache_read_tokens"),
        ("cacheWriteTokens", "cache_write_tokens"),
        ("reasoningTokens", "reasoning_tokens"),
    )

    def to_dict(self) -> JsonObject:
        out = {j: getattr(self, a) for j, a in self._NAMES if getattr(self, a) is not None}
        if self.extra:
            for k, v in self.extra.items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_dict(cls, d: JsonObject) -> "Usage":
        extra = _split(d, {j for j, _ in cls._NAMES})
        return cls(**{a: d.get(j) for j, a in cls._NAMES}, extra=extra or None)


@dataclass(frozen=True)
class Provenance:
    provider: str
    channel: str = "session-file"
    session_id: str | None = None
    source_id: str | None = None
    sidechain: bool | None = None
    extra: JsonObject | None = None

    _NAMES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("provider", "provider"),
        ("channel", "channel"),
        ("sessionId", "session_id"),
        ("sourceId", "source_id"),
        ("sidechain", "sidechain"),
    )

    def to_dict(self) -> JsonObject:
        out = {j: getattr(self, a) for j, a in self._NAMES if getattr(self, a) is not None}
        if self.extra:
            for k, v in self.extra.items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_dict(cls, d: JsonObject) -> "Provenance":
        if "provider" not in d:
            raise ModelError("provenance needs a provider")
        extra = _split(d, {j for j, _ in cls._NAMES})
        kwargs = {a: d.get(j) for j, a in cls._NAMES}
        if kwargs["channel"] is None:
            kwargs["channel"] = "session-file"
        return cls(**kwargs, extra=extra or None)


# ---------------------------------------------------------------- thread, message


def _check_version(d: JsonObject, what: str) -> None:
    v = d.get("v", SCHEMA_VERSION)
    if v != SCHEMA_VERSION:
        raise ModelError(f"{what} has schema version {v!r}; this version reads v{SCHEMA_VERSION}")


@dataclass(frozen=True)
class Thread:
    id: str
    created_at: str
    agent_id: str | None = None
    parent_thread_id: str | None = None
    origin_message_id: str | None = None
    title: str | None = None
    metadata: JsonObject | None = None
    extra: JsonObject | None = None
    v: int = SCHEMA_VERSION

    _NAMES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("v", "v"),
        ("id", "id"),
        ("agentId", "agent_id"),
        ("parentThreadId", "parent_thread_id"),
        ("originMessageId", "origin_message_id"),
        ("title", "title"),
        ("createdAt", "created_at"),
        ("metadata", "metadata"),
    )

    def to_dict(self) -> JsonObject:
        out = {j: getattr(self, a) for j, a in self._NAMES if getattr(self, a) is not None}
        if self.extra:
            for k, v in self.extra.items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_dict(cls, d: JsonObject) -> "Thread":
        _check_version(d, "thread")
        if "id" not in d:
            raise ModelError("thread needs an id")
        extra = _split(d, {j for j, _ in cls._NAMES})
        kwargs = {a: d.get(j) for j, a in cls._NAMES if j != "v"}
        if kwargs["created_at"] is None:
            raise ModelError(f"thread {d['id']!r} needs createdAt")
        return cls(**kwargs, extra=extra or None)


@dataclass(frozen=True)
class Message:
    id: str
    thread_id: str
    role: str
    ts: str | None
    content: tuple[Block, ...] = field(default_factory=tuple)
    turn_id: str | None = None
    parent_id: str | None = None
    run_id: str | None = None
    usage: Usage | None = None
    provenance: Provenance | None = None
    raw: JsonValue = None
    extra: JsonObject | None = None
    v: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.content, tuple):
            object.__setattr__(self, "content", tuple(self.content))

    _NAMES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("v", "v"),
        ("id", "id"),
        ("threadId", "thread_id"),
        ("turnId", "turn_id"),
        ("parentId", "parent_id"),
        ("role", "role"),
        ("ts", "ts"),
        ("runId", "run_id"),
    )

    def to_dict(self) -> JsonObject:
        out = {j: getattr(self, a) for j, a in self._NAMES if getattr(self, a) is not None}
        # ts is required by the seed; vendors without message times (clm) write null
        out.setdefault("ts", None)
        out["content"] = [b.to_dict() for b in self.content]
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.provenance is not None:
            out["provenance"] = self.provenance.to_dict()
        if self.raw is not None:
            out["raw"] = self.raw
        if self.extra:
            for k, v in self.extra.items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_dict(cls, d: JsonObject) -> "Message":
        _check_version(d, "message")
        for name in ("id", "threadId", "role"):
            if name not in d:
                raise ModelError(f"message needs {name}")
        extra = _split(d, {j for j, _ in cls._NAMES} | {"content", "usage", "provenance", "raw"})
        kwargs = {a: d.get(j) for j, a in cls._NAMES if j != "v"}
        content = d.get("content") or []
        if isinstance(content, str):  # lenient: a bare string is one text block
            content = [{"type": "text", "text": content}]
        usage = d.get("usage")
        prov = d.get("provenance")
        return cls(
            **kwargs,
            content=tuple(block_from_dict(b) for b in content),
            usage=Usage.from_dict(usage) if isinstance(usage, dict) else None,
            provenance=Provenance.from_dict(prov) if isinstance(prov, dict) else None,
            raw=d.get("raw"),
            extra=extra or None,
        )


def replace(obj: Any, **changes: Any) -> Any:
    """dataclasses.replace, re-exported so callers need not import dataclasses."""
    from dataclasses import replace as _replace

    return _replace(obj, **changes)


__all__ = [
    "Attachment",
    "BLOCK_TYPES",
    "Block",
    "FileChange",
    "Message",
    "ModelError",
    "Provenance",
    "ROLES",
    "Reasoning",
    "SCHEMA_VERSION",
    "Text",
    "Thread",
    "ToolCall",
    "ToolResult",
    "Unknown",
    "Usage",
    "WebSearch",
    "block_from_dict",
    "block_to_dict",
]


def page_messages(messages: list[Message], after_id: str | None, limit: int | None) -> list[Message]:
    """The messages after ``after_id`` (none when it is not among them), at most ``limit``: the
    paging every ``MessageStore`` offers."""
    if after_id is not None:
        idx = next((i for i, m in enumerate(messages) if m.id == after_id), None)
        if idx is None:
            return []
        messages = messages[idx + 1 :]
    if limit is not None:
        messages = messages[: max(limit, 0)]
    return messages
