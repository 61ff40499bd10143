"""Discovery: which files under which roots are sessions, and which adapter reads each.

A walk follows links, reports broken links and link loops, and never reads a file it can
pass over (``unchanged``); a file given by hand must be recognised by its content."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArchiveError
from ..unread import Unclaimed
from ..vendors import VENDORS
from ..vendors import get as get_adapter
from ..vendors.base import (
    RECORDS,
    SNAPSHOT,
    Adapter,
)
from .options import HEAD_BYTES, UNREADABLE_FOLDER, VANISHED
from .reader import _open_stream


@dataclass(frozen=True)
class Candidate:
    path: Path
    adapter: Adapter
    kind: str


def _walk(root: Path, problems: list[dict[str, str]]) -> Iterator[str]:
    """Paths of the files below root, following links, reporting broken links and link
    loops. Strings, not Paths: a nightly rerun walks every file, and a Path per file was a
    third of a no-op rerun."""
    seen_dirs: set[tuple[int, int]] = set()
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen_dirs:
                problems.append({"path": d, "problem": "link loop"})
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except FileNotFoundError:
            # removed since its parent was listed (a vendor's cleanup): not a failure
            problems.append({"path": d, "problem": VANISHED})
            continue
        except OSError as e:
            # the files below it are not archived: a failure, as for an unreadable file
            problems.append({"path": d, "problem": UNREADABLE_FOLDER, "detail": str(e)})
            continue
        subdirs = []
        for e in entries:
            p = e.path
            try:
                if e.is_dir(follow_symlinks=True):
                    subdirs.append(p)
                elif e.is_file(follow_symlinks=True):
                    yield p
                elif e.is_symlink():
                    problems.append({"path": p, "problem": "broken link"})
            except OSError as err:  # ELOOP on a self-referencing link
                problems.append({"path": p, "problem": "link loop", "detail": str(err)})
        stack.extend(reversed(subdirs))


def chosen_adapters(providers: Iterable[str]) -> list[Adapter]:
    providers = tuple(providers)
    if not providers:
        return list(VENDORS)
    out = []
    for name in providers:
        try:
            out.append(get_adapter(name))
        except KeyError:
            raise ArchiveError(f"unknown provider {name!r}; known: {', '.join(a.name for a in VENDORS)}")
    return out


def discover(
    paths: Iterable[str | os.PathLike[str]] | None,
    adapters: list[Adapter],
    env: Mapping[str, str],
    problems: list[dict[str, str]],
    unchanged: Callable[[str], bool] | None = None,
    unclaimed: Unclaimed | None = None,
) -> Iterator[Candidate]:
    """Candidates from explicit paths (files or folders), or from each vendor's default roots.
    A path for which ``unchanged`` says True is passed over before any work (no adapter, no
    read of its head); a file under a root that its adapter does not take goes to ``unclaimed``."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    seen: set[str] = set()

    def passed_over(path: str) -> bool:
        if path in seen:
            return True
        if unchanged is not None and unchanged(path):
            seen.add(path)
            return True
        return False

    def emit(p: Path, a: Adapter, kind: str) -> Iterator[Candidate]:
        # walks start from absolute roots, so only a path given by hand needs abspath
        key = str(p) if p.is_absolute() else os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            yield Candidate(p if p.is_absolute() else Path(key), a, kind)

    if not paths:
        for a in adapters:
            for root in [*a.default_roots(env, home), *a.side_roots(env, home)]:  # a side root may be a file
                root = Path(os.path.abspath(root))
                if not root.exists():
                    continue
                for s in _walk(root, problems) if root.is_dir() else [str(root)]:
                    if passed_over(s):
                        continue
                    p = Path(s)
                    kind = a.classify(p)
                    if kind:
                        yield from emit(p, a, kind)
                    elif unclaimed is not None:
                        unclaimed.add(a, root, s)
        return
    for given in paths:
        p = Path(os.path.abspath(given))
        if p.is_dir():
            for s in _walk(p, problems):
                if passed_over(s):
                    continue
                f = Path(s)
                picked = _pick(f, adapters, by_content_only=False)
                if picked is not None:
                    yield from emit(f, *picked)
        elif p.is_file():
            if passed_over(str(p)):
                continue
            picked = _pick(p, adapters, by_content_only=True)
            if picked is None:
                problems.append({"path": str(p), "problem": "no adapter recognises this file"})
                continue
            yield from emit(p, *picked)
        elif os.path.islink(p):
            problems.append({"path": str(p), "problem": "broken link"})
        else:
            problems.append({"path": str(p), "problem": "not found"})


def _pick(path: Path, adapters: list[Adapter], by_content_only: bool) -> tuple[Adapter, str] | None:
    """The adapter for a file outside the vendors' own folders. File names overlap between
    vendors (clm's ``<id>.jsonl`` matches a Claude ``<uuid>.jsonl``), so a name match is
    confirmed by the content; snapshots (binary companions) are taken by name alone. Failing
    that, any adapter that recognises the content; in a folder walk, the first name match
    (an empty or torn file waits its turn); a single file given by hand must be recognised."""
    claims = [(a, k) for a in adapters if (k := a.classify(path))]
    if not claims and not by_content_only and not path.name.endswith((".jsonl", ".jsonl.zst")):
        return None
    head = _head(path)
    for a, k in claims:
        if k in (SNAPSHOT, RECORDS) or (head is not None and a.detect(head)):
            return a, k
    if head:
        for a in adapters:
            if a.detect(head):
                return a, a.given_kind(path, head)
    if claims and not by_content_only:
        return claims[0]
    return None


def _head(p: Path) -> bytes | None:
    try:
        with _open_stream(p) as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return None
