#!/usr/bin/env python3
"""Record the side files of Kimi CLI, Hermes Agent and Mistral Vibe (issue 38) in their
terminal UI, against the Chat Completions mock (tests/clients/side_tui.py drives them):
only the TUI writes their prompt histories.

    python scripts/record_side_files_rest.py kimi|hermes|vibe

Writes tests/fixtures/recorded/<vendor>-<version>-side/: the files of the vendor's home the
TUI left (the prompt history, the session it ran), without credentials, logs and caches
(``RECORDERS`` in side_tui.py: what is kept per vendor). Needs tmux. Invariants as
scripts/record_side_files.py: nothing outside /tmp/sesh-record-side-rest/ and the output
folder is written; the real home is never read.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients.side_tui import RECORDERS, copy_kept, record  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "recorded"
WORK = Path("/tmp/sesh-record-side-rest")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("vendor", choices=sorted(RECORDERS))
    args = ap.parse_args()
    work = WORK / args.vendor
    shutil.rmtree(work, ignore_errors=True)
    version, vendor_home, screens = record(args.vendor, work)
    for s in screens:
        print(s.rstrip(), "\n-----")
    out = OUT / f"{args.vendor}-{version}-side"
    shutil.rmtree(out, ignore_errors=True)
    copy_kept(vendor_home, out / vendor_home.relative_to(work / "home"), RECORDERS[args.vendor][1])
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
