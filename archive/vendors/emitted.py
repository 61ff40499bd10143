"""What an emitter writes into, and how it reads its messages once (split from ``base``, which
re-exports every name here).

Invariants:

* ``EmittedFiles`` holds a file in memory up to ``SPOOL_BYTES`` and in a temporary file past
  that; emitters write one file at a time, so a long session is never held whole.
* ``MessageStream`` reads an iterable of messages once, whatever the emitter looks ahead at.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import IO, Any

from ..model import Message


class EmittedFiles(MutableMapping[str, bytes]):
    """Relative path -> the file's bytes, written as they are produced: ``open(rel)`` gives a
    file an emitter writes line by line, kept in memory up to ``SPOOL_BYTES`` and in a
    temporary file past that, so emitting a 600 MB session holds a few MB (README
    benchmarks). Emitters write one file at a time: opening the next one finishes the one
    before, which then moves to one shared temporary file once the finished files held in
    memory pass ``SPOOL_BYTES`` (a Claude Code session emitted with 1,229 subagents, 2,459 files,
    holds neither them all in memory nor all open). ``chunks(rel)`` reads a file back in pieces;
    ``files[rel]`` joins them (for small files and tests). ``files[rel] = data`` stores
    bytes as they are."""

    SPOOL_BYTES = 8 << 20
    CHUNK = 1 << 20

    def __init__(self) -> None:
        # each file is a list of parts: bytes, a spooled file, a function giving chunks, or
        # (offset, length) in the shared temporary file
        self._parts: dict[str, list[Any]] = {}
        self._open: tuple[str, Any] | None = None
        self._held = 0  # bytes of finished files kept in memory
        self._heap: Any = None

    def open(self, rel: str) -> IO[bytes]:
        """A new file to write; the file opened before is finished (writing to it fails)."""
        self._finish()
        spool = tempfile.SpooledTemporaryFile(max_size=self.SPOOL_BYTES)
        self._parts[rel] = [spool]
        self._open = (rel, spool)
        return spool  # type: ignore[return-value]

    def _finish(self) -> None:
        if self._open is None:
            return
        rel, spool = self._open
        self._open = None
        size = spool.tell()
        if size > self.SPOOL_BYTES or self._parts.get(rel, [None])[-1] is not spool:
            return  # on disk already (SpooledTemporaryFile rolled over), or replaced
        if self._held + size <= self.SPOOL_BYTES:
            self._held += size
            return
        if self._heap is None:
            self._heap = tempfile.TemporaryFile()
        offset = self._heap.seek(0, 2)
        spool.seek(0)
        while chunk := spool.read(self.CHUNK):
            self._heap.write(chunk)
        spool.close()
        self._parts[rel][-1] = (offset, size)

    def prepend(self, rel: str, data: bytes) -> None:
        """Put ``data`` before what the file holds (a header known only at the end)."""
        self._parts[rel].insert(0, bytes(data))

    def set_chunks(self, rel: str, chunks: Callable[[], Iterable[bytes]]) -> None:
        """A file whose bytes ``chunks()`` gives when read (a stored file, reassembled)."""
        self._parts[rel] = [chunks]

    def move(self, rel: str, new: str) -> None:
        """Rename (moving every file in turn keeps their order)."""
        self._parts[new] = self._parts.pop(rel)

    def map_lines(self, rel: str, fn: Callable[[bytes], bytes]) -> None:
        """Replace the file by ``fn`` applied to each of its lines (newline included), read
        as they are copied out: a transform on the way out (redaction) holds one line."""
        self._finish()
        parts = self._parts[rel]

        def mapped() -> Iterator[bytes]:
            rest = b""
            for chunk in self._chunks_of(rel, parts):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    yield fn(line + b"\n")
            if rest:
                yield fn(rest)

        self._parts[rel] = [mapped]

    def chunks(self, rel: str) -> Iterator[bytes]:
        return self._chunks_of(rel, self._parts[rel])

    def _chunks_of(self, rel: str, parts: list[Any]) -> Iterator[bytes]:
        for part in parts:
            if isinstance(part, bytes):
                yield part
            elif callable(part):
                yield from part()
            elif isinstance(part, tuple):
                offset, size = part
                while size > 0:
                    self._heap.seek(offset)
                    chunk = self._heap.read(min(self.CHUNK, size))
                    if not chunk:
                        raise OSError(f"emitted file {rel}: temporary file truncated")
                    offset, size = offset + len(chunk), size - len(chunk)
                    yield chunk
            else:
                part.seek(0)
                while chunk := part.read(self.CHUNK):
                    yield chunk

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self._parts:
            raise KeyError(rel)
        return b"".join(self.chunks(rel))

    def __setitem__(self, rel: str, data: bytes) -> None:
        self._parts[rel] = [bytes(data)]

    def __delitem__(self, rel: str) -> None:
        del self._parts[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __repr__(self) -> str:
        return f"EmittedFiles({sorted(self._parts)})"


def file_chunks(files: Mapping[str, bytes], rel: str) -> Iterator[bytes]:
    """A file's bytes in pieces, from ``EmittedFiles`` or a plain dict."""
    if isinstance(files, EmittedFiles):
        yield from files.chunks(rel)
    else:
        yield files[rel]


class _Reread:
    """``fn(source)`` afresh on every iteration."""

    def __init__(self, fn: Callable[[Iterable[Message]], Iterator[Message]], source: Iterable[Message]) -> None:
        self.fn, self.source = fn, source

    def __iter__(self) -> Iterator[Message]:
        return self.fn(self.source)


class MessageStream:
    """A thread's messages for an emitter that reads them once, in order, and may look ahead
    for a first value (the first timestamp, the first model) or scan them all before
    writing (tool names by call id). A source that can be iterated again (a list, the
    archive's pages) is scanned in a pass of its own, so nothing is held; a one-pass
    iterator (a generator) keeps what a look-ahead read until the main pass reaches it."""

    def __init__(self, messages: Iterable[Message]) -> None:
        self._source = messages
        self._again = iter(messages) is not messages
        self._it: Iterator[Message] | None = None
        self._ahead: deque[Message] = deque()

    @classmethod
    def of(cls, messages: Iterable[Message]) -> MessageStream:
        return messages if isinstance(messages, MessageStream) else cls(messages)

    def through(self, fn: Callable[[Iterable[Message]], Iterator[Message]]) -> MessageStream:
        """The stream of ``fn(messages)``, a transform that reads them once and in order
        (a reordering, a redaction); readable again when this one is, so its look-aheads
        still hold nothing. A one-pass stream is read through what it already holds."""
        if self._again:
            return MessageStream(_Reread(fn, self._source))
        return MessageStream(fn(self))

    def _scan(self) -> Iterator[Message]:
        if self._again:
            yield from self._source
            return
        yield from list(self._ahead)
        if self._it is None:
            self._it = iter(self._source)
        for m in self._it:
            self._ahead.append(m)
            yield m

    def first(self, fn: Callable[[Message], Any]) -> Any:
        """The first ``fn(m)`` that is not None, or None."""
        return next((v for v in map(fn, self._scan()) if v is not None), None)

    def scan(self) -> Iterator[Message]:
        """Every message, before the main pass (each one is kept when the source is one-pass)."""
        return self._scan()

    def __iter__(self) -> Iterator[Message]:
        if self._again:
            yield from self._source
            return
        if self._it is None:
            self._it = iter(self._source)
        while True:
            if self._ahead:
                yield self._ahead.popleft()
                continue
            m = next(self._it, None)
            if m is None:
                return
            yield m
