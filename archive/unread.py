"""Nothing passed over in silence: folders of sessions the archive does not read.

Before issue 33 a home holding only sessions of vendors without an adapter (or a layout of a
supported vendor that no ``classify`` takes) gave "0 files seen" and nothing more.

Invariants:

* A run over the default locations names every folder that holds sessions and is not read,
  with the vendor, the path and how many files: the folders of known vendors without an
  adapter (``archive/vendors/layouts.py``), and, under a supported vendor's roots, files
  that look like sessions (``SESSION_SUFFIXES``) that no ``classify`` takes (a newer or
  older release's layout), grouped by the first folder below the root.
* Nothing here names a vendor: the layouts and each adapter's ``not_sessions`` say it.
* It only reads folder listings, never file contents; it costs a walk of the unread roots
  (the supported roots are walked by discovery anyway, which hands over what it passed).
* The list is the run's (``Summary.unread``, kept in ``ingest_runs.problems``), so
  ``status`` shows the last ingest's without walking the disk.
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .vendors.base import Adapter
from .vendors.layouts import unread_layouts

# files that may be sessions; a vendor's other files (settings, logs, binaries) are not
SESSION_SUFFIXES = (".jsonl", ".json", ".jsonl.zst", ".json.zst", ".db", ".sqlite", ".sqlite3")
NO_READER = "no reader for this vendor yet"
UNKNOWN_LAYOUT = "files no reader takes (a release's layout the archive does not know)"


@dataclass
class Unclaimed:
    """Files under a supported vendor's root that its ``classify`` did not take."""

    paths: dict[str, tuple[str, str]] = field(default_factory=dict)  # file -> (vendor, folder)

    def add(self, adapter: Adapter, root: Path, path: str) -> None:
        if not path.endswith(SESSION_SUFFIXES):
            return
        rel = os.path.relpath(path, root)
        if any(fnmatch.fnmatch(rel, pattern) for pattern in adapter.not_sessions):
            return
        top = rel.split(os.sep, 1)
        self.paths.setdefault(path, (adapter.name, str(root / top[0]) if len(top) > 1 else str(root)))

    def discard(self, path: str) -> None:
        """A file another adapter (whose root overlaps) did take."""
        self.paths.pop(path, None)

    def entries(self) -> list[dict[str, Any]]:
        counts = Counter(self.paths.values())
        return [{"vendor": v, "path": p, "files": n, "reason": UNKNOWN_LAYOUT} for (v, p), n in sorted(counts.items())]


def unread_vendors(env: Mapping[str, str], home: Path, registered: set[str]) -> list[dict[str, Any]]:
    """The known vendors' folders without an adapter that hold sessions."""
    out = []
    for layout in unread_layouts(registered):
        seen: set[str] = set()
        for root in layout.roots(env, home):
            root = Path(os.path.abspath(root))
            if str(root) in seen or not root.is_dir():
                continue
            seen.add(str(root))
            files = {str(p) for pattern in layout.patterns for p in root.glob(pattern) if p.is_file()}
            if files:
                out.append({"vendor": layout.name, "path": str(root), "files": len(files), "reason": NO_READER})
    return out


def describe(entry: Mapping[str, Any]) -> str:
    n = entry["files"]
    return f"{entry['vendor']}: {entry['path']} ({n:,} file{'' if n == 1 else 's'}): {entry['reason']}"


def find_unread(env: Mapping[str, str], unclaimed: Unclaimed, claimed: set[str]) -> list[dict[str, Any]]:
    """The unread folders of a run over every vendor's default locations: known vendors
    without an adapter, then what discovery passed over under the supported roots, less the
    files some adapter did take."""
    from .vendors import VENDORS

    home = Path(env.get("HOME") or os.path.expanduser("~"))
    for path in claimed:
        unclaimed.discard(path)
    return unread_vendors(env, home, {a.name for a in VENDORS}) + unclaimed.entries()
