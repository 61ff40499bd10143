"""Canonical JSONL: the seed's Thread and Message records, one per line.

This is the interchange format of ``JsonlMessageStore`` and of ``emit --to canonical``;
ingest reads it back. A line is a thread record (has ``createdAt``, no ``role``) or a
message record (has ``threadId`` and ``role``). Ids are taken as written: a canonical
file re-ingested next to the vendor file it came from stores nothing twice.

Invariants: stateless parser (every line stands alone), so resuming is trivial; a later
thread record for the same id overwrites the earlier one's fields (ingest folds facts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, ModelError, Thread
from ..base import (
    response_row,
    EmitOptions,
    INVALID,
    PARSE_ERROR,
    Adapter,
    EmitResult,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
)

NAME = "canonical"


def thread_fact(thread: Thread) -> ThreadFact:
    fields = thread.to_dict()
    fields.pop("id")
    fields.pop("v", None)
    return ThreadFact(thread.id, fields)


class CanonicalParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            yield from ()
            return
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            yield _report(PARSE_ERROR, "invalid JSON", str(e))
            return
        if not isinstance(d, dict):
            yield _report(PARSE_ERROR, "not a JSON object")
            return
        try:
            if "role" in d and "threadId" in d:
                msg = Message.from_dict(d)
                yield MessageRow(msg)
                usage = response_row(msg)
                if usage is not None:
                    yield usage
            elif "createdAt" in d and "id" in d:
                yield thread_fact(Thread.from_dict(d))
            else:
                yield _report(INVALID, "neither a thread nor a message record")
        except ModelError as e:
            yield _report(INVALID, "not a canonical record", str(e))


def _report(kind: str, reason: str, detail: str | None = None) -> Row:
    return Report(kind, reason, detail)


class CanonicalAdapter(Adapter):
    name = NAME
    emits = True

    def classify(self, path: Path) -> str | None:
        return None  # canonical files are only ingested when named explicitly

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return isinstance(d, dict) and d.get("v") == 1 and ("createdAt" in d or "threadId" in d)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> CanonicalParser:
        return CanonicalParser(source, state)

    def emit(self, thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, Iterable[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        """One file: the thread, its messages, then each child thread and its messages."""
        result = EmitResult(thread_id=thread.id)
        out = result.files.open(f"{thread.id}.jsonl")
        for t, ms in [(thread, messages), *children]:
            out.write(orjson.dumps(t.to_dict()) + b"\n")
            for m in ms:
                out.write(orjson.dumps(m.to_dict()) + b"\n")
        return result


ADAPTER = CanonicalAdapter()
